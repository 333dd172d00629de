package fakesdk

// The environment a test stages: the master killed, restarted or frozen,
// and the segment's owner frozen.

// KillMaster kills the master: it forgets everything, and metadata calls
// fail until RestartMaster.
func (m *Master) KillMaster() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down, m.frozen, m.atThaw = true, false, nil
	m.epoch++
	m.cond.Broadcast()
}

// RestartMaster starts a killed master again: it holds no object and no
// session; the segments' owners mount them again after Knobs.Remount, and
// the bytes in them stay.
func (m *Master) RestartMaster() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down, m.frozen = false, false
	m.objects, m.sessions = map[string]*object{}, map[string]session{}
	m.free, m.top, m.used, m.discards = nil, 0, 0, nil
	m.remountAt = m.now.Add(m.knobs.Remount)
	m.cond.Broadcast()
}

// FreezeMaster stops the master (SIGSTOP): requests wait, and time out
// after Knobs.RPCTimeout; ThawMaster applies them.
func (m *Master) FreezeMaster() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.frozen = true
}

// ThawMaster resumes a frozen master: it applies the requests it received
// while frozen, in order, whether or not their callers still wait.
func (m *Master) ThawMaster() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.frozen = false
	q := m.atThaw
	m.atThaw = nil
	for _, f := range q {
		f()
	}
	m.cond.Broadcast()
	m.settleLocked()
}

// FreezePeer stops the process whose segment holds the pool (SetOwner).
func (m *Master) FreezePeer() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.peerFroze, m.frozeAt = true, m.now
}

// ThawPeer resumes it: transfers it held go on.
func (m *Master) ThawPeer() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.peerFroze = false
	q := m.atPeer
	m.atPeer = nil
	for _, f := range q {
		f()
	}
	m.cond.Broadcast()
	m.settleLocked()
}

// KillPeer kills the process whose segment holds the pool (SIGKILL): what
// it had not yet applied never lands, a get of an object in its segment
// answers TRANSFER_FAIL at once, and after Knobs.ClientTTL the master
// expires it and unmounts its segment (its objects are gone) (real,
// docs/mooncake-sdk.md, "Later runs": TRANSFER_FAIL in 1-4 ms until ~10 s, then
// OBJECT_NOT_FOUND). A scatter into its segment is not modelled: it lands
// as if the owner were alive.
func (m *Master) KillPeer() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.peerDead, m.peerFroze, m.diedAt = true, false, m.now
	m.atPeer = nil
	m.cond.Broadcast()
	m.settleLocked()
}

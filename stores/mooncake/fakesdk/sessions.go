package fakesdk

// Put sessions: start, end and revoke, the master's side of each and the
// client's own session bookkeeping.

// BatchPutSessionStart starts a session per key. The client refuses, before
// the master is asked, an empty key, a size under 1 and a key it holds a
// session for, however old (probe rows b3, b6).
func (c *Client) BatchPutSessionStart(keys []string, sizes []int64) ([]int64, error) {
	return c.metadataCall(CallStart, keys, sizes)
}

// startLocked is the master's side of a start.
func (m *Master) startLocked(owner int, key string, size int64) (int64, span) {
	if _, ok := m.objects[key]; ok {
		return codeAlreadyExists, span{}
	}
	if s, ok := m.sessions[key]; ok {
		if m.now.Sub(s.started) < m.knobs.Discard {
			return codeAlreadyExists, span{}
		}
		// Discarded: its space is kept until put_start_release_timeout.
		m.discards = append(m.discards, discarded{span: s.span, at: m.now})
		delete(m.sessions, key)
	}
	if m.unmounted || m.now.Before(m.remountAt) {
		return codeNoAvailableHandle, span{}
	}
	s, ok := m.allocLocked(size)
	if !ok {
		m.needEviction = true // the master's need_mem_eviction_: its eviction thread runs as time passes
		return codeNoAvailableHandle, span{}
	}
	m.sessions[key] = session{owner: owner, started: m.now, span: s}
	return codeOK, s
}

// BatchPutSessionEnd marks each key's object complete. A key the client
// holds no session for is refused locally (c1, c4); the master refuses a
// session another client took over (g1), answers OK for an object already
// complete (a second end after a late one, h11-15) and OBJECT_NOT_FOUND for
// a key it does not know (after a restart). The client forgets its session
// only on OK.
func (c *Client) BatchPutSessionEnd(keys []string) ([]int64, error) {
	return c.metadataCall(CallEnd, keys, nil)
}

func (m *Master) endLocked(owner int, key string) int64 {
	if s, ok := m.sessions[key]; ok {
		if s.owner != owner {
			return codeIllegalClient
		}
		delete(m.sessions, key)
		m.objects[key] = m.newObjectLocked(s.span)
		return codeOK
	}
	if _, ok := m.objects[key]; ok {
		return codeOK
	}
	return codeObjectNotFound
}

// BatchPutSessionRevoke frees each key's session. A key the client holds no
// session for is refused locally (c2, c5, h5); the master refuses a session
// another client took over (g1) and an object already complete
// (INVALID_WRITE, h11-15), and answers OK for a key it does not know.
func (c *Client) BatchPutSessionRevoke(keys []string) ([]int64, error) {
	return c.metadataCall(CallRevoke, keys, nil)
}

func (m *Master) revokeLocked(owner int, key string) int64 {
	if s, ok := m.sessions[key]; ok {
		if s.owner != owner {
			return codeIllegalClient
		}
		m.freeLocked(s.span)
		delete(m.sessions, key)
		return codeOK
	}
	if _, ok := m.objects[key]; ok {
		return codeInvalidWrite
	}
	return codeOK
}

func (c *Client) noLocalSession(k string) (int64, bool) {
	if _, ok := c.local[k]; !ok {
		return codeInvalidParams, true
	}
	return 0, false
}

// sealLocalSession is an end's local check: a key with no local session is
// refused; one with a session is sealed before the master is asked, so a
// scatter after it is refused whatever the master answers (m-master-killed:
// an end that failed RPC_FAIL, then a scatter INVALID_PARAMS).
func (c *Client) sealLocalSession(k string) (int64, bool) {
	if code, refused := c.noLocalSession(k); refused {
		return code, true
	}
	c.sealed[k] = true
	return 0, false
}

func (c *Client) forgetOnOK(k string, code int64) {
	if code == codeOK {
		delete(c.local, k)
		delete(c.sealed, k)
	}
}

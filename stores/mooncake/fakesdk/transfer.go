package fakesdk

// Transfers: the scatter into a session and the get into the caller's
// memory, moving real bytes between them and the segment.

import (
	"time"
	"unsafe"

	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/stores/mooncake"
)

// peerStallsLocked reports whether a transfer between c and the pool's
// segment waits on a frozen owner.
func (c *Client) peerStallsLocked() bool {
	return c.m.peerFroze && c.m.owner != 0 && c.m.owner != c.id
}

// BatchPutFromMultiBufferRanges writes each key's buffers, in order, into
// the space of the client's own session: without asking the master, so it
// works while the master is down. No session: INVALID_PARAMS; more bytes
// than the session's size: INVALID_PARAMS with nothing written (d2). Into a
// frozen owner, a scatter that fits the socket window waits for its ack
// under the status timeout and answers TRANSFER_FAIL, its bytes applied
// when the owner thaws; a larger one blocks until the thaw, then succeeds.
func (c *Client) BatchPutFromMultiBufferRanges(keys []string, buffers [][]mooncake.Buffer) ([]int64, error) {
	m := c.m
	m.enter(CallScatter, keys)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.raiseLocked(CallScatter, keys); err != nil {
		return nil, err
	}
	out := make([]int64, len(keys))
	sc := m.scratchLocked()
	defer m.spareLocked(sc)
	writes, flat := sc.writes[:0], sc.slices[:0] // flat: every write's sources, back to back
	var pending int64
	for i, k := range keys {
		f, staged := m.takeLocked(CallScatter, k)
		s, ok := c.local[k]
		if !ok || c.sealed[k] {
			out[i] = codeInvalidParams
			continue
		}
		if staged && !f.short && !f.write {
			out[i] = int64(f.code)
			continue
		}
		at := len(flat)
		var n int64
		for _, b := range buffers[i] {
			src := memory(b)
			if src == nil {
				n = -1
				break
			}
			if staged && f.short {
				src = src[:len(src)/2]
			}
			flat = append(flat, src)
			n += int64(len(src))
		}
		if n < 0 || n > s.size {
			out[i] = codeInvalidParams // refused whole: nothing written
			flat = flat[:at]
			continue
		}
		out[i] = n
		if staged && f.write {
			out[i] = int64(f.code)
		}
		writes = append(writes, write{i, span{s.off, n}, flat[at:len(flat):len(flat)]})
		pending += n
	}
	sc.writes, sc.slices = writes, flat
	switch {
	case len(writes) > 0 && m.fixed && !c.peerStallsLocked():
		pinned, dsts := driverkit.Resize(sc.spans, len(writes)), driverkit.Resize(sc.dsts, len(writes))
		sc.spans, sc.dsts = pinned, dsts
		for wi, w := range writes {
			pinned[wi], dsts[wi] = w.dst, m.bytesLocked(w.dst)
		}
		m.copyUnlocked(pinned, func() {
			for wi, w := range writes {
				dst := dsts[wi]
				for _, src := range w.srcs {
					dst = dst[copy(dst, src):]
				}
			}
		})
	case len(writes) == 0 || !c.peerStallsLocked():
		for _, w := range writes {
			m.writeLocked(w)
		}
	case pending <= m.knobs.SocketWindow:
		// Sent whole into the socket; the source is not read again.
		for wi := range writes {
			sent := make([][]byte, len(writes[wi].srcs))
			for j, src := range writes[wi].srcs {
				sent[j] = append([]byte(nil), src...)
			}
			writes[wi].srcs = sent
		}
		thawed := m.waitLocked(m.now.Add(m.knobs.StatusTimeout), func() bool { return !m.peerFroze })
		for _, w := range writes {
			if thawed {
				m.writeLocked(w)
				continue
			}
			out[w.i] = codeTransferFail
			m.atPeer = append(m.atPeer, func() { m.writeLocked(w) })
		}
	default:
		// The sender blocks on a full socket; the put wait has no timeout.
		m.waitLocked(time.Time{}, func() bool { return !m.peerFroze })
		for _, w := range writes {
			m.writeLocked(w)
		}
	}
	return m.finishLocked(CallScatter, keys, out)
}

// write is one key's scatter: its sources, in order, into span dst of the
// segment.
type write struct {
	i    int // the key's index
	dst  span
	srcs [][]byte
}

// writeLocked lands w in the segment.
func (m *Master) writeLocked(w write) {
	dst := m.bytesLocked(w.dst)
	for _, src := range w.srcs {
		dst = dst[copy(dst, src):]
	}
}

// BatchGetInto reads each key's object into the head of its buffer. The
// master's lookup fails at once while it is down; an object longer than its
// buffer is refused before any transfer. From a frozen owner the transfer
// waits for the thaw, the status timeout or the fixed transfer wait,
// whichever comes first: TRANSFER_FAIL with nothing written, and, when the
// transfer wait fired first, the bytes land when the owner thaws, after the
// call returned. A transfer that outlived its lease answers LEASE_EXPIRED
// with the bytes written.
func (c *Client) BatchGetInto(keys []string, buffers []mooncake.Buffer) ([]int64, error) {
	m := c.m
	m.enter(CallGet, keys)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.raiseLocked(CallGet, keys); err != nil {
		return nil, err
	}
	out := make([]int64, len(keys))
	sc := m.scratchLocked()
	defer m.spareLocked(sc)
	staged := driverkit.Resize(sc.faults, len(keys)) // read only for the asked keys, each set here
	ask := sc.ask[:0]
	for i, k := range keys {
		f, ok := m.takeLocked(CallGet, k)
		if ok && !f.write {
			out[i] = int64(f.code)
			continue
		}
		staged[i] = f
		ask = append(ask, i)
	}
	sc.faults, sc.ask = staged, ask
	found := driverkit.Resize(sc.found, len(ask)) // each asked key's object, nil for none
	lookup := driverkit.Resize(sc.codes, len(ask))
	sc.found, sc.codes = found, lookup
	clear(found)
	clear(lookup)
	if fail, reached := m.reachLocked(rpcLookup); !reached {
		for j := range lookup {
			lookup[j] = fail
		}
		if fail == codeRPCTimeout {
			m.atThaw = append(m.atThaw, m.lookupAtThaw(keys, ask))
		}
	} else {
		for j, i := range ask {
			found[j], lookup[j] = m.lookupLocked(keys[i])
		}
	}
	reads := sc.reads[:0]
	for j, i := range ask {
		switch {
		case lookup[j] != 0 || found[j] == nil:
			out[i] = lookup[j]
		case found[j].size > buffers[i].Len:
			out[i] = codeInvalidParams // refused before any transfer
		default:
			reads = append(reads, read{i: i, obj: found[j], dst: memory(buffers[i])})
		}
	}
	sc.reads = reads
	for _, r := range reads {
		r.obj.readers++ // read below, maybe with the lock released
	}
	if len(reads) > 0 && m.peerDead && m.owner != c.id {
		// The owner is gone: nothing can be read, and nothing will land.
		for _, r := range reads {
			out[r.i] = codeTransferFail
			m.unreadLocked(r.obj)
		}
		reads = nil
	}
	if len(reads) > 0 && c.peerStallsLocked() {
		wait := min(m.knobs.StatusTimeout, m.knobs.TransferWait)
		if !m.waitLocked(m.now.Add(wait), func() bool { return !m.peerFroze }) {
			for _, r := range reads {
				out[r.i] = codeTransferFail
				if m.knobs.StatusTimeout > m.knobs.TransferWait {
					// the wait gave up; the transfer goes on, until the
					// client is torn down
					m.atPeer = append(m.atPeer, func() {
						if !c.closed.Load() {
							m.landLocked(r)
						}
						m.unreadLocked(r.obj)
					})
					continue
				}
				m.unreadLocked(r.obj)
			}
			reads = nil
		}
	}
	if m.fixed && len(reads) > 0 {
		pinned, srcs := driverkit.Resize(sc.spans, len(reads)), driverkit.Resize(sc.dsts, len(reads))
		sc.spans, sc.dsts = pinned, srcs
		for j, r := range reads {
			pinned[j], srcs[j] = r.obj.span, m.bytesLocked(r.obj.span)
		}
		m.copyUnlocked(pinned, func() {
			for j := range reads {
				reads[j].landed = int64(copy(reads[j].dst, srcs[j]))
			}
		})
	} else {
		for j := range reads {
			reads[j].landed = m.landLocked(reads[j])
		}
	}
	for _, r := range reads {
		out[r.i] = r.landed
		if m.now.After(r.obj.leaseUntil) {
			out[r.i] = codeLeaseExpired // the bytes were written
		}
		f := staged[r.i]
		if f.write {
			out[r.i] = int64(f.code)
		}
		if f.late > 0 {
			m.late.Add(1)
			go func(dst []byte, n int, d time.Duration) {
				defer m.late.Done()
				time.Sleep(d) // the transfer engine's timing, not a test's synchronisation
				for j := 0; j < n; j++ {
					dst[j] ^= 0x5A
				}
			}(r.dst, int(r.obj.size), f.late)
		}
		m.unreadLocked(r.obj)
	}
	return m.finishLocked(CallGet, keys, out)
}

// read is one key's transfer out of the segment into the caller's memory.
type read struct {
	i      int // the key's index
	obj    *object
	dst    []byte
	landed int64 // the bytes copied
}

// landLocked copies r's object into its destination.
func (m *Master) landLocked(r read) int64 { return int64(copy(r.dst, m.bytesLocked(r.obj.span))) }

// lookupLocked is the master's replica lookup of key: its object, with a
// lease taken, or why there is none.
func (m *Master) lookupLocked(key string) (*object, int64) {
	o, ok := m.objects[key]
	_, writing := m.sessions[key]
	switch {
	case ok:
		o.leaseUntil = m.now.Add(m.knobs.Lease)
		return o, 0
	case writing:
		return nil, codeReplicaNotReady
	}
	return nil, codeObjectNotFound
}

// lookupAtThaw is the effect a lookup that timed out on a frozen master
// takes when it thaws: the lease on each asked key's object. It copies the
// keys: the caller may reuse them once the call returned.
func (m *Master) lookupAtThaw(keys []string, ask []int) func() {
	ks := make([]string, len(ask))
	for j, i := range ask {
		ks[j] = keys[i]
	}
	return func() {
		for _, k := range ks {
			m.lookupLocked(k)
		}
	}
}

// memory is the caller's memory at b. Over tcp the transfer engine reads
// and writes unregistered memory too.
func memory(b mooncake.Buffer) []byte {
	if b.Addr == 0 || b.Len <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(addrPointer(b.Addr)), b.Len)
}

// addrPointer turns a buffer's address back into a pointer, as the
// transfer engine does in C. The memory is off the Go heap (it was
// registered by address from runtime/hostmem), so the collector neither
// moves nor frees it; the indirection keeps vet's uintptr check, which is
// about heap memory, quiet.
func addrPointer(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

package fakesdk

// The segment: one arena of real bytes, its spans allocated, freed, pinned
// while a transfer copies without the lock, and evicted.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// bytesLocked is span s of the segment. A reserved arena never grows or
// moves; without one the arena is a heap slice grown (and so copied and
// zeroed) under the lock.
func (m *Master) bytesLocked(s span) []byte {
	if need := s.off + s.size; int64(len(m.arena)) < need {
		if m.fixed {
			panic(fmt.Sprintf("fakesdk: the segment's %d reserved bytes are full (need %d)", len(m.arena), need))
		}
		m.arena = append(m.arena, make([]byte, need-int64(len(m.arena)))...)
	}
	return m.arena[s.off : s.off+s.size]
}

// allocLocked places size bytes first-fit. It never evicts: a start into a
// segment full of complete objects answers NO_AVAILABLE_HANDLE at once
// (b4e-pool-full-declines-then-evicts, recorded), and the master's
// eviction thread, run as time passes (evictLocked), then makes room.
func (m *Master) allocLocked(size int64) (span, bool) {
	m.releaseDiscardsLocked()
	return m.placeLocked(size)
}

// evictShare is the share of the evictable objects (complete, their lease
// run out) the master's eviction thread drops, oldest first, after a start
// was refused for lack of room: the real master at 3b5a594 with its
// default settings (eviction_ratio 0.05, eviction_high_watermark_ratio
// 0.90) dropped 4 of 16 complete 1 MiB objects filling a 16 MiB segment
// within 1 s of the refused start, the 4 oldest, in every one of 3 runs
// (b4e-pool-full-declines-then-evicts). The master's count is
// ceil(evictable x target) over its own used-ratio accounting
// (master_service.cpp, EvictionThreadFunc and BatchEvict), which the
// fake does not derive: it drops this recorded share.
const evictShare = 0.25

// evictLocked is the master's eviction thread, run when the clock moves.
// After a start was refused for lack of room (the master's
// need_mem_eviction_) it drops evictShare of the evictable objects, oldest
// first, once; a segment with nothing evictable (full of open sessions)
// keeps refusing. With Knobs.Evicts it also drops, while the segment is
// full, objects whose lease ran out, oldest first.
func (m *Master) evictLocked() {
	if m.needEviction {
		m.needEviction = false
		n := 0
		for _, o := range m.objects {
			if !m.now.Before(o.leaseUntil) {
				n++
			}
		}
		for drop := int(math.Ceil(float64(n) * evictShare)); drop > 0 && m.evictOneLocked(); drop-- {
		}
	}
	for m.knobs.Evicts && m.capacity > 0 && m.used >= m.capacity && m.evictOneLocked() {
	}
}

func (m *Master) placeLocked(size int64) (span, bool) {
	if m.capacity > 0 && m.used+size > m.capacity {
		return span{}, false
	}
	for i, f := range m.free {
		if f.size >= size {
			s := span{f.off, size}
			if f.size == size {
				m.free = append(m.free[:i], m.free[i+1:]...)
			} else {
				m.free[i] = span{f.off + size, f.size - size}
			}
			m.used += size
			return s, true
		}
	}
	s := span{m.top, size}
	m.top += size
	m.used += size
	return s, true
}

// freeLocked frees s, or, while a transfer copies into or out of it
// without the lock, once the transfer unpins it: until then no other
// object is placed there.
func (m *Master) freeLocked(s span) {
	if m.pins[s.off] > 0 {
		m.deferred = append(m.deferred, s)
		return
	}
	m.freeNowLocked(s)
}

// pinLocked keeps s from being freed until unpinLocked.
func (m *Master) pinLocked(s span) { m.pins[s.off]++ }

func (m *Master) unpinLocked(s span) {
	if m.pins[s.off]--; m.pins[s.off] > 0 {
		return
	}
	delete(m.pins, s.off)
	for i, d := range m.deferred {
		if d.off == s.off {
			m.deferred = append(m.deferred[:i], m.deferred[i+1:]...)
			m.freeNowLocked(d)
			return
		}
	}
}

// copyUnlocked runs copies with the lock released: the arena never moves
// and each span is pinned, so a transfer of megabytes no longer holds up
// every other call. m.mu is held on entry and on return.
func (m *Master) copyUnlocked(pinned []span, copies func()) {
	for _, s := range pinned {
		m.pinLocked(s)
	}
	m.mu.Unlock()
	if m.copying != nil {
		m.copying()
	}
	copies()
	m.mu.Lock()
	for _, s := range pinned {
		m.unpinLocked(s)
	}
}

func (m *Master) freeNowLocked(s span) {
	m.used -= s.size
	m.free = append(m.free, s)
	slices.SortFunc(m.free, func(a, b span) int { return cmp.Compare(a.off, b.off) })
	merged := m.free[:1]
	for _, f := range m.free[1:] {
		last := &merged[len(merged)-1]
		if last.off+last.size == f.off {
			last.size += f.size
		} else {
			merged = append(merged, f)
		}
	}
	m.free = merged
	if last := m.free[len(m.free)-1]; last.off+last.size == m.top {
		m.top = last.off
		m.free = m.free[:len(m.free)-1]
	}
}

func (m *Master) evictOneLocked() bool {
	var victim string
	var at time.Time
	for k, o := range m.objects {
		if m.now.Before(o.leaseUntil) {
			continue
		}
		if victim == "" || o.putAt.Before(at) || (o.putAt.Equal(at) && k < victim) {
			victim, at = k, o.putAt
		}
	}
	if victim == "" {
		return false
	}
	m.freeLocked(m.objects[victim].span)
	m.dropObjectLocked(m.objects[victim])
	delete(m.objects, victim)
	return true
}

func (m *Master) releaseDiscardsLocked() {
	kept := m.discards[:0]
	for _, d := range m.discards {
		if m.now.Sub(d.at) >= m.knobs.Release {
			m.freeLocked(d.span)
		} else {
			kept = append(kept, d)
		}
	}
	m.discards = kept
}

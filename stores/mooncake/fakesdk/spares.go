package fakesdk

// Spares: objects and calls' working space kept for the next calls, so a
// call allocates only what it hands to its caller.

// newObjectLocked is a complete object over s, put now: a spare one when
// there is one. m.mu is held.
func (m *Master) newObjectLocked(s span) *object {
	o := m.spareObjects.Get()
	*o = object{span: s, putAt: m.now}
	return o
}

// dropObjectLocked takes note that o left the master's objects: it is
// spare once no get reads it. m.mu is held.
func (m *Master) dropObjectLocked(o *object) {
	o.gone = true
	if o.readers == 0 {
		m.spareObjects.Put(o)
	}
}

// unreadLocked ends a get's read of o. m.mu is held.
func (m *Master) unreadLocked(o *object) {
	if o.readers--; o.readers == 0 && o.gone {
		m.spareObjects.Put(o)
	}
}

// scratch is the working space of one call: taken from the master's
// spares when the call takes the lock and given back when it returns, so a
// call allocates only what it hands to its caller. A call may release the
// lock (a copy, a wait), so no two calls ever share one. Nothing in it
// outlives the call: what a call leaves for later (a thaw's effect, a
// transfer that goes on) is copied out.
type scratch struct {
	ask    []int     // the keys the master is asked about, by index
	codes  []int64   // a get's lookup answers, per asked key
	placed []span    // a start's spans, per asked key
	faults []fault   // a get's staged faults, per key
	found  []*object // a get's objects, per asked key
	reads  []read
	writes []write
	slices [][]byte // a scatter's sources, back to back
	spans  []span   // a copy's pinned spans
	dsts   [][]byte // a copy's segment side, per span
}

// scratchLocked takes a spare scratch, or a new one. m.mu is held.
func (m *Master) scratchLocked() *scratch {
	return m.spare.Get()
}

// spareLocked gives sc back, holding on to nothing the call referred to
// (objects, the caller's memory, bytes sent). m.mu is held.
func (m *Master) spareLocked(sc *scratch) {
	clear(sc.found[:cap(sc.found)])
	clear(sc.reads[:cap(sc.reads)])
	clear(sc.writes[:cap(sc.writes)])
	clear(sc.slices[:cap(sc.slices)])
	clear(sc.dsts[:cap(sc.dsts)])
	m.spare.Put(sc)
}

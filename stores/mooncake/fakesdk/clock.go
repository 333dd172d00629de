package fakesdk

// The master's clock: calls that take time in a real build wait on it,
// and tests move and observe it (Advance, Await, Settle).

import (
	"errors"
	"time"
)

// Now is the master's clock.
func (m *Master) Now() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock by d, stopping at each deadline a waiting call
// has on the way and letting the calls started by Go settle there.
func (m *Master) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	target := m.now.Add(d)
	for {
		m.settleLocked()
		next, ok := m.nextDeadlineLocked()
		if !ok || next.After(target) {
			break
		}
		m.setNowLocked(next)
	}
	m.setNowLocked(target)
	m.settleLocked()
}

func (m *Master) setNowLocked(t time.Time) {
	if t.After(m.now) {
		m.now = t
		m.evictLocked()
	}
	if (m.peerFroze && m.now.Sub(m.frozeAt) > m.knobs.ClientTTL || m.peerDead && m.now.Sub(m.diedAt) > m.knobs.ClientTTL) && !m.unmounted {
		// The master expires the silent owner and unmounts its segment.
		m.unmounted = true
		m.objects = map[string]*object{}
		m.sessions = map[string]session{}
	}
	m.cond.Broadcast()
}

// nextDeadlineLocked is the earliest deadline a waiting call has.
func (m *Master) nextDeadlineLocked() (time.Time, bool) {
	var next time.Time
	for w := range m.waiters {
		if !w.deadline.IsZero() && (next.IsZero() || w.deadline.Before(next)) {
			next = w.deadline
		}
	}
	return next, !next.IsZero()
}

// settled reports whether w waits and will go on waiting until the clock
// or the environment changes.
func (m *Master) settledLocked(w *waiter) bool {
	return !w.ready() && (w.deadline.IsZero() || m.now.Before(w.deadline))
}

func (m *Master) settleLocked() {
	for {
		n := 0
		for w := range m.waiters {
			if m.settledLocked(w) {
				n++
			}
		}
		if m.active <= n+m.holding {
			return
		}
		m.cond.Wait()
	}
}

// waitLocked blocks until ready() or the clock reaches deadline (zero:
// none), and reports whether ready() held. m.mu is held.
func (m *Master) waitLocked(deadline time.Time, ready func() bool) bool {
	w := &waiter{deadline: deadline, ready: ready}
	m.waiters[w] = struct{}{}
	m.cond.Broadcast()
	defer func() {
		delete(m.waiters, w)
		m.cond.Broadcast()
	}()
	for {
		if ready() {
			return true
		}
		if !deadline.IsZero() && !m.now.Before(deadline) {
			return false
		}
		m.cond.Wait()
	}
}

// takeLocked makes the calling call take d on the clock.
func (m *Master) takeTimeLocked(d time.Duration) {
	m.waitLocked(m.now.Add(d), func() bool { return false })
}

// Go runs call in a goroutine, counted by Settle and Await; done is closed
// when it returned.
func (m *Master) Go(call func()) (done <-chan struct{}) {
	m.mu.Lock()
	m.active++
	m.mu.Unlock()
	ch := make(chan struct{})
	go func() {
		defer func() {
			m.mu.Lock()
			m.active--
			close(ch)
			m.cond.Broadcast()
			m.mu.Unlock()
		}()
		call()
	}()
	return ch
}

// Settle returns once every call started by Go has returned, waits on the
// clock or the environment, or waits at a Hold.
func (m *Master) Settle() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settleLocked()
}

// ErrBlocked is Await's answer for a call that waits on the environment
// alone (a thaw): no clock can end it.
var ErrBlocked = errors.New("fakesdk: the call waits for the environment (a thaw) and has no deadline")

// Await waits until done (a channel from Go) is closed, moving the clock to
// the next deadline whenever every call settled and done is still open, as
// real time would pass.
func (m *Master) Await(done <-chan struct{}) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		m.settleLocked()
		select {
		case <-done:
			return nil
		default:
		}
		next, ok := m.nextDeadlineLocked()
		if !ok {
			return ErrBlocked
		}
		m.setNowLocked(next)
	}
}

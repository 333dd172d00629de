// Package fakesdk is a Mooncake store in process: a master (objects, put
// sessions, the segment they live in) shared by clients, each with its own
// local put sessions and registered buffers, moving real bytes.
//
// It answers as a real build (Mooncake main at 3b5a594, reporting
// 0.3.12.post1) answered in the runs ../shared/mooncake-real.md records, and
// stores/mooncake/testdata/mcscenario holds those answers; the replay test
// in internal/mcscenario fails when this fake disagrees with one. Its
// decisions are its own: it names codes (generated/mooncake's Code names the
// values of types.h), but never asks our spec what an answer means.
//
// What it models, and the real behaviour each rests on:
//   - The client keeps its own put sessions: a second start of a key it holds,
//     an empty key, and an end or revoke of a key it holds no session for are
//     refused with INVALID_PARAMS before the master is asked (probe rows
//     b3, b6, c1-c5). The local session is dropped only when the master
//     answers OK, so one taken over (ILLEGAL_CLIENT, g1) or completed by a
//     late end (INVALID_WRITE, h11-15) stays forever.
//   - The master holds sessions and objects over one segment of real bytes:
//     freed space keeps its old bytes (d6), a discarded session's space is
//     kept until put_start_release_timeout (g1), a start into a full
//     segment answers NO_AVAILABLE_HANDLE at once, even when complete
//     objects fill it (b4e, recorded), complete objects without a live
//     lease are evicted, oldest first, only as time passes (the master's
//     eviction thread), and a segment full of open sessions answers
//     NO_AVAILABLE_HANDLE.
//   - Data calls need no registration (tcp, a5); a scatter larger than its
//     session is refused whole (d2).
//   - An end seals its local session before the master is asked: a scatter
//     after any end is refused, whatever the end answered (m-master-killed).
//   - The environment: a master killed (metadata calls answer RPC_FAIL at
//     once, a get after the connect retries, a scatter into a session still
//     works), restarted (everything forgotten; a client's first metadata
//     call fails RPC_FAIL at once on its dead connection, then starts
//     answer NO_AVAILABLE_HANDLE until the segment is remounted) or frozen (calls answer RPC_TIMEOUT
//     after MC_RPC_TIMEOUT_MS and take effect when it thaws); the segment's
//     owner frozen (transfers stall; the TCP status timeout, the fixed 60 s
//     transfer wait, the lease, and the master's client_ttl act on them).
//
// Time is the master's clock: a call that takes time in a real build waits
// on it, and Advance, Await and Settle move and observe it, so no test sleeps.
package fakesdk

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
	"unsafe"

	gen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/internal/reuse"
	"github.com/kvblob/kvblob/stores/mooncake"
)

// The answers, by their names in types.h.
const (
	codeOK                = int64(gen.OK)
	codeNoAvailableHandle = int64(gen.NoAvailableHandle)
	codeInvalidParams     = int64(gen.InvalidParams)
	codeIllegalClient     = int64(gen.IllegalClient)
	codeInvalidWrite      = int64(gen.InvalidWrite)
	codeReplicaNotReady   = int64(gen.ReplicaIsNotReady)
	codeObjectNotFound    = int64(gen.ObjectNotFound)
	codeAlreadyExists     = int64(gen.ObjectAlreadyExists)
	codeLeaseExpired      = int64(gen.LeaseExpired)
	codeTransferFail      = int64(gen.TransferFail)
	codeRPCFail           = int64(gen.RPCFail)
	codeRPCTimeout        = int64(gen.RPCTimeout)
)

// Knobs are the timings and sizes of a real deployment the fake acts on,
// each named by what sets it there.
type Knobs struct {
	Discard       time.Duration // master --put_start_discard_timeout_sec (30 s)
	Release       time.Duration // master --put_start_release_timeout_sec (600 s)
	Lease         time.Duration // master --default_kv_lease_ttl (10 s)
	ClientTTL     time.Duration // master --client_ttl (10 s)
	RPCTimeout    time.Duration // client MC_RPC_TIMEOUT_MS (30 s)
	StatusTimeout time.Duration // client MC_TCP_STATUS_TIMEOUT_SEC (30 s)
	TransferWait  time.Duration // a get's transfer wait, fixed (transfer_task.cpp:830): 60 s
	Retries       time.Duration // a get's lookup with the master down: the connect retries (recorded: 1-10 s)
	Remount       time.Duration // after a master restart, until the segment is mounted again: ~1 s
	// SocketWindow is how much of a scatter a frozen peer's connection
	// takes in before the sender blocks (socket buffers): a scatter that
	// fits waits for its ack under StatusTimeout; a larger one blocks
	// until the peer thaws.
	SocketWindow int64
}

// DefaultKnobs are a real build's defaults.
func DefaultKnobs() Knobs {
	return Knobs{Discard: DefaultDiscard, Release: 600 * time.Second, Lease: 10 * time.Second,
		ClientTTL: 10 * time.Second, RPCTimeout: 30 * time.Second, StatusTimeout: 30 * time.Second,
		TransferWait: 60 * time.Second, Retries: 4200 * time.Millisecond, Remount: time.Second,
		SocketWindow: 4 << 20}
}

// DefaultDiscard is the default put_start_discard_timeout_sec.
const DefaultDiscard = 30 * time.Second

type span struct{ off, size int64 }

type object struct {
	span
	putAt      time.Time
	leaseUntil time.Time
	readers    int  // gets that read it with the lock released, or once a frozen owner thaws
	gone       bool // out of the master's objects: spare once no get reads it
}

type session struct {
	owner   int // client id; negative for BeginForeign's writer
	started time.Time
	span
}

type discarded struct {
	span
	at time.Time
}

// waiter is a call waiting on the clock or the environment.
type waiter struct {
	deadline time.Time // zero: none
	ready    func() bool
}

// Master is the store every client of a pool shares, and the segment its
// objects live in.
type Master struct {
	mu    sync.Mutex
	cond  *sync.Cond
	knobs Knobs
	now   time.Time

	// the segment
	capacity int64         // 0: no bound
	arena    []byte        // the segment's bytes
	fixed    bool          // arena is a reservation that never moves (see reserve)
	pins     map[int64]int // spans (by offset) a transfer copies into or out of without the lock
	deferred []span        // spans freed while pinned: freed at the last unpin
	top      int64
	free     []span // sorted by offset
	used     int64
	discards []discarded

	objects  map[string]*object
	sessions map[string]session
	nextID   int

	// the environment
	down      bool      // killed
	epoch     int       // kills so far: a client whose connection predates the last kill has a dead one
	frozen    bool      // SIGSTOPped
	atThaw    []func()  // requests a frozen master applies when it thaws
	remountAt time.Time // after a restart, starts find no space until then
	owner     int       // the client whose segment holds the pool (0: none that can freeze)
	peerFroze bool
	frozeAt   time.Time
	unmounted bool     // the owner was expired (client_ttl)
	atPeer    []func() // transfers a frozen owner applies when it thaws

	waiters map[*waiter]struct{}
	active  int // calls started by Go and not returned
	holding int // calls waiting at a Hold

	faults map[faultKey][]fault
	holds  map[faultKey][]*Held
	calls  map[string]int
	late   sync.WaitGroup // transfers still writing after their call answered

	spare        reuse.Stack[scratch] // calls' working space, for the next calls
	spareObjects reuse.Stack[object]  // objects dropped, for the next ones
}

type faultKey struct{ call, key string }

// fault is one staged answer: a code, a raise, a short write or a
// transfer that still writes after its failure is answered.
type fault struct {
	code       gen.Code
	raise      bool
	raiseAfter bool // the call takes effect, then raises
	short      bool
	write      bool          // the bytes land although the code is answered (LEASE_EXPIRED, TRANSFER_FAIL)
	late       time.Duration // the transfer goes on writing this long after the call answered
	miscount   bool          // the call answers one value fewer than its keys
}

// The calls, as the SDK names them.
const (
	CallStart   = "batch_put_session_start"
	CallScatter = "batch_put_from_multi_buffer_ranges"
	CallEnd     = "batch_put_session_end"
	CallRevoke  = "batch_put_session_revoke"
	CallGet     = "batch_get_into"
	CallExist   = "batch_is_exist"
)

// NewMaster returns an empty pool holding at most capacity bytes (0: no
// bound), with DefaultKnobs.
func NewMaster(capacity int64) *Master {
	m := &Master{objects: map[string]*object{}, sessions: map[string]session{}, capacity: capacity,
		now: time.Unix(1_700_000_000, 0), knobs: DefaultKnobs(), faults: map[faultKey][]fault{},
		holds: map[faultKey][]*Held{}, calls: map[string]int{}, waiters: map[*waiter]struct{}{}, pins: map[int64]int{}}
	m.cond = sync.NewCond(&m.mu)
	if mem := reserve(m, reserveBytes); mem != nil {
		m.arena, m.fixed = mem, true
	}
	return m
}

// SetKnobs replaces the master's timings and sizes.
func (m *Master) SetKnobs(k Knobs) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.knobs = k
}

// SetCapacity bounds the pool's bytes (0: no bound).
func (m *Master) SetCapacity(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = n
}

// SetOwner names the client whose segment holds the pool: FreezePeer
// freezes it.
func (m *Master) SetOwner(c *Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owner = c.id
}

// ---- the clock ----

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
	if m.peerFroze && !m.unmounted && m.now.Sub(m.frozeAt) > m.knobs.ClientTTL {
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

// ---- the environment ----

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

// ---- the segment ----

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
// (b4e-pool-full-evicts, recorded: the start right after the 16th 1 MiB
// put into a 16 MiB segment answered -200). The master evicts in the
// background (its eviction thread), modelled as time passing (evictLocked).
func (m *Master) allocLocked(size int64) (span, bool) {
	m.releaseDiscardsLocked()
	return m.placeLocked(size)
}

// evictLocked is the master's eviction thread, run when the clock moves:
// while the segment is full it evicts complete objects without a live
// lease, oldest first.
func (m *Master) evictLocked() {
	for m.capacity > 0 && m.used >= m.capacity && m.evictOneLocked() {
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
	copies()
	m.mu.Lock()
	for _, s := range pinned {
		m.unpinLocked(s)
	}
}

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

// ---- staging ----

// Answer makes the next call of call for key answer code, without effect.
func (m *Master) Answer(call, key string, code gen.Code) { m.stage(call, key, fault{code: code}) }

// AnswerAfterWriting makes the next call of call for key write the bytes
// and then answer code (a get whose lease expired, a transfer that failed
// after landing).
func (m *Master) AnswerAfterWriting(call, key string, code gen.Code) {
	m.stage(call, key, fault{code: code, write: true})
}

// TransferStillRunning makes the next get of key answer TRANSFER_FAIL while
// its transfer goes on: after the call answered, the buffer is written once
// more, after delay. Wait waits for such transfers.
func (m *Master) TransferStillRunning(key string, delay time.Duration) {
	m.stage(CallGet, key, fault{code: gen.TransferFail, write: true, late: delay})
}

// Wait waits until every transfer still running has finished writing.
func (m *Master) Wait() { m.late.Wait() }

// Raise makes the next call of call that names key raise, without effect.
func (m *Master) Raise(call, key string) { m.stage(call, key, fault{raise: true}) }

// RaiseAfterApplying makes the next metadata call of call that names key
// take effect and then raise (an answer lost on its way back).
func (m *Master) RaiseAfterApplying(call, key string) { m.stage(call, key, fault{raiseAfter: true}) }

// Miscount makes the next call of call that names key answer one value
// fewer than its keys, after doing its work.
func (m *Master) Miscount(call, key string) { m.stage(call, key, fault{miscount: true}) }

// Short makes the next scatter of key write only half the row.
func (m *Master) Short(key string) { m.stage(CallScatter, key, fault{short: true}) }

func (m *Master) stage(call, key string, f fault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := faultKey{call, key}
	m.faults[k] = append(m.faults[k], f)
}

// popWholeLocked pops a staged fault for any key of the call that applies
// to the whole call. m.mu is held.
func (m *Master) popWholeLocked(call string, keys []string, is func(fault) bool) (string, bool) {
	for _, k := range keys {
		fk := faultKey{call, k}
		if fs := m.faults[fk]; len(fs) > 0 && is(fs[0]) {
			m.faults[fk] = fs[1:]
			return k, true
		}
	}
	return "", false
}

func (m *Master) raiseLocked(call string, keys []string) error {
	if k, ok := m.popWholeLocked(call, keys, func(f fault) bool { return f.raise }); ok {
		return fmt.Errorf("fakesdk: %s raised (staged for key %q)", call, k)
	}
	return nil
}

// finish applies a staged raise-after or miscount to out.
func (m *Master) finishLocked(call string, keys []string, out []int64) ([]int64, error) {
	if k, ok := m.popWholeLocked(call, keys, func(f fault) bool { return f.raiseAfter }); ok {
		return nil, fmt.Errorf("fakesdk: %s raised after taking effect (staged for key %q)", call, k)
	}
	if _, ok := m.popWholeLocked(call, keys, func(f fault) bool { return f.miscount }); ok && len(out) > 0 {
		out = out[:len(out)-1]
	}
	return out, nil
}

// takeLocked pops the per-key fault staged for call and key. m.mu is held.
func (m *Master) takeLocked(call, key string) (fault, bool) {
	fk := faultKey{call, key}
	fs := m.faults[fk]
	if len(fs) == 0 || fs[0].raise || fs[0].raiseAfter || fs[0].miscount { // those apply to the whole call
		return fault{}, false
	}
	m.faults[fk] = fs[1:]
	return fs[0], true
}

// Held is a call held inside the SDK.
type Held struct {
	Entered  chan struct{} // closed once the call is held
	m        *Master
	release  chan struct{}
	once     sync.Once
	entered  bool // under m.mu
	released bool // under m.mu
}

// Release lets the held call go on.
func (h *Held) Release() {
	h.once.Do(func() {
		h.m.mu.Lock()
		if h.entered {
			h.m.holding--
		}
		h.released = true
		h.m.cond.Broadcast()
		h.m.mu.Unlock()
		close(h.release)
	})
}

// Hold makes the next call of call that names key wait inside the SDK,
// before it does anything.
func (m *Master) Hold(call, key string) *Held {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := &Held{Entered: make(chan struct{}), m: m, release: make(chan struct{})}
	k := faultKey{call, key}
	m.holds[k] = append(m.holds[k], h)
	return h
}

// enter counts the call and waits at any hold staged for one of its keys.
func (m *Master) enter(call string, keys []string) {
	m.mu.Lock()
	m.calls[call]++
	var held []*Held
	for _, k := range keys {
		fk := faultKey{call, k}
		if hs := m.holds[fk]; len(hs) > 0 {
			held = append(held, hs[0])
			m.holds[fk] = hs[1:]
		}
	}
	for _, h := range held {
		if !h.released {
			h.entered = true
			m.holding++
		}
	}
	m.mu.Unlock()
	for _, h := range held {
		close(h.Entered)
		<-h.release
	}
}

// BeginForeign starts a put session for key as another client would, and
// leaves it unfinished.
func (m *Master) BeginForeign(key string, size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	s, _ := m.placeLocked(size)
	m.sessions[key] = session{owner: -m.nextID, started: m.now, span: s}
}

// DropForeign ends a foreign session of key without committing it.
func (m *Master) DropForeign(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[key]; ok && s.owner < 0 {
		m.freeLocked(s.span)
		delete(m.sessions, key)
	}
}

// Delete drops key's complete object.
func (m *Master) Delete(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.objects[key]; ok {
		m.freeLocked(o.span)
		m.dropObjectLocked(o)
		delete(m.objects, key)
	}
}

// Plant stores obj as a complete object under key, whatever the capacity.
func (m *Master) Plant(key string, obj []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if o, ok := m.objects[key]; ok {
		m.freeLocked(o.span)
		m.dropObjectLocked(o)
	}
	capacity := m.capacity
	m.capacity = 0
	s, _ := m.placeLocked(int64(len(obj)))
	m.capacity = capacity
	copy(m.bytesLocked(s), obj)
	m.objects[key] = m.newObjectLocked(s)
}

// Object returns a copy of key's complete object.
func (m *Master) Object(key string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	if !ok {
		return nil, false
	}
	return append([]byte(nil), m.bytesLocked(o.span)...), true
}

// SessionOpen reports whether the master holds an unfinished put session
// for key.
func (m *Master) SessionOpen(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.sessions[key]
	return ok
}

// Calls returns how many times call was made.
func (m *Master) Calls(call string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[call]
}

// ---- clients ----

// Client is one SDK client of a master: a mooncake.SDK.
type Client struct {
	m       *Master
	id      int
	version string
	local   map[string]span // its put sessions; under m.mu
	sealed  map[string]bool // local sessions an end was sent for: no more writes; under m.mu
	epoch   int             // the master's epoch of the client's connection; under m.mu
	mu      sync.Mutex
	buffers map[uintptr]int64 // registered base -> length
	closed  bool
}

var _ mooncake.SDK = (*Client)(nil)

// NewClient returns a client of m reporting version (use "0.3.13").
func NewClient(m *Master, version string) *Client {
	m.mu.Lock()
	m.nextID++
	id := m.nextID
	m.mu.Unlock()
	return &Client{m: m, id: id, version: version, buffers: map[uintptr]int64{}, local: map[string]span{},
		sealed: map[string]bool{}, epoch: m.epoch}
}

func (c *Client) Version() string { return c.version }

// Master returns the client's master.
func (c *Client) Master() *Master { return c.m }

// HoldsSession reports whether the client holds a local put session for key.
func (c *Client) HoldsSession(key string) bool {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	_, ok := c.local[key]
	return ok
}

// RegisterBuffer refuses a buffer that overlaps one already registered,
// the same one included.
func (c *Client) RegisterBuffer(b mooncake.Buffer) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b.Addr == 0 || b.Len <= 0 {
		return codeInvalidParams, nil
	}
	for base, n := range c.buffers {
		if b.Addr < base+uintptr(n) && base < b.Addr+uintptr(b.Len) {
			return codeInvalidParams, nil
		}
	}
	c.buffers[b.Addr] = b.Len
	return codeOK, nil
}

func (c *Client) UnregisterBuffer(b mooncake.Buffer) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.buffers[b.Addr]; !ok {
		return codeInvalidParams, nil
	}
	delete(c.buffers, b.Addr)
	return codeOK, nil
}

// memory is the caller's memory at b. Over tcp the transfer engine reads
// and writes unregistered memory too.
func memory(b mooncake.Buffer) []byte {
	if b.Addr == 0 || b.Len <= 0 {
		return nil
	}
	return unsafe.Slice((*byte)(addrPointer(b.Addr)), b.Len)
}

var errClosed = errors.New("fakesdk: client closed")

// rpc is how a request reaches the master.
type rpc uint8

const (
	rpcMetadata rpc = iota + 1 // fails at once while the master is down (m-master-killed)
	rpcLookup                  // a get's replica lookup: fails after the connect retries (m-master-killed)
)

// reachLocked sends a request to the master and reports whether it
// answers: it does not when it is down (every key's answer is then fail,
// RPC_FAIL) or stays frozen past the RPC timeout (RPC_TIMEOUT; the caller
// queues the request's effect for the thaw, its answer lost). m.mu is held.
func (m *Master) reachLocked(kind rpc) (fail int64, reached bool) {
	if m.down {
		if kind == rpcLookup {
			m.takeTimeLocked(m.knobs.Retries)
		}
		return codeRPCFail, false
	}
	if m.frozen {
		if !m.waitLocked(m.now.Add(m.knobs.RPCTimeout), func() bool { return !m.frozen || m.down }) {
			return codeRPCTimeout, false
		}
		if m.down {
			return codeRPCFail, false
		}
	}
	return 0, true
}

// metadataCall runs a call that touches only metadata: it waits at any
// staged hold, raises if staged, answers each key with a staged code, the
// client's own answer (localLocked) or the master's (applyLocked), then
// lets the client see each answer the master gave (afterLocked). sizes are
// a start's, nil for the other calls.
func (c *Client) metadataCall(call string, keys []string, sizes []int64) ([]int64, error) {
	m := c.m
	m.enter(call, keys)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.raiseLocked(call, keys); err != nil {
		return nil, err
	}
	out := make([]int64, len(keys))
	sc := m.scratchLocked()
	defer m.spareLocked(sc)
	ask := sc.ask[:0]
	for i, k := range keys {
		if f, ok := m.takeLocked(call, k); ok {
			out[i] = int64(f.code)
			continue
		}
		if code, ok := c.localLocked(call, k, sizeAt(sizes, i)); ok {
			out[i] = code
			continue
		}
		ask = append(ask, i)
	}
	sc.ask = ask
	if len(ask) == 0 {
		return m.finishLocked(call, keys, out)
	}
	placed := reuse.Resize(sc.placed, len(ask)) // a start's span per asked key
	sc.placed = placed
	clear(placed)
	if !m.down && c.epoch != m.epoch {
		// The client's connection died with the master it was to: the
		// first call after a restart fails on it at once, and the next
		// one connects again (m-master-restarted).
		c.epoch = m.epoch
		for _, i := range ask {
			out[i] = codeRPCFail
		}
	} else if fail, reached := m.reachLocked(rpcMetadata); !reached {
		for _, i := range ask {
			out[i] = fail
		}
		if fail == codeRPCTimeout {
			m.atThaw = append(m.atThaw, c.applyAtThaw(call, keys, sizes, ask))
		}
	} else {
		for j, i := range ask {
			out[i], placed[j] = m.applyLocked(call, c.id, keys[i], sizeAt(sizes, i))
		}
	}
	for j, i := range ask {
		c.afterLocked(call, keys[i], out[i], placed[j])
	}
	return m.finishLocked(call, keys, out)
}

// sizeAt is sizes[i], or 0 for a call without sizes.
func sizeAt(sizes []int64, i int) int64 {
	if sizes == nil {
		return 0
	}
	return sizes[i]
}

// localLocked is the client's own answer to key k of a metadata call, given
// before the master is asked (ok), if it has one: it refuses a start of an
// empty key, of a size under 1 or of a key it holds a session for, however
// old (probe rows b3, b6), and an end or a revoke of a key it holds no
// session for (c1-c5, h5); an end seals the session (sealLocalSession).
func (c *Client) localLocked(call, k string, size int64) (int64, bool) {
	switch call {
	case CallStart:
		if _, held := c.local[k]; held || k == "" || size <= 0 {
			return codeInvalidParams, true
		}
	case CallEnd:
		return c.sealLocalSession(k)
	case CallRevoke:
		return c.noLocalSession(k)
	}
	return 0, false
}

// applyLocked is the master's side of a metadata call for key k, and the
// span a start placed.
func (m *Master) applyLocked(call string, owner int, k string, size int64) (int64, span) {
	switch call {
	case CallStart:
		return m.startLocked(owner, k, size)
	case CallEnd:
		return m.endLocked(owner, k), span{}
	case CallRevoke:
		return m.revokeLocked(owner, k), span{}
	case CallExist:
		if _, ok := m.objects[k]; ok {
			return 1, span{}
		}
		return 0, span{}
	}
	panic("fakesdk: no metadata call " + call)
}

// afterLocked is the client's side of the master's answer code to key k: a
// started session becomes the client's own; one ended or revoked is
// forgotten only on OK.
func (c *Client) afterLocked(call, k string, code int64, placed span) {
	switch call {
	case CallStart:
		if code == codeOK {
			c.local[k] = placed
			delete(c.sealed, k)
		}
	case CallEnd, CallRevoke:
		c.forgetOnOK(k, code)
	}
}

// applyAtThaw is the effect a request that timed out on a frozen master
// takes when it thaws: the master's side of the call for each asked key,
// in order, its answers lost. It copies what it needs of keys and sizes:
// the caller may reuse them once the call returned.
func (c *Client) applyAtThaw(call string, keys []string, sizes []int64, ask []int) func() {
	m, owner := c.m, c.id
	ks := make([]string, len(ask))
	var ss []int64
	if sizes != nil {
		ss = make([]int64, len(ask))
	}
	for j, i := range ask {
		ks[j] = keys[i]
		if sizes != nil {
			ss[j] = sizes[i]
		}
	}
	return func() {
		for j, k := range ks {
			m.applyLocked(call, owner, k, sizeAt(ss, j))
		}
	}
}

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
		pinned, dsts := reuse.Resize(sc.spans, len(writes)), reuse.Resize(sc.dsts, len(writes))
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
	staged := reuse.Resize(sc.faults, len(keys)) // read only for the asked keys, each set here
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
	found := reuse.Resize(sc.found, len(ask)) // each asked key's object, nil for none
	lookup := reuse.Resize(sc.codes, len(ask))
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
	if len(reads) > 0 && c.peerStallsLocked() {
		wait := min(m.knobs.StatusTimeout, m.knobs.TransferWait)
		if !m.waitLocked(m.now.Add(wait), func() bool { return !m.peerFroze }) {
			for _, r := range reads {
				out[r.i] = codeTransferFail
				if m.knobs.StatusTimeout > m.knobs.TransferWait {
					// the wait gave up; the transfer goes on
					m.atPeer = append(m.atPeer, func() {
						m.landLocked(r)
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
		pinned, srcs := reuse.Resize(sc.spans, len(reads)), reuse.Resize(sc.dsts, len(reads))
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

// BatchIsExist answers 1 for a key with a complete object, 0 otherwise.
func (c *Client) BatchIsExist(keys []string) ([]int64, error) {
	return c.metadataCall(CallExist, keys, nil)
}

func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errClosed
	}
	c.closed = true
	return nil
}

// addrPointer turns a buffer's address back into a pointer, as the
// transfer engine does in C. The memory is off the Go heap (it was
// registered by address from runtime/hostmem), so the collector neither
// moves nor frees it; the indirection keeps vet's uintptr check, which is
// about heap memory, quiet.
func addrPointer(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

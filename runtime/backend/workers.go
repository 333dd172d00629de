package backend

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kvblob/kvblob/runtime/driver"
)

type batchState uint8

const (
	queued batchState = iota
	started
	dropped
)

// batch is the rows of one driver call.
type batch struct {
	a     *Attempt
	rows  []driver.Row
	first int // the index of rows[0] in the attempt's view
	bytes int64

	state           batchState
	op              driver.Operation
	callStart       timeWithWarning
	openAt          int  // index in Backend.open while started and not settled
	watchAt         int  // index in Backend.watch while the progress goroutine observes it
	notifies        bool // op is a driver.Notifier the backend subscribed to
	atTeardown      bool // op's access ends only at the driver's teardown (driver.TeardownEnder), as last observed
	resultsRecorded bool
	accessEnded     bool
	unprovable      bool
}

// settled reports whether nothing more will be learned about the batch:
// results recorded and access ended, or unprovable with results recorded.
func (bt *batch) settled() bool {
	return bt.resultsRecorded && (bt.accessEnded || bt.unprovable)
}

// timeWithWarning is when a driver call started, and whether its slow-call
// warning was logged.
type timeWithWarning struct {
	time.Time
	warned bool
}

// callStarted returns the time now from the monotonic clock alone (half
// of time.Now's cost, paid once per batch): a call's start only ever
// measures its age, and ages are read off the monotonic clock anyway.
func (b *Backend) callStarted() time.Time { return b.epoch.Add(time.Since(b.epoch)) }

// worker takes batches by priority and calls the driver until shutdown.
func (b *Backend) worker() {
	defer func() {
		b.mu.Lock()
		b.workers--
		b.notifyLocked()
		b.kickProgress() // the last worker out lets it drain
		b.mu.Unlock()
	}()
	published := false // the last call was a publish: its slot is still held
	for {
		bt := b.next(published)
		if bt == nil {
			return
		}
		b.call(bt)
		published = !bt.a.fetch
	}
}

// next returns the next batch to call, marking it started before it enters
// the driver, or nil once the backend is closing.
//
// Fetches go first. Once four fetch batches were taken while a publish
// batch waited, that publish batch goes next. At most publishCap workers
// publish at once.
//
// A worker whose last call was a publish (published) gives its publish
// slot back here, under the same hold of the lock that takes its next
// batch, not when the call returned: so a publish stream's next call is
// this worker's own, with no gap in which a parked worker, woken late,
// takes it. Handed from worker to worker, a stream paid a wake-up between
// any two of its calls (some 15 us each on a 2-core VM, 6% of a publish of
// 1 MiB rows cut at 4 MiB).
//
// A batch whose attempt's ctx has ended is never started: its attempt is
// cancelled here, whether or not the cancel that ctx's end runs (in a
// goroutine of its own) got there first.
func (b *Backend) next(published bool) *batch {
	woke := false
	defer func() {
		if woke {
			b.wake() // after the unlock below
		}
	}()
	b.mu.Lock()
	defer b.mu.Unlock()
	if published {
		b.publishing--
	}
	for {
		if b.closing {
			return nil
		}
		if bt := b.takeLocked(); bt != nil {
			if bt.a.stopCancel != nil && bt.a.ctx.Err() != nil {
				if !bt.a.fetch {
					b.publishing-- // taken, never started
				}
				bt.a.stopLocked(bt.a.cancelCause())
				b.forgetIfQuiescedLocked(bt.a)
				b.notifyLocked()
				woke = true
				continue
			}
			bt.startLocked() // counted as started before it enters the driver
			bt.callStart = timeWithWarning{Time: b.callStarted()}
			b.open = addIndexed(b.open, bt, (*batch).openIndex)
			b.stats.BatchesStarted++
			if b.idle > 0 && b.eligibleLocked() {
				b.cond.Signal() // more work than this worker: pass it on
			}
			return bt
		}
		b.idle++
		b.cond.Wait()
		b.idle--
	}
}

// takeLocked dequeues the batch next in priority, or returns nil.
func (b *Backend) takeLocked() *batch {
	b.fetchQ.dropDropped()
	b.pubQ.dropDropped()
	canPublish := b.pubQ.len() > 0 && b.publishing < b.pubCap
	var bt *batch
	switch {
	case canPublish && (b.fetchQ.len() == 0 || b.waited >= 4):
		bt = b.pubQ.pop()
		b.waited = 0
		b.publishing++
	case b.fetchQ.len() > 0:
		bt = b.fetchQ.pop()
		if b.pubQ.len() > 0 {
			b.waited++
		}
	}
	return bt
}

// eligibleLocked reports whether a worker could take a batch now.
func (b *Backend) eligibleLocked() bool {
	return b.fetchQ.len() > 0 || (b.pubQ.len() > 0 && b.publishing < b.pubCap)
}

// call runs one batch through the driver and settles what it can; the
// progress goroutine observes the rest, woken by the operation when it is
// a driver.Notifier and by a timer otherwise.
func (b *Backend) call(bt *batch) {
	var op driver.Operation
	var err error
	if bt.a.fetch {
		hint := driver.Hint{}
		if b.caps.Hints {
			hint = bt.a.hint
		}
		op, err = b.d.Get(bt.a.ctx, bt.rows, hint)
	} else {
		op, err = b.d.Put(bt.a.ctx, bt.rows)
	}
	var res []driver.Result
	var done, ended, unprovable, atTeardown, notifies bool
	if err == nil && op != nil {
		res, done = op.Poll()
		ended, unprovable, atTeardown = accessOf(op)
		if n, ok := op.(driver.Notifier); ok && !(done && (ended || unprovable)) {
			// Subscribe before the progress goroutine's first poll, so no
			// change after that poll goes unseen.
			notifies = true
			n.Notify(bt.changed)
		}
	}
	b.mu.Lock() // a publish keeps its slot until this worker's next (next)
	switch {
	case err != nil && driver.IsRejected(err):
		// Nothing escaped: the rows fault and access counts as ended. The
		// call failed as a whole, which stops a publish as well as a fetch;
		// the stop comes first, so that the outcome's Err is the refusal.
		bt.a.stopLocked(&RowError{Row: bt.first, Key: bt.rows[0].Key, Err: err})
		b.faultBatchLocked(bt, "driver rejected the call: "+err.Error())
		bt.endAccessLocked()
		b.settleLocked(bt)
	case err != nil || op == nil:
		if err == nil {
			err = fmt.Errorf("returned no operation and no error")
		}
		b.violationLocked(bt, fmt.Sprintf("%s returned %v, which is not a DriverRejected", callName(bt), err))
	default:
		bt.op = op
		bt.notifies = notifies
		b.observeLocked(bt, res, done, ended, unprovable, atTeardown)
		if !bt.settled() && bt.openAt >= 0 {
			b.handOverLocked(bt)
		}
	}
	if b.closing {
		b.kickProgress() // it drains once the last call settles
	}
	b.notifyLocked()
	b.mu.Unlock()
	b.wake()
}

// handOverLocked gives a batch the worker could not settle to the progress
// goroutine: polled on its timer, or, for a Notifier, polled once now and
// again on each of its wake-ups.
func (b *Backend) handOverLocked(bt *batch) {
	if bt.notifies {
		b.dirtyLocked(bt)
	} else {
		b.watch = addIndexed(b.watch, bt, (*batch).watchIndex)
	}
	b.kickProgress()
}

// dirtyLocked queues a Notifier batch for the progress goroutine's next
// poll, once.
func (b *Backend) dirtyLocked(bt *batch) {
	if bt.watchAt < 0 && bt.op != nil && !bt.settled() {
		b.dirty = addIndexed(b.dirty, bt, (*batch).watchIndex)
	}
}

// changed is the function a Notifier operation calls after each change.
func (bt *batch) changed() {
	b := bt.a.b
	b.mu.Lock()
	b.dirtyLocked(bt)
	b.mu.Unlock()
	b.kickProgress()
}

func callName(bt *batch) string {
	if bt.a.fetch {
		return "Get"
	}
	return "Put"
}

// accessOf observes op's access: ended, unprovable, or waiting only for
// the driver's teardown (driver.TeardownEnder). It calls the operation, so
// never under the backend's lock.
func accessOf(op driver.Operation) (ended, unprovable, atTeardown bool) {
	ended = op.AccessEnded()
	unprovable = !ended && op.AccessUnprovable()
	if t, ok := op.(driver.TeardownEnder); ok && !ended && !unprovable {
		atTeardown = t.AccessEndsAtTeardown()
	}
	return ended, unprovable, atTeardown
}

// observeLocked applies one observation of a batch's operation: its
// results (once), its access end (once), and whether its access waits only
// for the driver's teardown.
func (b *Backend) observeLocked(bt *batch, res []driver.Result, done, ended, unprovable, atTeardown bool) {
	if done && !bt.resultsRecorded {
		if len(res) != len(bt.rows) {
			b.violationLocked(bt, fmt.Sprintf("%s's operation answered %d results for %d rows", callName(bt), len(res), len(bt.rows)))
			return
		}
		bt.a.recordLocked(bt, res)
	}
	if !bt.accessEnded && !bt.unprovable {
		if ended {
			bt.endAccessLocked()
		} else if unprovable {
			bt.unprovableLocked()
			b.stats.BatchesUnprovable++
		}
	}
	bt.atTeardown = atTeardown && !bt.accessEnded && !bt.unprovable
	if bt.settled() {
		b.settleLocked(bt)
	}
}

// The state changes, all under the backend's lock: each batch's, and the
// counters, outcome and signals of its attempt that follow from it.

func (bt *batch) startLocked() {
	bt.state = started
	bt.a.queued--
	bt.a.running++
	bt.a.accessOpen++
}

// recordLocked records a batch's results once. A FAULT stops a fetch's
// later batches.
func (a *Attempt) recordLocked(bt *batch, res []driver.Result) {
	for k, r := range res {
		a.results[bt.first+k] = r
		if r.Status != driver.Fault || (a.err != nil && (a.stopped || !a.fetch)) {
			continue
		}
		fault := &RowError{Row: bt.first + k, Key: bt.rows[k].Key, Err: r.Err()}
		if a.fetch && !a.stopped {
			a.stopLocked(fault)
		} else if a.err == nil {
			a.err = fault
		}
	}
	bt.resultsRecorded = true
	if bt.state == started {
		a.running--
	}
	a.markDoneLocked()
}

func (bt *batch) endAccessLocked() {
	if !bt.accessEnded {
		bt.accessEnded = true
		if bt.state == started {
			bt.a.accessOpen--
			bt.a.markDoneLocked()
		}
	}
}

func (bt *batch) unprovableLocked() {
	if !bt.unprovable {
		bt.unprovable = true
		bt.a.unprovable++
		bt.a.markDoneLocked()
	}
}

// stopLocked drops every queued batch of the attempt; their rows answer
// CANCELLED. The first cause is kept as the attempt's Err.
func (a *Attempt) stopLocked(why error) {
	if a.err == nil {
		a.err = why
	}
	if a.stopped && a.queued == 0 {
		return
	}
	a.stopped = true
	for _, bt := range a.batches {
		if bt.state != queued {
			continue
		}
		bt.state = dropped
		a.queued--
		for i := range bt.rows {
			a.results[bt.first+i] = driver.Result{Status: driver.Cancelled}
		}
	}
	a.markDoneLocked()
}

// markDoneLocked closes done the first time the outcome is final, and
// fires quiesced and pinned the first time they hold. Every change that
// can finish an attempt, end a batch's access or pin it calls it.
func (a *Attempt) markDoneLocked() {
	if !a.closed && a.doneLocked() {
		a.closed = true
		close(a.done)
		if a.stopCancel != nil {
			a.stopCancel() // the outcome is final: ctx's end changes nothing
		}
	}
	if a.quiescedLocked() {
		a.quiesced.fireLocked()
		a.settled.fireLocked()
	} else if a.pinnedLocked() {
		a.settled.fireLocked()
	}
}

// doneLocked reports whether every batch recorded its results or was
// dropped.
func (a *Attempt) doneLocked() bool { return a.queued == 0 && a.running == 0 }

// quiescedLocked reports whether the outcome is final and every batch that
// started proved its access ended.
func (a *Attempt) quiescedLocked() bool { return a.doneLocked() && a.accessOpen == 0 }

// pinnedLocked reports whether the attempt holds an unprovable batch, so
// that neither its outcome's quiescence nor a region's registration can
// ever clear.
func (a *Attempt) pinnedLocked() bool { return a.unprovable > 0 }

// signal is a channel closed once, made only when someone asks for it:
// most attempts are never waited on this way, and pay nothing for it.
type signal struct {
	ch    chan struct{}
	fired bool
}

// closedChan is the channel of a signal fired before anyone asked.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (s *signal) chanLocked() <-chan struct{} {
	if s.ch == nil {
		if s.fired {
			return closedChan
		}
		s.ch = make(chan struct{})
	}
	return s.ch
}

func (s *signal) fireLocked() {
	if !s.fired {
		s.fired = true
		if s.ch != nil {
			close(s.ch)
		}
	}
}

func (b *Backend) faultBatchLocked(bt *batch, text string) {
	res := make([]driver.Result, len(bt.rows))
	for i := range res {
		res[i] = driver.FaultResult(0, "%s", text)
	}
	bt.a.recordLocked(bt, res)
}

// violationLocked records a protocol violation: the batch faults and stays
// held (its access is never proven), every later submission is refused
// naming the violation, and every queued batch is dropped.
func (b *Backend) violationLocked(bt *batch, what string) {
	if b.violation == "" {
		b.violation = what
	}
	why := fmt.Errorf("%w: %s", ErrProtocolViolation, b.violation)
	bt.a.stopLocked(why) // before its rows fault, so its Err names the violation
	if !bt.resultsRecorded {
		b.faultBatchLocked(bt, "driver protocol violation: "+what)
	}
	if !bt.accessEnded && !bt.unprovable {
		bt.unprovableLocked()
		b.stats.BatchesUnprovable++
	}
	for i := len(b.attempts) - 1; i >= 0; i-- { // forgetting one moves only a later one
		a := b.attempts[i]
		a.stopLocked(why)
		b.forgetIfQuiescedLocked(a)
	}
	if bt.settled() {
		b.settleLocked(bt)
	}
}

// settleLocked takes a settled batch out of the open set (and the progress
// goroutine's), and forgets its attempt once quiesced: O(1).
func (b *Backend) settleLocked(bt *batch) {
	if bt.openAt >= 0 {
		b.open = removeIndexed(b.open, bt, (*batch).openIndex)
		b.stats.BatchesSettled++
	}
	if bt.watchAt >= 0 && !bt.notifies {
		b.watch = removeIndexed(b.watch, bt, (*batch).watchIndex)
	}
	b.forgetIfQuiescedLocked(bt.a)
}

// forgetIfQuiescedLocked drops an attempt whose outcome is final and
// quiesced: O(1).
func (b *Backend) forgetIfQuiescedLocked(a *Attempt) {
	if a.at >= 0 && a.quiescedLocked() {
		b.attempts = removeIndexed(b.attempts, a, (*Attempt).index)
	}
}

// queue is a FIFO of batches that keeps its backing array once warm, so
// that a queue emptied after every attempt costs no allocation per
// submission. A queue left empty with room for more than maxIdleQueue
// batches lets its array go.
type queue struct {
	items []*batch
	head  int // items[:head] were taken (and cleared)
}

const maxIdleQueue = 1024

func (q *queue) len() int { return len(q.items) - q.head }

func (q *queue) push(bs []*batch) {
	if q.head > 0 && q.head >= len(q.items)/2 {
		// At least half the array was taken: move the rest to the front,
		// so a queue never empty does not grow without bound.
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, bs...)
}

func (q *queue) pop() *batch {
	bt := q.items[q.head]
	q.items[q.head] = nil
	q.head++
	if q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
		if cap(q.items) > maxIdleQueue {
			q.items = nil
		}
	}
	return bt
}

// dropDropped takes the dropped batches off the front.
func (q *queue) dropDropped() {
	for q.len() > 0 && q.items[q.head].state == dropped {
		q.pop()
	}
}

// The backend's sets of batches and attempts (open, watch, dirty,
// attempts) are indexed slices: each element keeps its own position in a
// field (-1: in none), so that settling removes it in O(1), the last
// element taking its place, whatever the set's size.

// addIndexed appends x to s and records its position in *at(x).
func addIndexed[T any](s []T, x T, at func(T) *int) []T {
	*at(x) = len(s)
	return append(s, x)
}

// removeIndexed takes x, at position *at(x), out of s: the last element
// moves into its place, and x's position becomes -1.
func removeIndexed[T any](s []T, x T, at func(T) *int) []T {
	i, last := *at(x), len(s)-1
	s[i] = s[last]
	*at(s[i]) = i
	var zero T
	s[last] = zero
	*at(x) = -1
	return s[:last]
}

func (bt *batch) openIndex() *int  { return &bt.openAt }
func (bt *batch) watchIndex() *int { return &bt.watchAt }
func (a *Attempt) index() *int     { return &a.at }

// The progress goroutine's pacing of operations it must poll.
const (
	minPause = 50 * time.Microsecond
	maxPause = 2 * time.Millisecond
)

// progress is the only observer of operations a worker could not settle.
// A Notifier operation is polled when it says it changed; any other is
// polled on a timer backing off to maxPause, as the contract allows. A
// timer also watches the open calls' age. After shutdown, once no worker
// is left and every batch settled, it drains the driver and unregisters
// every region, with retries; it never does so while any batch is
// unprovable.
func (b *Backend) progress() {
	pause := minPause
	var polled []*batch
	timer := time.NewTimer(b.cfg.SlowCall)
	defer timer.Stop()
	nextSlow := time.Now().Add(b.cfg.SlowCall)
	var nextDrain time.Time
	drainPause := minPause
	for {
		b.mu.Lock()
		if now := time.Now(); !now.Before(nextSlow) {
			nextSlow = b.warnSlowLocked(now)
		}
		if b.closing && b.workers == 0 && len(b.open) > 0 && !time.Now().Before(nextDrain) && b.onlyAccessLeftLocked() {
			// Every open batch has its results and waits only for its
			// access to end. A driver whose store ends such access only by
			// tearing its client down does so in Drain once they are all
			// that is left (driver.Driver.Drain); the polls below then see
			// their access ended. Any other driver's drain just waits.
			b.mu.Unlock()
			b.drain(drainTry)
			nextDrain = time.Now().Add(drainPause)
			drainPause = min(2*drainPause, time.Second)
			b.mu.Lock()
		}
		if b.closing && b.workers == 0 && b.stats.BatchesUnprovable > 0 && b.pinTeardownWaitersLocked() {
			b.notifyLocked()
		}
		if b.closing && b.workers == 0 && len(b.open) == 0 {
			pinned := b.stats.BatchesUnprovable > 0
			b.mu.Unlock()
			var refused error
			if !pinned {
				refused = b.drainAndUnregister()
			}
			b.mu.Lock()
			b.refused = refused
			b.finished = !pinned && refused == nil
			close(b.done) // with finished, so Done and Shutdown agree
			b.notifyLocked()
			b.mu.Unlock()
			b.wake()
			return
		}
		polled = append(polled[:0], b.watch...)
		for _, bt := range b.dirty {
			bt.watchAt = -1
			polled = append(polled, bt)
		}
		clear(b.dirty)
		b.dirty = b.dirty[:0]
		timed := len(b.watch) > 0
		// A drain that did not end what waits for it is tried again at
		// nextDrain: a batch that waits for a teardown may notify no
		// change until one comes, so the timer must bring that try.
		drainDue := b.closing && b.workers == 0 && len(b.open) > 0 && b.onlyAccessLeftLocked()
		b.mu.Unlock()

		changed := false
		for _, bt := range polled {
			res, done := bt.op.Poll()
			ended, unprovable, atTeardown := accessOf(bt.op)
			b.mu.Lock()
			if bt.openAt >= 0 {
				wasRec, wasEnd, wasUnp := bt.resultsRecorded, bt.accessEnded, bt.unprovable
				b.observeLocked(bt, res, done, ended, unprovable, atTeardown)
				if bt.resultsRecorded != wasRec || bt.accessEnded != wasEnd || bt.unprovable != wasUnp {
					changed = true
					b.notifyLocked()
				}
			}
			b.mu.Unlock()
		}
		clear(polled)
		if changed {
			b.wake()
			pause = minPause
			continue
		}
		wait := time.Until(nextSlow)
		if timed {
			wait = min(wait, pause)
			pause = min(2*pause, maxPause)
		}
		if drainDue {
			wait = min(wait, time.Until(nextDrain))
		}
		timer.Reset(max(wait, 0))
		select {
		case <-b.kick:
		case <-timer.C:
		}
	}
}

// warnSlowLocked logs one warning for each open call past SlowCall, and
// returns when the next open call turns slow (or now+SlowCall).
func (b *Backend) warnSlowLocked(now time.Time) time.Time {
	next := now.Add(b.cfg.SlowCall)
	for _, bt := range b.open {
		if bt.callStart.warned {
			continue
		}
		if at := bt.callStart.Add(b.cfg.SlowCall); now.After(at) {
			bt.callStart.warned = true
			b.cfg.Logger.Warn().Str("op", strings.ToLower(callName(bt))).Int("rows", len(bt.rows)).Int64("bytes", bt.bytes).
				Int64("age_ms", now.Sub(bt.callStart.Time).Milliseconds()).Msg("backend: a driver call is taking longer than the slow-call threshold")
		} else if at.Before(next) {
			next = at
		}
	}
	return next
}

// pinTeardownWaitersLocked counts as unprovable every open batch that has
// its results and whose access ends only at the driver's teardown
// (driver.TeardownEnder), and reports whether there was one. It is called
// only once a call pinned the closing backend: a drain answers false while
// any call is unprovable (driver.Driver.Drain), so no teardown ever ends
// these batches' access, and nothing else will. Counted so, they pin their
// attempts (their slots are kept, never reused) and the progress goroutine
// can exit pinned instead of waiting for ever. A batch whose access may
// still end by itself is left to end it.
func (b *Backend) pinTeardownWaitersLocked() bool {
	pinned := false
	for i := len(b.open) - 1; i >= 0; i-- { // settling one moves only a later one here
		bt := b.open[i]
		if bt.resultsRecorded && bt.atTeardown && !bt.accessEnded && !bt.unprovable {
			bt.unprovableLocked()
			b.stats.BatchesUnprovable++
			b.settleLocked(bt)
			pinned = true
		}
	}
	return pinned
}

// drainTry bounds a drain the progress goroutine tries while batches wait
// only for their access to end.
const drainTry = 100 * time.Millisecond

// onlyAccessLeftLocked reports whether every open batch has its results
// recorded and waits only for its access to end (none is unprovable).
func (b *Backend) onlyAccessLeftLocked() bool {
	for _, bt := range b.open {
		if !bt.resultsRecorded || bt.accessEnded || bt.unprovable {
			return false
		}
	}
	return true
}

// drain asks the driver to drain, waiting at most timeout.
func (b *Backend) drain(timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return b.d.Drain(ctx)
}

// unregisterTries bounds how often drainAndUnregister asks a drained
// driver to unregister: past that many refusals in a row (about 2 s of
// backoff) the refusal is its last word. A driver whose store applied an
// unregister and then raised refuses every later one (the region is gone
// from the store, but the driver cannot know it), so retrying for ever
// would only keep the progress goroutine alive.
const unregisterTries = 12

// drainAndUnregister drains the driver and unregisters every region,
// retrying with backoff; the binding then releases its hold. It returns
// nil once both succeeded, or the driver's last refusal once a drained
// driver refused unregisterTries times in a row: the regions left stay
// registered and the hold is kept, for good. A drain that does not succeed
// is retried for as long as it takes (a call still in the store).
func (b *Backend) drainAndUnregister() error {
	backoff := time.Millisecond
	refusals := 0
	for {
		if b.drain(time.Second) {
			err := b.binding.unregisterAll()
			if err == nil {
				return nil
			}
			if refusals++; refusals >= unregisterTries {
				return err
			}
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

package backend

import (
	"context"
	"fmt"
	"time"

	"github.com/kvblob/kvblob/runtime/driver"
)

// timeWithWarning is when a driver call started, and whether its slow-call
// warning was logged.
type timeWithWarning struct {
	time.Time
	warned bool
}

// worker takes batches by priority and calls the driver until shutdown.
func (b *Backend) worker() {
	defer func() {
		b.mu.Lock()
		b.workers--
		b.notifyLocked()
		b.mu.Unlock()
	}()
	for {
		bt := b.next()
		if bt == nil {
			return
		}
		b.call(bt)
	}
}

// next returns the next batch to call, marking it started before it enters
// the driver, or nil once the backend is closing.
//
// Fetches go first. Once four fetch batches were taken while a publish
// batch waited, that publish batch goes next. At most max(1, Workers-1)
// workers publish at once.
func (b *Backend) next() *batch {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		if b.closing {
			return nil
		}
		b.fetchQ = dropDropped(b.fetchQ)
		b.pubQ = dropDropped(b.pubQ)
		canPublish := len(b.pubQ) > 0 && b.publishing < b.pubCap
		var bt *batch
		switch {
		case canPublish && (len(b.fetchQ) == 0 || b.waited >= 4):
			bt, b.pubQ = b.pubQ[0], b.pubQ[1:]
			b.waited = 0
			b.publishing++
		case len(b.fetchQ) > 0:
			bt, b.fetchQ = b.fetchQ[0], b.fetchQ[1:]
			if len(b.pubQ) > 0 {
				b.waited++
			}
		}
		if bt != nil {
			bt.state = started // counted as started before it enters the driver
			bt.callStart = timeWithWarning{Time: time.Now()}
			b.open = append(b.open, bt)
			b.stats.BatchesStarted++
			b.notifyLocked() // the progress goroutine watches the call's age
			return bt
		}
		b.cond.Wait()
	}
}

func dropDropped(q []*batch) []*batch {
	for len(q) > 0 && q[0].state == dropped {
		q = q[1:]
	}
	return q
}

// call runs one batch through the driver and settles what it can; the
// progress goroutine observes the rest.
func (b *Backend) call(bt *batch) {
	var op driver.Operation
	var err error
	if bt.a.fetch {
		hint := driver.Hint{}
		if b.caps.Hints {
			hint = bt.a.hint
		}
		op, err = b.d.Get(b.ctx, bt.rows, hint)
	} else {
		op, err = b.d.Put(b.ctx, bt.rows)
	}
	var res []driver.Result
	var done, ended, unprovable bool
	if err == nil && op != nil {
		res, done = op.Poll()
		ended = op.AccessEnded()
		unprovable = !ended && op.AccessUnprovable()
	}
	b.mu.Lock()
	if !bt.a.fetch {
		b.publishing--
	}
	switch {
	case err != nil && driver.IsRejected(err):
		// Nothing escaped: the rows fault and access counts as ended. The
		// call failed as a whole, which stops a publish as well as a fetch.
		b.faultBatchLocked(bt, "driver rejected the call: "+err.Error())
		bt.accessEnded = true
		bt.a.stopLocked("driver rejected the call: " + err.Error())
		b.settleLocked(bt)
	case err != nil || op == nil:
		if err == nil {
			err = fmt.Errorf("returned no operation and no error")
		}
		b.violationLocked(bt, fmt.Sprintf("%s returned %v, which is not a DriverRejected", callName(bt), err))
	default:
		bt.op = op
		b.observeLocked(bt, res, done, ended, unprovable)
	}
	b.cond.Broadcast()
	b.notifyLocked()
	b.mu.Unlock()
	b.wake()
}

func callName(bt *batch) string {
	if bt.a.fetch {
		return "Get"
	}
	return "Put"
}

// observeLocked applies one observation of a batch's operation: its
// results (once) and its access end (once).
func (b *Backend) observeLocked(bt *batch, res []driver.Result, done, ended, unprovable bool) {
	if done && !bt.resultsRecorded {
		if len(res) != len(bt.rows) {
			b.violationLocked(bt, fmt.Sprintf("%s's operation answered %d results for %d rows", callName(bt), len(res), len(bt.rows)))
			return
		}
		bt.a.recordLocked(bt, res)
	}
	if !bt.accessEnded && !bt.unprovable {
		if ended {
			bt.accessEnded = true
		} else if unprovable {
			bt.unprovable = true
			b.stats.BatchesUnprovable++
		}
	}
	if bt.settled() {
		b.settleLocked(bt)
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
	if !bt.resultsRecorded {
		b.faultBatchLocked(bt, "driver protocol violation: "+what)
	}
	if !bt.accessEnded && !bt.unprovable {
		bt.unprovable = true
		b.stats.BatchesUnprovable++
	}
	for a := range b.attempts {
		a.stopLocked("driver protocol violation: " + b.violation)
	}
	if bt.settled() {
		b.settleLocked(bt)
	}
}

func (b *Backend) settleLocked(bt *batch) {
	for i, o := range b.open {
		if o == bt {
			b.open = append(b.open[:i], b.open[i+1:]...)
			b.stats.BatchesSettled++
			break
		}
	}
	b.forgetQuiescedLocked()
}

// forgetQuiescedLocked drops attempts whose outcome is final and quiesced.
func (b *Backend) forgetQuiescedLocked() {
	for a := range b.attempts {
		if a.quiescedLocked() {
			delete(b.attempts, a)
		}
	}
}

// progress is the only observer of operations a worker could not settle.
// After shutdown, once no worker is left and every batch settled, it drains
// the driver and unregisters every region, with retries; it never does so
// while any batch is unprovable.
func (b *Backend) progress() {
	defer close(b.done)
	defer b.cancel()
	pause := 50 * time.Microsecond
	for {
		b.mu.Lock()
		b.warnSlowLocked()
		var watch []*batch
		for _, bt := range b.open {
			if bt.op != nil && !bt.settled() {
				watch = append(watch, bt)
			}
		}
		if b.closing && b.workers == 0 && len(watch) == 0 && !b.callsInDriverLocked() {
			pinned := b.stats.BatchesUnprovable > 0
			b.mu.Unlock()
			if !pinned {
				b.drainAndUnregister()
			}
			b.mu.Lock()
			b.finished = !pinned
			b.notifyLocked()
			b.mu.Unlock()
			b.wake()
			return
		}
		b.mu.Unlock()

		changed := false
		for _, bt := range watch {
			res, done := bt.op.Poll()
			ended := bt.op.AccessEnded()
			unprovable := !ended && bt.op.AccessUnprovable()
			b.mu.Lock()
			wasRec, wasEnd, wasUnp := bt.resultsRecorded, bt.accessEnded, bt.unprovable
			b.observeLocked(bt, res, done, ended, unprovable)
			if bt.resultsRecorded != wasRec || bt.accessEnded != wasEnd || bt.unprovable != wasUnp {
				changed = true
				b.notifyLocked()
			}
			b.mu.Unlock()
		}
		if changed {
			b.wake()
			pause = 50 * time.Microsecond
			continue
		}
		b.mu.Lock()
		idle := len(b.open) == 0
		b.mu.Unlock()
		if idle {
			<-b.kick // nothing to observe: sleep until a worker or Shutdown says so
			continue
		}
		if len(watch) == 0 {
			pause = 10 * time.Millisecond // only calls inside the driver: watch their age
		} else {
			pause = min(2*pause, 2*time.Millisecond)
		}
		// Operations are observed by polling, as the contract says; kick
		// ends the pause as soon as a worker hands over new work.
		select {
		case <-b.kick:
		case <-time.After(pause):
		}
	}
}

// callsInDriverLocked reports whether a worker is inside a Put or Get.
func (b *Backend) callsInDriverLocked() bool {
	for _, bt := range b.open {
		if bt.op == nil && !bt.resultsRecorded {
			return true
		}
	}
	return false
}

func (b *Backend) warnSlowLocked() {
	now := time.Now()
	for _, bt := range b.open {
		if !bt.callStart.warned && now.Sub(bt.callStart.Time) > b.cfg.SlowCall {
			bt.callStart.warned = true
			b.cfg.Logger.Warn().Str("call", callName(bt)).Int("rows", len(bt.rows)).
				Dur("age", now.Sub(bt.callStart.Time)).Msg("backend: a driver call is taking longer than the slow-call threshold")
		}
	}
}

// drain asks the driver to drain, waiting at most timeout.
func (b *Backend) drain(timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	return b.d.Drain(ctx)
}

// drainAndUnregister drains the driver and unregisters every region,
// retrying with backoff until both succeed; the binding then releases its
// hold.
func (b *Backend) drainAndUnregister() {
	backoff := time.Millisecond
	for {
		if b.drain(time.Second) && b.binding.unregisterAll() == nil {
			return
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, time.Second)
	}
}

// Shutdown stops the backend. It refuses new work, drops queued batches
// (their rows answer CANCELLED) and never calls the driver. It returns true
// once the progress goroutine drained the driver, unregistered every region
// and released the hold; false when timeout passed first, or at once when
// every open attempt is pinned by an unprovable call, since from then on
// the answer cannot change.
func (b *Backend) Shutdown(timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	b.mu.Lock()
	if !b.closing {
		b.closing = true
		for a := range b.attempts {
			a.stopLocked("the backend shut down")
		}
		b.cond.Broadcast()
		b.notifyLocked()
	}
	b.mu.Unlock()
	b.wake()
	for {
		b.mu.Lock()
		finished, ch := b.finished, b.changed
		pinned := b.allOpenPinnedLocked()
		b.mu.Unlock()
		if finished {
			return true
		}
		if pinned {
			return false
		}
		select {
		case <-ch:
		case <-b.done:
		case <-deadline.C:
			return false
		}
	}
}

// allOpenPinnedLocked reports whether there is an open attempt and every
// open attempt holds an unprovable batch.
func (b *Backend) allOpenPinnedLocked() bool {
	open := 0
	for a := range b.attempts {
		if a.quiescedLocked() {
			continue
		}
		open++
		if !a.pinnedLocked() {
			return false
		}
	}
	return open > 0
}

// Done is closed when the progress goroutine has exited: after a clean
// shutdown, or after a shutdown left unprovable calls pinned.
func (b *Backend) Done() <-chan struct{} { return b.done }

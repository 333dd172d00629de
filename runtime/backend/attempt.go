package backend

import (
	"context"
	"fmt"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Outcome is what an attempt delivered. Poll and Wait return a fresh copy
// each time: the caller owns its slices.
type Outcome struct {
	// Results holds one result per view row. Rows that never started
	// (dropped after a fault, a cancel or a shutdown) are CANCELLED.
	Results []driver.Result
	// Delivered marks the READY rows.
	Delivered []bool
	// InOrder is the number of rows delivered in order from the first,
	// up to the first row that is not READY: what a prefix reuse may use.
	InOrder int
	// Err says why the attempt stopped early or why a row failed (nil if
	// nothing did); the first cause is kept. It is a *RowError for a row
	// that answered FAULT (errors.As reaches its *driver.FaultError) or a
	// call the driver refused (errors.As reaches its
	// *driver.RejectedError); otherwise it wraps ErrCancelled (and, for a
	// ctx that ended, context.Cause(ctx)), ErrShutDown or
	// ErrProtocolViolation, for errors.Is.
	Err error
}

// Attempt is one Publish or Fetch.
//
// Every method is safe to call from any goroutine, at any time, including
// from Config.Wake; none calls the driver except Cancel, which calls the
// started operations' Cancel (never blocking on the store). An outcome
// goes through two stages, each final once reached:
//
//  1. done: every row has its result (Poll returns true, Done is closed,
//     Wait returns the outcome);
//  2. quiesced: no store can touch the view's slots any more (Quiesced
//     is closed, WaitQuiesced returns nil).
//
// The slots may be reused, or given back to the lender, only once the
// attempt is quiesced, which can come after done: a store may answer a row
// before its access ends. An attempt pinned by an unprovable call is done
// but never quiesces; its slots must never be reused.
type Attempt struct {
	b *Backend
	// ctx is the ctx of the attempt's driver calls; stopCancel, when ctx
	// can end, unregisters the cancel its end would run.
	ctx        context.Context
	stopCancel func() bool
	fetch      bool
	hint       driver.Hint
	results    []driver.Result
	batches    []*batch
	// Counters of the batches' states, so that done, quiesced and pinned
	// are O(1): queued; started with results not recorded; started with
	// access not ended; unprovable.
	queued, running, accessOpen, unprovable int
	stopped                                 bool
	err                                     error
	done                                    chan struct{} // closed once the outcome is final
	closed                                  bool          // done is closed
	quiesced                                signal        // closed once quiesced
	settled                                 signal        // closed once quiesced or pinned: WaitQuiesced's wait
	at                                      int           // index in Backend.attempts until forgotten, then -1
	// in holds a small view's copy and bookkeeping inside the Attempt, so
	// that a view of one row of one span, cut into one batch, takes no
	// allocation of its own besides the Attempt and its done channel.
	in inline
}

// inline is an Attempt's room for a small view: the copy of one row and
// its one span, that row's result, and the attempt's batch when there is
// only one.
type inline struct {
	row    [1]driver.Row
	span   [1]driver.Span
	result [1]driver.Result
	batch  [1]batch
	bp     [1]*batch
}

// Done returns a channel closed once the attempt's outcome is final: the
// moment Poll starts returning true. It is the same channel every call.
// It says nothing of Quiesced.
func (a *Attempt) Done() <-chan struct{} { return a.done }

// Wait blocks until the attempt's outcome is final or ctx is done, and
// returns the outcome, or ctx.Err() with an empty Outcome if ctx ended
// first. It never calls the driver and does not cancel the attempt when ctx
// ends (call Cancel for that). Like Poll, it says nothing of Quiesced.
func (a *Attempt) Wait(ctx context.Context) (Outcome, error) {
	if end := ctx.Done(); end == nil {
		<-a.done // a context that never ends: no select
	} else {
		select {
		case <-a.done:
		case <-end:
			select {
			case <-a.done: // final as well: the outcome wins
			default:
				return Outcome{}, ctx.Err()
			}
		}
	}
	o, _ := a.Poll()
	return o, nil
}

// Poll returns the outcome and true once every batch has recorded its
// results or was dropped; until then it returns an empty Outcome (nil
// Results) and false. It never blocks on the store.
func (a *Attempt) Poll() (Outcome, bool) {
	a.b.mu.Lock()
	done, err := a.doneLocked(), a.err
	a.b.mu.Unlock()
	if !done {
		return Outcome{}, false
	}
	// Once done, results are final (only a queued batch's rows are
	// written after a batch recorded, and none is queued): the outcome is
	// built outside the lock, which a view of thousands of rows would
	// otherwise hold for the whole copy.
	o := Outcome{Err: err}
	if len(a.results) == 1 {
		one := new(struct { // a one-row outcome in one allocation
			r [1]driver.Result
			d [1]bool
		})
		o.Results, o.Delivered = one.r[:], one.d[:]
		o.Results[0] = a.results[0]
	} else {
		o.Results, o.Delivered = append([]driver.Result(nil), a.results...), make([]bool, len(a.results))
	}
	prefix := true
	for i, r := range a.results {
		o.Delivered[i] = r.Status == driver.Ready
		if prefix && o.Delivered[i] {
			o.InOrder++
		} else {
			prefix = false
		}
	}
	return o, true
}

// Quiesced returns a channel closed once no store can touch the attempt's
// slots any more: its outcome is final and every batch that started
// proved its access ended. Only then may the slots be written, fetched
// into again or given back. An attempt with an unprovable batch never
// quiesces (WaitQuiesced says so at once). Select on it beside Done and
// your own channels; a non-blocking receive asks whether it quiesced.
func (a *Attempt) Quiesced() <-chan struct{} {
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	return a.quiesced.chanLocked()
}

// WaitQuiesced blocks until the attempt quiesced (nil), until it is pinned
// by a call whose access can never be proven ended (ErrPinned: waiting
// longer cannot help, and its slots must never be reused), or until ctx
// ends (ctx.Err(): the slots are still the store's). It never calls the
// driver and does not cancel the attempt.
func (a *Attempt) WaitQuiesced(ctx context.Context) error {
	settled, err := a.quiescedOrPinned()
	if settled == nil {
		return err // quiesced (nil) or pinned
	}
	select {
	case <-settled:
	case <-ctx.Done():
	}
	if settled, err := a.quiescedOrPinned(); settled == nil {
		return err // quiesced or pinned, even if ctx ended too: that answer wins
	}
	return ctx.Err()
}

// quiescedOrPinned returns nil and nil once the attempt quiesced, nil and
// ErrPinned if it never will, and otherwise the channel closed once
// either holds (made only then, so that waiting on an attempt already
// quiesced allocates nothing).
func (a *Attempt) quiescedOrPinned() (<-chan struct{}, error) {
	a.b.mu.Lock()
	defer a.b.mu.Unlock()
	switch {
	case a.quiescedLocked():
		return nil, nil
	case a.pinnedLocked():
		return nil, ErrPinned
	}
	return a.settled.chanLocked(), nil
}

// Cancel drops the attempt's queued batches (their rows answer CANCELLED)
// and asks the driver, best effort, to cancel the ones started. It does not
// wait for them: the slots are still the store's until Quiesced. The
// outcome's Err wraps ErrCancelled, unless an earlier cause stopped the
// attempt or the outcome was already final (then Cancel changes nothing).
// It may be called more than once, from any goroutine.
func (a *Attempt) Cancel() { a.cancel(ErrCancelled) }

// cancelCause is the Err of an attempt its ctx's end cancelled.
func (a *Attempt) cancelCause() error {
	return fmt.Errorf("%w: %w", ErrCancelled, context.Cause(a.ctx))
}

func (a *Attempt) cancel(why error) {
	b := a.b
	b.mu.Lock()
	if a.doneLocked() {
		b.mu.Unlock()
		return // the outcome is final, and no call is left to cancel
	}
	a.stopLocked(why)
	var ops []driver.Operation
	for _, bt := range a.batches {
		if bt.state == started && bt.op != nil && !bt.resultsRecorded {
			ops = append(ops, bt.op)
		}
	}
	b.notifyLocked()
	b.mu.Unlock()
	for _, op := range ops {
		op.Cancel()
	}
	b.wake()
}

package backend

import (
	"context"
	"fmt"
	"strings"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Shutdown stops the backend: it refuses new work, drops queued batches
// (their rows answer CANCELLED) and waits, within ctx, for the progress
// goroutine to drain the driver, unregister every region and release the
// lender's hold. It never calls the driver itself, and it never closes the
// driver: the caller closes it after a nil return, if it wants to.
//
// Shutdown returns nil once every attempt settled and the hold was
// released: the lender may free its memory. Otherwise it returns a
// *ShutdownError saying what is left, and the lender must keep its memory:
//
//   - when ctx ends first, the error wraps ctx.Err(); the backend goes on
//     in the background, and a later Shutdown may return nil;
//   - at once, whatever ctx allows, when every open attempt is pinned by an
//     unprovable call: the answer can never change, so it does not wait;
//   - once the drained driver refused to unregister a region 12 times in
//     a row (Unregistering holds its last refusal): the region stays registered and the hold kept for good,
//     and every later Shutdown answers the same at once.
//
// Shutdown is safe to call from any goroutine and more than once; every
// call after the first only waits again.
func (b *Backend) Shutdown(ctx context.Context) error {
	b.mu.Lock()
	if !b.closing {
		b.closing = true
		for i := len(b.attempts) - 1; i >= 0; i-- { // forgetting one moves only a later one
			a := b.attempts[i]
			a.stopLocked(ErrShutDown)
			b.forgetIfQuiescedLocked(a)
		}
		b.cond.Broadcast()
		b.notifyLocked()
		b.kickProgress()
	}
	b.mu.Unlock()
	b.wake()
	for {
		b.mu.Lock()
		if b.changed == nil {
			b.changed = make(chan struct{})
		}
		finished, ch := b.finished, b.changed
		stuck := b.allOpenPinnedLocked()
		b.mu.Unlock()
		if finished {
			return nil
		}
		if stuck {
			return b.shutdownError(nil)
		}
		select {
		case <-ch:
		case <-b.done:
			// The progress goroutine exited without finishing: it found a
			// call pinned, or the driver would not unregister. Nothing will
			// change any more.
			if b.Stats().ShutDown {
				return nil
			}
			return b.shutdownError(nil)
		case <-ctx.Done():
			if b.Stats().ShutDown {
				return nil
			}
			return b.shutdownError(ctx.Err())
		}
	}
}

// ShutdownError is returned by Shutdown when the backend has not finished:
// some store may still touch the lender's memory, so the lender must keep
// it (hostmem.Lender.Close refuses while the hold is out, and must not be
// forced).
type ShutdownError struct {
	// Pinned is the number of attempts held by an unprovable call: they
	// never quiesce, and their slots must never be reused.
	Pinned int
	// Settling is the number of other attempts not yet quiesced (a call
	// still inside the driver, or an access not yet ended).
	Settling int
	// Kept lists the spans the unprovable calls named: memory a store may
	// still touch at any time.
	Kept []driver.Span
	// Registered lists the regions still registered with the driver. The
	// binding keeps the lender's hold while any is left.
	Registered []*driver.Region
	// Unregistering is the driver's last refusal to unregister a region
	// of Registered, once the backend stopped asking (nil otherwise).
	Unregistering error
	// Err is ctx.Err() when Shutdown's budget ran out first; nil when it
	// returned at once because every open attempt is pinned or the driver
	// would not unregister.
	Err error
}

func (e *ShutdownError) Error() string {
	var sb strings.Builder
	// Every attempt counted here may still have its slots written, so the
	// message leads with that, whatever the spans Kept names: a settling
	// attempt's calls are still inside the driver, and name no span.
	sb.WriteString("backend: shutdown did not finish")
	if n := e.Pinned + e.Settling; n > 0 {
		fmt.Fprintf(&sb, ": a store may still write the slots of %d attempts (%d pinned by unprovable calls, which may write them at any time; %d still settling)",
			n, e.Pinned, e.Settling)
	}
	names := make([]string, len(e.Registered))
	for i, r := range e.Registered {
		names[i] = fmt.Sprintf("%q", r.Name)
	}
	fmt.Fprintf(&sb, ", %d regions still registered [%s]; the hold is kept: keep the lender's memory", len(names), strings.Join(names, " "))
	if e.Unregistering != nil {
		sb.WriteString("; the driver would not unregister: " + e.Unregistering.Error())
	}
	if e.Err != nil {
		sb.WriteString(": " + e.Err.Error())
	}
	return sb.String()
}

// Unwrap returns ctx.Err() when the budget ran out, so errors.Is(err,
// context.DeadlineExceeded) holds.
func (e *ShutdownError) Unwrap() error { return e.Err }

func (b *Backend) shutdownError(ctxErr error) *ShutdownError {
	e := &ShutdownError{Err: ctxErr}
	b.mu.Lock()
	e.Unregistering = b.refused
	for _, a := range b.attempts {
		switch {
		case a.pinnedLocked():
			e.Pinned++
			for _, bt := range a.batches {
				if bt.unprovable {
					for _, r := range bt.rows {
						e.Kept = append(e.Kept, r.Spans...)
					}
				}
			}
		case !a.quiescedLocked():
			e.Settling++
		}
	}
	b.mu.Unlock()
	e.Registered = b.binding.Regions()
	return e
}

// allOpenPinnedLocked reports whether there is an open attempt and every
// open attempt holds an unprovable batch.
func (b *Backend) allOpenPinnedLocked() bool {
	open := 0
	for _, a := range b.attempts {
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

// Done returns a channel closed once the backend has stopped for good,
// which happens only after Shutdown: either it finished (Stats().ShutDown
// is true and every later Shutdown returns nil), or it found a call pinned
// and will never drain or unregister (every later Shutdown returns a
// *ShutdownError at once). Until then a Shutdown that returned an error
// goes on in the background. It is safe to call from any goroutine.
func (b *Backend) Done() <-chan struct{} { return b.done }

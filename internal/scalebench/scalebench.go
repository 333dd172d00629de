// Package scalebench holds the workloads that show whether the backend's
// cost per row-op stays flat as its work grows: many attempts outstanding
// at once, and views cut into many batches. A settle that grew with either
// would show here first. The backend's Go benchmarks (to profile one size
// alone) and blobbench (which prints every size side by side, the median
// over reps) run the same code.
package scalebench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
)

// RowBytes is every row's size: small, so that what is timed is the
// backend's bookkeeping, not bytes moving through a cache the slots
// outgrow.
const RowBytes = 64

// Attempts are the outstanding-attempt counts blobbench times, and
// BatchesPerView the view sizes (in one-row batches).
var (
	Attempts       = []int{16, 256, 4096}
	BatchesPerView = []int{1, 16, 256, 1024}
)

// Backend is a backend over a blocking memory store and a lender's slots,
// with no wake function: an attempt is settled by Wait and WaitQuiesced,
// as a serving runtime would, and neither allocates for an attempt that
// is already quiesced when asked, so that a benchmark counts the
// backend's cost and not its harness's. One goroutine settles its
// attempts.
type Backend struct {
	*backend.Backend
	// Slots is the lender's region: slots slots of rowBytes each.
	Slots  *driver.Region
	lender *hostmem.Lender
	d      *memory.Driver
}

// NewBackend returns a Backend configured by cfg over slots slots of
// rowBytes bytes.
func NewBackend(slots int, rowBytes int64, cfg backend.Config) (*Backend, error) {
	return NewBackendOver(slots, rowBytes, cfg, nil)
}

// NewBackendOver is NewBackend with the backend calling wrap(d), a driver
// over the memory driver d (a benchmark's timing of the calls, say);
// wrap nil calls d itself. Close closes d.
func NewBackendOver(slots int, rowBytes int64, cfg backend.Config, wrap func(d *memory.Driver) driver.Driver) (*Backend, error) {
	lender, err := hostmem.NewLender("scalebench", driver.Layout{SlotBytes: rowBytes, Slots: slots})
	if err != nil {
		return nil, err
	}
	hold, err := lender.Hold()
	if err != nil {
		_ = lender.Close()
		return nil, err
	}
	d := memory.New(memory.Options{})
	var called driver.Driver = d
	if wrap != nil {
		called = wrap(d)
	}
	bind, err := backend.Bind(context.Background(), hold.Regions(), called, hold)
	if err != nil {
		return nil, errors.Join(err, d.Close(), lender.Close())
	}
	b := &Backend{Slots: hold.Regions()[0], lender: lender, d: d}
	b.Backend, err = backend.New(bind, cfg)
	if err != nil {
		return nil, errors.Join(err, d.Close(), lender.Close())
	}
	return b, nil
}

// Forget deletes the objects of v's rows from the store, so that the next
// publish under those names inserts fresh keys again, as a serving
// engine's publishes of new blocks do, and the store's footprint stays
// steady.
func (b *Backend) Forget(v backend.View) error {
	for _, r := range v {
		key, err := b.Key(r.Name)
		if err != nil {
			return err
		}
		b.d.Store().Delete(key)
	}
	return nil
}

// Fill writes bytes into b that are neither zero nor a repeated pattern,
// for a benchmark's sources: an untouched mapping reads as the kernel's
// one zero page, which costs a copy no memory traffic and flatters every
// put.
func Fill(b []byte) {
	for i := range b {
		b[i] = byte(i*31 + i>>12)
	}
}

// Settle waits until a is done with every row delivered, then until it
// quiesces, or until ctx ends.
func (b *Backend) Settle(ctx context.Context, a *backend.Attempt) error {
	o, err := a.Wait(ctx)
	if err != nil {
		return fmt.Errorf("scalebench: attempt not done: %w", err)
	}
	if o.InOrder != len(o.Results) {
		return fmt.Errorf("scalebench: %d of %d rows delivered: %w", o.InOrder, len(o.Results), o.Err)
	}
	if err := a.WaitQuiesced(ctx); err != nil {
		return fmt.Errorf("scalebench: attempt not quiesced: %w", err)
	}
	return nil
}

// Close shuts the backend down, waiting at most a minute, then closes the
// driver and the lender.
func (b *Backend) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return errors.Join(b.Shutdown(ctx), b.d.Close(), b.lender.Close())
}

// Rig is a Backend of slots rows of RowBytes, every row already
// published.
type Rig struct {
	*Backend
	rows backend.View
}

// New returns a Rig of slots rows over a backend configured by cfg.
func New(slots int, cfg backend.Config) (*Rig, error) {
	be, err := NewBackend(slots, RowBytes, cfg)
	if err != nil {
		return nil, err
	}
	r := &Rig{Backend: be, rows: make(backend.View, slots)}
	for i := range r.rows {
		r.rows[i] = backend.ViewRow{Name: []byte(fmt.Sprint("row-", i)), Spans: []driver.Span{be.Slots.Slot(i)}}
	}
	ctx, cancel := bound(len(r.rows))
	defer cancel()
	a, err := r.Publish(ctx, r.rows)
	if err == nil {
		err = r.Settle(ctx, a)
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("scalebench: publishing the rows: %w", err), r.Close())
	}
	return r, nil
}

// submit is the ctx of the timed attempts: one that never ends, so that
// the backend registers no cancel per attempt and the figures stay the
// backend's own (bound's ctx still bounds every wait).
var submit = context.Background()

// bound returns the context a run of ops settles under: 10 s, and a
// millisecond per op (hundreds of times what one costs), so that a hang
// ends as an error instead of a stuck bench. One context per run, not per
// attempt: a timer per attempt would be the harness's cost.
func bound(ops int) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second+time.Duration(ops)*time.Millisecond)
}

// Outstanding keeps one one-row fetch in flight per row of the rig,
// settling the oldest and submitting a new one in its place ops times, and
// returns how long those ops took (filling and draining the ring are not
// timed).
func (r *Rig) Outstanding(ops int) (time.Duration, error) {
	ctx, cancel := bound(ops + 2*len(r.rows))
	defer cancel()
	n := len(r.rows)
	ring := make([]*backend.Attempt, n)
	var err error
	for i := range ring {
		if ring[i], err = r.Fetch(submit, r.rows[i:i+1]); err != nil {
			return 0, err
		}
	}
	start := time.Now()
	for i := 0; i < ops; i++ {
		if err := r.Settle(ctx, ring[i%n]); err != nil {
			return 0, err
		}
		if ring[i%n], err = r.Fetch(submit, r.rows[i%n:i%n+1]); err != nil {
			return 0, err
		}
	}
	el := time.Since(start)
	for _, a := range ring {
		if err := r.Settle(ctx, a); err != nil {
			return 0, err
		}
	}
	return el, nil
}

// Views fetches views of every row of the rig, one at a time, until at
// least ops rows were fetched, and returns how long that took and the rows
// fetched. With Config.RowsPerBatch 1 each view is one batch per row.
func (r *Rig) Views(ops int) (time.Duration, int, error) {
	ctx, cancel := bound(ops + len(r.rows))
	defer cancel()
	start := time.Now()
	rows := 0
	for rows < ops {
		a, err := r.Fetch(submit, r.rows)
		if err == nil {
			err = r.Settle(ctx, a)
		}
		if err != nil {
			return 0, 0, err
		}
		rows += len(r.rows)
	}
	return time.Since(start), rows, nil
}

// Handoff times ops round trips through a goroutine parked on a sync.Cond,
// which closes a channel the caller waits on, with no backend at all: the
// two hand-offs (submitter to a parked worker, worker back to the waiter)
// under every attempt a worker runs. It is the floor under a one-batch
// attempt's cost, which no change to the backend's bookkeeping can lower
// while only the backend's own goroutines call the driver.
func Handoff(ops int) time.Duration {
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	var queue []chan struct{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			mu.Lock()
			for len(queue) == 0 {
				cond.Wait()
			}
			ch := queue[0]
			queue = queue[1:]
			mu.Unlock()
			if ch == nil {
				return
			}
			close(ch)
		}
	}()
	start := time.Now()
	for i := 0; i < ops; i++ {
		ch := make(chan struct{}) // as an attempt's done channel is
		mu.Lock()
		queue = append(queue, ch)
		cond.Signal()
		mu.Unlock()
		<-ch
	}
	el := time.Since(start)
	mu.Lock()
	queue = append(queue, nil)
	cond.Signal()
	mu.Unlock()
	<-done
	return el
}

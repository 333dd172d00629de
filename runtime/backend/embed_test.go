package backend_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
)

// The tests in this file are an embedder's: they use the backend as a
// serving runtime does, through its exported API alone, with no wake
// function (Config.Wake is nil).

// embedded is a backend over a memory driver as an embedder builds one:
// no wake function.
type embedded struct {
	be    *backend.Backend
	d     *hookDriver
	slots *driver.Region
}

func embed(t *testing.T, opt memory.Options, cfg backend.Config) *embedded {
	t.Helper()
	lender, err := hostmem.NewLender("embed", driver.Layout{SlotBytes: slotBytes, Slots: 16})
	require.NoError(t, err)
	hold, err := lender.Hold()
	require.NoError(t, err)
	d := &hookDriver{Driver: memory.New(opt)}
	bind, err := backend.Bind(t.Context(), hold.Regions(), d, hold)
	require.NoError(t, err)
	require.Nil(t, cfg.Wake, "an embedder's test needs no wake function")
	be, err := backend.New(bind, cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := be.Shutdown(ctx); err != nil {
			t.Logf("keeping the lender's memory: %v", err)
			return
		}
		require.NoError(t, lender.Close())
	})
	return &embedded{be: be, d: d, slots: hold.Regions()[0]}
}

func (e *embedded) view(name string, from, n int) backend.View {
	v := make(backend.View, n)
	for i := range v {
		v[i] = backend.ViewRow{Name: []byte{name[0], byte(i)}, Spans: []driver.Span{e.slots.Slot(from + i)}}
	}
	return v
}

type traceKey struct{}

// TestAPublishEndsWithItsContext: the ctx given to Publish reaches the
// driver's calls, and its end cancels the attempt: the rows not started
// answer CANCELLED and never reach the driver, the call already in the
// driver runs out, and the outcome's Err says why, for errors.Is.
func TestAPublishEndsWithItsContext(t *testing.T) {
	e := embed(t, memory.Options{}, backend.Config{Workers: 1, RowsPerBatch: 1})
	g := newGate()
	e.d.before = g.hook(e.d.Driver)

	ctx, cancel := context.WithCancel(context.WithValue(t.Context(), traceKey{}, "trace-7"))
	a, err := e.be.Publish(ctx, e.view("p", 0, 3))
	require.NoError(t, err)
	<-g.entered // the first row's call is inside the driver
	cancel()
	close(g.release) // the call in the driver runs out

	o, err := a.Wait(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []driver.Status{driver.Ready, driver.Cancelled, driver.Cancelled},
		[]driver.Status{o.Results[0].Status, o.Results[1].Status, o.Results[2].Status})
	assert.Equal(t, 1, o.InOrder)
	assert.ErrorIs(t, o.Err, backend.ErrCancelled)
	assert.ErrorIs(t, o.Err, context.Canceled, "the outcome carries the ctx's cause")
	calls := e.d.Calls()
	require.Len(t, calls, 1, "the rows not started never reach the driver")
	assert.Equal(t, "trace-7", calls[0].ctx.Value(traceKey{}), "the attempt's ctx is the driver call's")
	require.NoError(t, a.WaitQuiesced(t.Context()))

	_, err = e.be.Publish(ctx, e.view("q", 4, 1))
	assert.ErrorIs(t, err, context.Canceled, "a ctx already ended is refused at submission")
}

// TestTheEndOfAQueuedAttemptsContextFinishesIt: an attempt whose every
// batch waits in the queue is final as soon as its ctx ends, while the
// only worker is still busy with another attempt's call.
func TestTheEndOfAQueuedAttemptsContextFinishesIt(t *testing.T) {
	e := embed(t, memory.Options{}, backend.Config{Workers: 1})
	g := newGate()
	e.d.before = g.hook(e.d.Driver)
	busy, err := e.be.Publish(t.Context(), e.view("b", 0, 1))
	require.NoError(t, err)
	<-g.entered // the only worker is inside the driver
	ctx, cancel := context.WithCancel(t.Context())
	queued, err := e.be.Publish(ctx, e.view("q", 4, 2))
	require.NoError(t, err)
	cancel()
	select {
	case <-queued.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the queued attempt is not final after its ctx ended")
	}
	o, _ := queued.Poll()
	assert.Equal(t, []driver.Status{driver.Cancelled, driver.Cancelled}, []driver.Status{o.Results[0].Status, o.Results[1].Status})
	assert.ErrorIs(t, o.Err, context.Canceled)
	assert.True(t, closed(queued.Quiesced()), "no row started: nothing can touch its slots")
	close(g.release)
	_, err = busy.Wait(t.Context())
	require.NoError(t, err)
}

// TestAFetchEndsWithItsDeadline: a deadline bounds an attempt as a
// cancel does, and the outcome says it was the deadline.
func TestAFetchEndsWithItsDeadline(t *testing.T) {
	e := embed(t, memory.Options{}, backend.Config{Workers: 1, RowsPerBatch: 1})
	// Every wait is bounded: an attempt whose signals never fire fails here
	// in seconds, not at the test binary's timeout.
	bounded, stop := context.WithTimeout(t.Context(), 10*time.Second)
	defer stop()
	pub, err := e.be.Publish(t.Context(), e.view("r", 0, 2))
	require.NoError(t, err)
	require.NoError(t, pub.WaitQuiesced(bounded))
	g := newGate()
	e.d.before = g.hook(e.d.Driver)
	ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(time.Hour))
	defer cancel()
	fetch, err := e.be.Fetch(ctx, e.view("r", 4, 2))
	require.NoError(t, err)
	<-g.entered
	cancel() // stands in for the deadline passing: Cause is the same kind of answer
	close(g.release)
	o, err := fetch.Wait(bounded)
	require.NoError(t, err)
	assert.Equal(t, driver.Cancelled, o.Results[1].Status)
	assert.ErrorIs(t, o.Err, backend.ErrCancelled)
}

// TestTwoGoroutinesWaitForTheirOwnAttemptsToQuiesce: two goroutines each
// wait for the attempt they submitted, at the same time, without a wake
// function: the one whose store access ends first returns first, while the
// other still waits, and the second returns once its own access ends. No
// wake-up is lost to the other waiter.
func TestTwoGoroutinesWaitForTheirOwnAttemptsToQuiesce(t *testing.T) {
	e := embed(t, memory.Options{}, backend.Config{Workers: 2})
	holdA := e.d.HoldAccessNext() // A's results come, its access stays open
	a, err := e.be.Publish(t.Context(), e.view("a", 0, 2))
	require.NoError(t, err)
	_, err = a.Wait(t.Context())
	require.NoError(t, err)
	holdB := e.d.HoldAccessNext()
	b, err := e.be.Publish(t.Context(), e.view("b", 4, 2))
	require.NoError(t, err)
	_, err = b.Wait(t.Context())
	require.NoError(t, err)

	var wg sync.WaitGroup
	quiesced := make(chan string, 2)
	for name, at := range map[string]*backend.Attempt{"A": a, "B": b} {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := at.WaitQuiesced(ctx); err != nil {
				quiesced <- name + ": " + err.Error()
				return
			}
			quiesced <- name
		})
	}
	next := func() string {
		select {
		case name := <-quiesced:
			return name
		case <-time.After(10 * time.Second):
			return "neither within 10 s"
		}
	}
	holdB()
	assert.Equal(t, "B", next(), "B's access ended first")
	assert.False(t, closed(a.Quiesced()), "A's access is still open")
	holdA()
	assert.Equal(t, "A", next())
	wg.Wait()
	assert.True(t, closed(a.Quiesced()) && closed(b.Quiesced()))
}

// TestWaitQuiescedSaysAPinnedAttemptNeverQuiesces: an attempt held by a
// call whose access can never be proven ended does not keep its waiter
// until ctx ends: WaitQuiesced answers ErrPinned at once.
func TestWaitQuiescedSaysAPinnedAttemptNeverQuiesces(t *testing.T) {
	e := embed(t, memory.Options{}, backend.Config{})
	e.d.LoseEvidenceNext()
	a, err := e.be.Publish(t.Context(), e.view("p", 0, 1))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err = a.WaitQuiesced(ctx) // it must not wait for the deadline
	assert.ErrorIs(t, err, backend.ErrPinned)
	assert.False(t, closed(a.Quiesced()))
}

// TestWaitQuiescedEndsWithItsContext: a waiter whose ctx ends first gets
// ctx.Err(), and the attempt goes on.
func TestWaitQuiescedEndsWithItsContext(t *testing.T) {
	e := embed(t, memory.Options{}, backend.Config{})
	release := e.d.HoldAccessNext()
	defer release()
	a, err := e.be.Publish(t.Context(), e.view("p", 0, 1))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.ErrorIs(t, a.WaitQuiesced(ctx), context.Canceled)
	release()
	assert.NoError(t, a.WaitQuiesced(t.Context()))
}

// TestACancelAfterTheOutcomeIsFinalChangesNothing: the outcome is final
// once done.
func TestACancelAfterTheOutcomeIsFinalChangesNothing(t *testing.T) {
	e := embed(t, memory.Options{}, backend.Config{})
	a, err := e.be.Publish(t.Context(), e.view("p", 0, 2))
	require.NoError(t, err)
	o, err := a.Wait(t.Context())
	require.NoError(t, err)
	a.Cancel()
	again, _ := a.Poll()
	assert.Equal(t, o, again)
	assert.NoError(t, again.Err)
}

// TestBindEndsWithItsContext: a ctx that ended before Bind registers
// anything leaves nothing registered and gives the hold back.
func TestBindEndsWithItsContext(t *testing.T) {
	lender, err := hostmem.NewLender("bind", driver.Layout{SlotBytes: slotBytes, Slots: 2})
	require.NoError(t, err)
	hold, err := lender.Hold()
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = backend.Bind(ctx, hold.Regions(), memory.New(memory.Options{}), hold)
	assert.ErrorIs(t, err, backend.ErrConstructionRejected)
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, hold.Released(), "nothing is registered: the hold is given back")
	require.NoError(t, lender.Close())
	assert.False(t, errors.Is(err, backend.ErrHoldKept))
}

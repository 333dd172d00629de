package backend_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
)

// pendingOp is an operation that has no results until results is set and
// whose access ends once ended is set; each Poll is signalled on polled.
type pendingOp struct {
	n              int
	results, ended *atomic.Bool
	polled         chan struct{}
}

func (o pendingOp) Poll() ([]driver.Result, bool) {
	select {
	case o.polled <- struct{}{}:
	default:
	}
	if !o.results.Load() {
		return nil, false
	}
	return make([]driver.Result, o.n), true
}
func (o pendingOp) AccessEnded() bool    { return o.ended.Load() }
func (pendingOp) AccessUnprovable() bool { return false }
func (pendingOp) Cancel()                {}

// TestAClosingBackendDrainsNoDriverWhileABatchWaitsForResults: a closing
// backend asks its driver to drain only once every open batch has its
// results and waits only for its access to end. A driver whose Drain
// tears its store client down (the way the teardown enders' do once such
// calls are all that is left) would otherwise end a call whose results
// never came; today's drivers' drains wait for calls in progress, so only
// a driver that records each Drain against the batch's state holds the
// rule. The progress goroutine is seen to poll the batch in an iteration
// begun after Shutdown returned (its drain check runs before each
// iteration's polls), so a drain it made would have been seen. (Tried: onlyAccessLeftLocked without its
// resultsRecorded test fails "drains while a batch waited for results".)
func TestAClosingBackendDrainsNoDriverWhileABatchWaitsForResults(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{SlowCall: time.Hour})
	var results, ended atomic.Bool
	polled := make(chan struct{}, 1)
	e.d.before = func(c call) (driver.Operation, error, bool) {
		return pendingOp{n: len(c.rows), results: &results, ended: &ended, polled: polled}, nil, true
	}
	var early, drains atomic.Int32
	e.d.mu.Lock()
	e.d.drain = func(context.Context) bool {
		drains.Add(1)
		if !results.Load() {
			early.Add(1)
			return false
		}
		return ended.Load()
	}
	e.d.mu.Unlock()
	a := must(e.be.Fetch(t.Context(), e.view("r", 0, 1)))
	bound.Recv(t, 10*time.Second, "the batch's first poll", polled)

	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	require.Error(t, e.be.Shutdown(ctx), "a batch is open: the budget runs out")
	select { // a poll signalled before Shutdown returned
	case <-polled:
	default:
	}
	bound.Recv(t, 10*time.Second, "a poll begun after Shutdown returned", polled)
	bound.Recv(t, 10*time.Second, "a poll of the next iteration, whose drain check came after Shutdown returned", polled)
	assert.Zero(t, early.Load(), "drains while a batch waited for results")

	results.Store(true)
	ended.Store(true)
	require.NoError(t, bound.Value(t, 10*time.Second, "Shutdown once the batch's results came and its access ended", func() error {
		return e.be.Shutdown(context.Background())
	}))
	assert.Zero(t, early.Load(), "drains while a batch waited for results")
	assert.True(t, closed(a.Quiesced()))
}

package backend_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
)

// cancelledOp is a pendingOp that reports each Cancel on cancels.
type cancelledOp struct {
	pendingOp
	cancels chan<- struct{}
}

func (o cancelledOp) Cancel() { o.cancels <- struct{}{} }

// TestCancelAsksTheStartedCallsToCancel: Attempt.Cancel asks the driver to
// cancel each started call whose results are not in (best effort), and
// none once they are; the attempt's outcome is ErrCancelled once the call answers. No
// other test had a call in the driver when its attempt was cancelled
// (tried: dropping cancel's ops = append(ops, bt.op) fails here, on the
// wait for the call's Cancel).
func TestCancelAsksTheStartedCallsToCancel(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{SlowCall: time.Hour})
	var results, ended atomic.Bool
	polled := make(chan struct{}, 1)
	cancels := make(chan struct{}, 4)
	e.d.before = func(c call) (driver.Operation, error, bool) {
		return cancelledOp{pendingOp{n: len(c.rows), results: &results, ended: &ended, polled: polled}, cancels}, nil, true
	}
	a := must(e.be.Fetch(t.Context(), e.view("r", 0, 1)))
	// The worker polls once before it records the operation, the progress
	// goroutine after: its poll means the batch is started and recorded.
	bound.Recv(t, 10*time.Second, "the worker's poll", polled)
	bound.Recv(t, 10*time.Second, "the progress goroutine's poll", polled)
	a.Cancel()
	bound.Recv(t, 10*time.Second, "the started call's Cancel", cancels)
	results.Store(true)
	ended.Store(true)
	o := wait(t, a)
	assert.ErrorIs(t, o.Err, backend.ErrCancelled)
	bound.Within(t, 10*time.Second, "the attempt quiescing", func() { <-a.Quiesced() })
	a.Cancel()
	select {
	case <-cancels:
		t.Error("a call whose results are in was asked to cancel")
	default:
	}
}

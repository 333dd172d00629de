package mooncake_test

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

// TestBackendRoundTripBetweenTwoClients publishes through one client of a
// pool and fetches through another, with four workers, byte for byte.
func TestBackendRoundTripBetweenTwoClients(t *testing.T) {
	master := fakesdk.NewMaster(0)
	const rows = 200
	open := func() (*backend.Backend, *hostmem.Lender, *hostmem.Hold) {
		lender, err := hostmem.NewLender("slots", driver.Layout{SlotBytes: 8 << 10, Slots: rows})
		require.NoError(t, err)
		hold, err := lender.Hold()
		require.NoError(t, err)
		d, err := mooncake.New(fakesdk.NewClient(master, fakesdk.Version))
		require.NoError(t, err)
		bind, err := backend.Bind(t.Context(), hold.Regions(), d, hold)
		require.NoError(t, err)
		be, err := backend.New(bind, backend.Config{Workers: 4, RowsPerBatch: 16})
		require.NoError(t, err)
		return be, lender, hold
	}
	pubBE, pubL, pubH := open()
	getBE, getL, getH := open()
	view := func(l *hostmem.Lender) backend.View {
		r := l.Regions()[0]
		v := make(backend.View, rows)
		for i := range v {
			v[i] = backend.ViewRow{Name: []byte(fmt.Sprint("block-", i)), Spans: []driver.Span{r.Slot(i)}}
		}
		return v
	}
	src, dst := view(pubL), view(getL)
	for i, r := range src {
		b := r.Spans[0].Bytes()
		for j := range b {
			b[j] = byte(i*7 + j)
		}
	}
	outcome := func(a *backend.Attempt, err error) backend.Outcome {
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		o, err := a.Wait(ctx)
		require.NoError(t, err, "the attempt did not finish within 10s")
		return o
	}
	assert.Equal(t, rows, outcome(pubBE.Publish(t.Context(), src)).InOrder)
	assert.Equal(t, rows, outcome(getBE.Fetch(t.Context(), dst)).InOrder)
	for i := range src {
		require.True(t, bytes.Equal(src[i].Spans[0].Bytes(), dst[i].Spans[0].Bytes()), "row %d", i)
	}
	for _, x := range []struct {
		be *backend.Backend
		l  *hostmem.Lender
		h  *hostmem.Hold
	}{{pubBE, pubL, pubH}, {getBE, getL, getH}} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		require.NoError(t, x.be.Shutdown(ctx))
		cancel()
		require.True(t, x.h.Released())
		require.NoError(t, x.l.Close())
	}
}

// TestBackendShutsDownAfterAFetchWhoseTransferFailed: a fetch whose get
// answered TRANSFER_FAIL from a frozen peer leaves its slots in the store's
// reach until the client is torn down; shutdown drains the driver, which
// tears the client down, so shutdown finishes and the lender gets its
// memory back, and the thawed peer lands nothing in it. While the fetch
// waits for that teardown the backend does not poll it: the teardown
// signals its end (driver.Notifier), so the backend's progress goroutine
// sleeps (before, it polled the get on its timer: 89 looks in the 200 ms
// window below, against at most 3 now).
func TestBackendShutsDownAfterAFetchWhoseTransferFailed(t *testing.T) {
	master := fakesdk.NewMaster(0)
	peer := fakesdk.NewClient(master, fakesdk.Version)
	defer func() { _ = peer.Close() }()
	master.SetOwner(peer)
	k := fakesdk.DefaultKnobs()
	k.StatusTimeout, k.TransferWait = 120*time.Second, 0 // the transfer wait gives up at once; the transfer goes on
	master.SetKnobs(k)
	lender, err := hostmem.NewLender("slots", driver.Layout{SlotBytes: 4 << 10, Slots: 2})
	require.NoError(t, err)
	hold, err := lender.Hold()
	require.NoError(t, err)
	md, err := mooncake.New(fakesdk.NewClient(master, fakesdk.Version))
	require.NoError(t, err)
	d := &countingDriver{Driver: md}
	bind, err := backend.Bind(t.Context(), hold.Regions(), d, hold)
	require.NoError(t, err)
	be, err := backend.New(bind, backend.Config{Workers: 2})
	require.NoError(t, err)
	r := lender.Regions()[0]
	src := backend.View{{Name: []byte("row"), Spans: []driver.Span{r.Slot(0)}}}
	dst := backend.View{{Name: []byte("row"), Spans: []driver.Span{r.Slot(1)}}}
	copy(r.Slot(0).Bytes(), bytes.Repeat([]byte{7}, 4<<10))
	wait := func(a *backend.Attempt, err error) (*backend.Attempt, backend.Outcome) {
		require.NoError(t, err)
		o, err := a.Wait(t.Context())
		require.NoError(t, err)
		return a, o
	}
	_, out := wait(be.Publish(t.Context(), src))
	require.Equal(t, 1, out.InOrder)
	master.FreezePeer()
	fetch, out := wait(be.Fetch(t.Context(), dst))
	require.Equal(t, driver.Fault, out.Results[0].Status, out.Results[0].Text)
	// A window in which a timer-polled operation is polled ~100 times (the
	// backend backs off to a poll every 2 ms) and a signalled one not once
	// more after its first look.
	wctx, wcancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	assert.ErrorIs(t, fetch.WaitQuiesced(wctx), context.DeadlineExceeded, "the fetch waits for the teardown")
	wcancel()
	t.Logf("the backend looked at the waiting get %d times in 200 ms", d.looks.Load())
	assert.LessOrEqual(t, d.looks.Load(), int64(3), "the backend looked at the waiting get only when it was handed over, not on a timer")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, be.Shutdown(ctx), "shutdown tears the client down to end the fetch's access")
	require.True(t, hold.Released())
	master.ThawPeer()
	assert.Equal(t, make([]byte, 4<<10), r.Slot(1).Bytes(), "nothing landed after the teardown")
	require.NoError(t, d.Close())
	require.NoError(t, lender.Close())
}

// countingDriver counts how often the backend asks a get's operation
// whether its access ended. Its operations are Notifiers and
// TeardownEnders exactly when the driver's are.
type countingDriver struct {
	driver.Driver
	looks atomic.Int64
}

func (c *countingDriver) Get(ctx context.Context, rows []driver.Row, h driver.Hint) (driver.Operation, error) {
	op, err := c.Driver.Get(ctx, rows, h)
	if err != nil {
		return op, err
	}
	co := countingOp{Operation: op, looks: &c.looks}
	n, notifies := op.(driver.Notifier)
	te, says := op.(driver.TeardownEnder)
	switch {
	case notifies && says:
		return struct {
			countingOp
			driver.Notifier
			driver.TeardownEnder
		}{co, n, te}, nil
	case notifies:
		return struct {
			countingOp
			driver.Notifier
		}{co, n}, nil
	case says:
		return struct {
			countingOp
			driver.TeardownEnder
		}{co, te}, nil
	}
	return co, nil
}

type countingOp struct {
	driver.Operation
	looks *atomic.Int64
}

func (o countingOp) AccessEnded() bool {
	o.looks.Add(1)
	return o.Operation.AccessEnded()
}

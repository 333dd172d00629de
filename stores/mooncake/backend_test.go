package mooncake_test

import (
	"bytes"
	"context"
	"fmt"
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
	assert.Equal(t, rows, outcome(getBE.Fetch(t.Context(), dst, driver.Hint{})).InOrder)
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
// memory back, and the thawed peer lands nothing in it.
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
	d, err := mooncake.New(fakesdk.NewClient(master, fakesdk.Version))
	require.NoError(t, err)
	bind, err := backend.Bind(t.Context(), hold.Regions(), d, hold)
	require.NoError(t, err)
	be, err := backend.New(bind, backend.Config{Workers: 2})
	require.NoError(t, err)
	r := lender.Regions()[0]
	src := backend.View{{Name: []byte("row"), Spans: []driver.Span{r.Slot(0)}}}
	dst := backend.View{{Name: []byte("row"), Spans: []driver.Span{r.Slot(1)}}}
	copy(r.Slot(0).Bytes(), bytes.Repeat([]byte{7}, 4<<10))
	wait := func(a *backend.Attempt, err error) backend.Outcome {
		require.NoError(t, err)
		o, err := a.Wait(t.Context())
		require.NoError(t, err)
		return o
	}
	require.Equal(t, 1, wait(be.Publish(t.Context(), src)).InOrder)
	master.FreezePeer()
	out := wait(be.Fetch(t.Context(), dst, driver.Hint{}))
	require.Equal(t, driver.Fault, out.Results[0].Status, out.Results[0].Text)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, be.Shutdown(ctx), "shutdown tears the client down to end the fetch's access")
	require.True(t, hold.Released())
	master.ThawPeer()
	assert.Equal(t, make([]byte, 4<<10), r.Slot(1).Bytes(), "nothing landed after the teardown")
	require.NoError(t, d.Close())
	require.NoError(t, lender.Close())
}

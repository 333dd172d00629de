package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/redis"
)

// TestCloseDropsTheKeptBuffers: a driver keeps its object buffers between
// calls (a put's and a get's), and Close lets them go, so a closed driver
// a caller still holds pins none of them. (Tried: Close without
// bufs.drop keeps them.)
func TestCloseDropsTheKeptBuffers(t *testing.T) {
	redis7.Need(t)
	d, err := redis.Open(context.Background(), redis.Options{Addrs: []string{redis7.Value().Addr}})
	require.NoError(t, err)
	r, err := hostmem.Map("slots", driver.Layout{SlotBytes: 64 << 10, Slots: 2})
	require.NoError(t, err)
	defer r.Close()
	reg, err := d.Register(r.Region)
	require.NoError(t, err)
	key := "bufs/v1/00"
	for _, call := range []func() (driver.Operation, error){
		func() (driver.Operation, error) {
			return d.Put(context.Background(), []driver.Row{{Key: key, Spans: []driver.Span{r.Slot(0)}}})
		},
		func() (driver.Operation, error) {
			return d.Get(context.Background(), []driver.Row{{Key: key, Spans: []driver.Span{r.Slot(1)}}}, driver.Hint{})
		},
	} {
		op, err := call()
		require.NoError(t, err)
		require.True(t, conformance.WaitAccess(op, 5*time.Second))
		res, done := op.Poll()
		require.True(t, done)
		require.Equal(t, driver.Ready, res[0].Status, "%v", res[0])
	}
	assert.Positive(t, redis.IdleBufferBytes(d), "buffers kept between calls")
	require.True(t, d.Drain(conformance.Within(5*time.Second)))
	require.NoError(t, d.Unregister(reg))
	require.NoError(t, d.Close())
	assert.Zero(t, redis.IdleBufferBytes(d), "buffers kept after Close")
}

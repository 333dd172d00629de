package redis_test

import (
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
	"github.com/kvblob/kvblob/stores/trailer"
)

// TestAnAbortedTransactionIsRetriedAloneWithoutAScript: on a standalone
// server a put stores with WATCH/MULTI/EXEC; when a watched key changes
// before EXEC the transaction aborts and each of its rows is stored in a
// transaction of its own, never by a script (a tenant may not EVAL):
// READY while the key still holds this writer's marker, LOST (a FAULT, the
// other writer's value kept) once it does not.
func TestAnAbortedTransactionIsRetriedAloneWithoutAScript(t *testing.T) {
	redis7.Need(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		touch func(c goredis.UniversalClient, key string) // just before MULTI
		want  driver.Status
	}{
		{"marker-rewritten", func(c goredis.UniversalClient, key string) {
			v := c.Get(ctx, key).Val()
			require.NoError(t, c.Set(ctx, key, v, 0).Err()) // same bytes, but the key was touched
		}, driver.Ready},
		{"marker-taken", func(c goredis.UniversalClient, key string) {
			require.NoError(t, c.Set(ctx, key, "another writer's object", 0).Err())
		}, driver.Fault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := rediskit.NewFaults()
			d, err := redis.Open(ctx, redis.Options{Addrs: []string{redis7.Value().Addr}, Hooks: []goredis.Hook{f}})
			require.NoError(t, err)
			c := d.Client()
			require.NoError(t, c.FlushAll(ctx).Err())
			lender, err := hostmem.NewLender("t", driver.Layout{SlotBytes: 4096, Slots: 1})
			require.NoError(t, err)
			hold, _ := lender.Hold()
			region := hold.Regions()[0]
			reg, err := d.Register(region)
			require.NoError(t, err)
			copy(region.Mem, "payload")
			const key = "kv/v1/abort"
			op, err := d.Put(ctx, []driver.Row{{Key: "kv/v1/first", Spans: []driver.Span{region.Slot(0)}}}) // the driver asks once whether it may MULTI
			require.NoError(t, err)
			res, _ := op.Poll()
			require.Equal(t, driver.Ready, res[0].Status, res[0].Text)
			f.Before("multi", "", func() { tc.touch(c, key) })
			scripted := false
			f.Before("eval", key, func() { scripted = true })

			op, err = d.Put(ctx, []driver.Row{{Key: key, Spans: []driver.Span{region.Slot(0)}}})
			require.NoError(t, err)
			res, _ = op.Poll()
			assert.Equal(t, tc.want, res[0].Status, res[0].Text)
			assert.False(t, scripted, "the aborted row went to the script")
			v, err := c.Get(ctx, key).Bytes()
			require.NoError(t, err)
			if tc.want == driver.Ready {
				payload, err := trailer.Check(v, key)
				require.NoError(t, err)
				assert.Equal(t, region.Mem, payload)
			} else {
				assert.Contains(t, res[0].Text, "marker expired")
				assert.Equal(t, "another writer's object", string(v))
			}
			assert.True(t, d.Drain(ctx))
			require.NoError(t, d.Unregister(reg), "%v", reg)
			require.NoError(t, d.Close())
			require.NoError(t, hold.Release())
			require.NoError(t, lender.Close())
		})
	}
}

// TestAClaimedKeyWhoseGETNoLongerAnswersTheMarkerIsLost: on a standalone
// Redis 7 the claim, a WATCH and a GET of the key go out in one pipeline;
// a claimed row whose GET does not answer this writer's marker (here the
// fault hook turns the reply into a nil, as for a marker that expired
// between the claim and the WATCH) is LOST, a FAULT, and is never stored:
// no transaction stores it, and the release deletes only the marker, so
// the key ends absent, not holding the object (a stored object would be
// left there: the release deletes a key only while it holds the marker).
func TestAClaimedKeyWhoseGETNoLongerAnswersTheMarkerIsLost(t *testing.T) {
	redis7.Need(t)
	ctx := context.Background()
	f := rediskit.NewFaults()
	fx := newFx(t, redis7.Value().Addr, f)
	c := fx.d.Client()
	copy(fx.r.Slot(0).Bytes(), "payload")
	const key = "kv/v1/lost-at-get"
	require.NoError(t, c.Del(ctx, key).Err())
	t.Cleanup(func() { _ = c.Del(ctx, key).Err() })
	f.Error("getrange", key, goredis.Nil)

	op, err := fx.d.Put(ctx, []driver.Row{{Key: key, Spans: []driver.Span{fx.r.Slot(0)}}})
	require.NoError(t, err)
	res, _ := op.Poll()
	assert.Equal(t, driver.Fault, res[0].Status, res[0].Text)
	assert.Contains(t, res[0].Text, "marker expired")
	assert.Equal(t, int64(0), c.Exists(ctx, key).Val(), "the key holds %q: a LOST row was stored, or its marker kept", c.Get(ctx, key).Val())
}

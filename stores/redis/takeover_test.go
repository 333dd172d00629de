package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
)

// TestAnotherWritersMarkerIsNeverTakenAsOurs: on a standalone Redis 7 a
// put claims its key, WATCHes it and GETs it in one pipeline, and stores
// only the keys whose GET answered this writer's own marker. When the GET
// answers another writer's marker (ours expired and another writer
// claimed the key in between), the row is LOST (a FAULT) and the put
// stores nothing over it.
func TestAnotherWritersMarkerIsNeverTakenAsOurs(t *testing.T) {
	redis7.Need(t)
	ctx := context.Background()
	f := rediskit.NewFaults()
	d, err := redis.Open(ctx, redis.Options{Addrs: []string{redis7.Value().Addr}, Hooks: []goredis.Hook{f}})
	require.NoError(t, err)
	r, err := hostmem.Map("slots", driver.Layout{SlotBytes: 4096, Slots: 1})
	require.NoError(t, err)
	reg, err := d.Register(r.Region)
	require.NoError(t, err)
	defer func() {
		require.True(t, d.Drain(ctx))
		require.NoError(t, d.Unregister(reg))
		require.NoError(t, d.Close())
		require.NoError(t, r.Close())
	}()
	copy(r.Mem, "payload")
	first, err := driver.Key("takeover", []byte(t.Name()+"/first"))
	require.NoError(t, err)
	key, err := driver.Key("takeover", []byte(t.Name()))
	require.NoError(t, err)
	require.NoError(t, d.Client().Del(ctx, first, key).Err())
	op, err := d.Put(ctx, []driver.Row{{Key: first, Spans: []driver.Span{r.Slot(0)}}}) // the driver asks once whether it may MULTI
	require.NoError(t, err)
	res, _ := op.Poll()
	require.Equal(t, driver.Ready, res[0].Status, res[0].Text)

	f.Reply("getrange", key, rediskit.Marker)
	op, err = d.Put(ctx, []driver.Row{{Key: key, Spans: []driver.Span{r.Slot(0)}}})
	require.NoError(t, err)
	res, _ = op.Poll()
	assert.Equal(t, driver.Fault, res[0].Status, "a key whose GET answered another writer's marker is LOST: %v", res[0])
	n, err := d.Client().Exists(ctx, key).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the put stored over a key it did not hold, or left its marker")
}

// TestAReleaseNeverDeletesAMarkerAnotherWriterTookOver: a put whose store
// failed releases its marker on a standalone Redis 7 by WATCHing the key,
// reading it, and deleting it in MULTI/EXEC only if it held this writer's
// marker. When the key changes between that read and the EXEC (this
// writer's marker expired and another writer claimed the key), the WATCH
// aborts the transaction: the other writer's marker stays, so readers
// still see the key as being written and a third writer is kept out
// (tried: dropping the release's WATCH deletes the other writer's marker).
func TestAReleaseNeverDeletesAMarkerAnotherWriterTookOver(t *testing.T) {
	redis7.Need(t)
	ctx := context.Background()
	f := rediskit.NewFaults()
	fx := newFx(t, redis7.Value().Addr, f)
	c := fx.d.Client()
	copy(fx.r.Slot(0).Bytes(), "payload")
	key, err := driver.Key("takeover", []byte(t.Name()))
	require.NoError(t, err)
	require.NoError(t, c.Del(ctx, key).Err())
	t.Cleanup(func() { _ = c.Del(ctx, key).Err() })

	// The put's own WATCH fails, so its store fails and it releases.
	f.Error("watch", key, rediskit.RedisError("ERR injected by the test"))
	took := false
	f.Before("multi", key, func() {
		took = true
		assert.NoError(t, c.Set(ctx, key, rediskit.Marker, time.Minute).Err()) // maybe not on the test goroutine
	})
	op, err := fx.d.Put(ctx, []driver.Row{{Key: key, Spans: []driver.Span{fx.r.Slot(0)}}})
	require.NoError(t, err)
	res, _ := op.Poll()
	assert.Equal(t, driver.Fault, res[0].Status, "%v", res[0])
	require.True(t, took, "the release's transaction never ran")
	v, err := c.Get(ctx, key).Result()
	require.NoError(t, err, "the release deleted the marker another writer took over")
	assert.Equal(t, rediskit.Marker, v)
}

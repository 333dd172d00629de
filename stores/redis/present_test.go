package redis_test

import (
	"bytes"
	"context"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
	"github.com/kvblob/kvblob/stores/trailer"
)

// TestAPutOverAKeyHoldingAnotherObjectIsNotReady: when a put's claim finds
// the key present, it is READY only if the key holds this row's whole
// object: the same bytes at the same length. An object of the row's length
// with other bytes, the row's bytes with one more, or the row's bytes less
// the last, is another writer's row (a FAULT, never READY), and the key
// keeps it.
func TestAPutOverAKeyHoldingAnotherObjectIsNotReady(t *testing.T) {
	redis7.Need(t)
	ctx := context.Background()
	const n = 1000
	own := bytes.Repeat([]byte{0x5A}, n)
	other := bytes.Repeat([]byte{0x5A}, n)
	other[n/2] ^= 0xFF
	for _, tc := range []struct {
		name    string
		planted []byte
		want    driver.Status
	}{
		{"the row's own object", own, driver.Ready},
		{"the row's length, other bytes", other, driver.Fault},
		{"the row's bytes and one more", append(append([]byte{}, own...), 0x5A), driver.Fault},
		{"the row's bytes less the last", own[:n-1], driver.Fault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFx(t, redis7.Value().Addr)
			key, err := driver.Key("present", []byte(t.Name()))
			require.NoError(t, err)
			obj := trailer.Encode(key, tc.planted)
			require.NoError(t, f.d.Client().Set(ctx, key, obj, 0).Err())
			span := f.r.Slot(0)
			span.Length = n
			copy(span.Bytes(), own)
			op, err := f.d.Put(ctx, []driver.Row{{Key: key, Spans: []driver.Span{span}}})
			require.NoError(t, err)
			res, done := op.Poll()
			require.True(t, done)
			assert.Equal(t, tc.want, res[0].Status, "%v", res[0])
			v, err := f.d.Client().Get(ctx, key).Bytes()
			require.NoError(t, err)
			assert.Equal(t, obj, v, "the key keeps what it held")
		})
	}
}

// TestAKeyThatVanishesBetweenClaimAndReadIsNotReady: a put whose claim
// (SET NX) found the key present reads it (GETRANGE) to answer whether it
// holds this row; when the key is gone by then (its writer's marker
// expired, or a sweep removed it), the row is NOT_READY (ask again: the
// key is free), never READY and never another writer's row (FAULT), and
// the put writes nothing under the key. The key holds another row's
// object at the claim, which read would be a FAULT. Staged through the
// client's hook, not by timing: on the claim-then-read path (a user the
// server refuses MULTI, so the put does not transact) the key is deleted
// for real just before the read is sent; on the transacting path, whose
// claim and read go out in one pipeline no hook can run inside, the read
// answers what GETRANGE answers for an absent key (""). Fails with
// present's empty-read case dropped (both rows then FAULT; tried).
func TestAKeyThatVanishesBetweenClaimAndReadIsNotReady(t *testing.T) {
	redis7.Need(t)
	ctx := context.Background()
	const n = 1000
	own := bytes.Repeat([]byte{0x5A}, n)
	other := bytes.Repeat([]byte{0xA5}, n)
	for _, tc := range []struct {
		name   string
		stage  func(f *rediskit.Faults, del func(), key string)
		stored bool // the key still holds what was planted after the put
	}{
		{"claim, then read: deleted in between", func(f *rediskit.Faults, del func(), key string) {
			f.Error("multi", "", rediskit.RedisError("NOPERM User tenant has no permissions to run the 'multi' command"))
			f.Before("getrange", key, del)
		}, false},
		{"claim and read in one pipeline: read as absent", func(f *rediskit.Faults, del func(), key string) {
			f.Reply("getrange", key, "")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			faults := rediskit.NewFaults()
			f := newFx(t, redis7.Value().Addr, faults)
			key, err := driver.Key("vanish", []byte(t.Name()))
			require.NoError(t, err)
			planted := trailer.Encode(key, other)
			require.NoError(t, f.d.Client().Set(ctx, key, planted, 0).Err())
			deleted := false
			tc.stage(faults, func() {
				require.NoError(t, f.d.Client().Del(ctx, key).Err())
				deleted = true
			}, key)
			span := f.r.Slot(0)
			span.Length = n
			copy(span.Bytes(), own)
			op, err := f.d.Put(ctx, []driver.Row{{Key: key, Spans: []driver.Span{span}}})
			require.NoError(t, err)
			res, done := op.Poll()
			require.True(t, done)
			assert.Equal(t, driver.NotReady, res[0].Status, "%v", res[0])
			assert.Equal(t, !tc.stored, deleted, "the stage ran where it should")
			v, err := f.d.Client().Get(ctx, key).Bytes()
			if tc.stored {
				require.NoError(t, err)
				assert.Equal(t, planted, v, "the put wrote nothing under the key")
				return
			}
			assert.ErrorIs(t, err, goredis.Nil, "the put wrote nothing under the vanished key")
		})
	}
}

package redis_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
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

package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/trailer"
)

// markerMagic and aMarker are how the driver's pending markers look: the
// magic, then a claim.Token's 32 hex digits.
const (
	markerMagic = "kvblob-pending:"
	aMarker     = markerMagic + "0123456789abcdef0123456789abcdef"
)

// TestAPayloadThatLooksLikeAMarkerIsARow: a marker and an object share a
// key, so a row's payload may begin with a marker's bytes, or be one. Such
// a row is stored, read back READY with its bytes, and put again READY
// (the key holds its whole object), on Redis 7 and Valkey 8.1, with the
// trailer unkeyed and keyed. When a marker was told by its prefix before
// the trailer was checked, each of these rows was stored READY with no
// expiry and then answered NOT_READY to every get and every put, forever.
func TestAPayloadThatLooksLikeAMarkerIsARow(t *testing.T) {
	require.True(t, trailer.IsMarker([]byte(aMarker)), "aMarker is no longer what a marker looks like")
	in, err := trailer.NewIntegrity(bytes.Repeat([]byte{7}, 32), nil)
	require.NoError(t, err)
	payloads := []struct {
		name    string
		payload []byte
	}{
		{"the magic then 4000 bytes", append([]byte(markerMagic), bytes.Repeat([]byte("x"), 4000)...)},
		{"a whole marker", []byte(aMarker)},
		{"the magic alone", []byte(markerMagic)},
		{"the magic's first 3 bytes (an object of a marker's length)", []byte(markerMagic[:3])},
		{"a marker twice", []byte(aMarker + aMarker)},
	}
	for _, b := range builds() {
		for _, keyed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/keyed=%v", b.build.Name, keyed), func(t *testing.T) {
				b.owned.Need(t)
				opt := redis.Options{Addrs: []string{b.owned.Value().Addr}}
				if keyed {
					opt.Integrity = in
				}
				a := openTenant(t, opt)
				ctx := context.Background()
				for i, p := range payloads {
					key := fmt.Sprintf("framing/v1/%x%02x", time.Now().UnixNano(), i)
					t.Cleanup(func() { _ = a.d.Client().Del(ctx, key).Err() })
					copy(a.r.Slot(0).Bytes(), p.payload)
					a.fill(1, 0xEE)
					n := int64(len(p.payload))
					src := driver.Row{Key: key, Spans: []driver.Span{{Region: a.r.Region, Offset: 0, Length: n}}}
					dst := driver.Row{Key: key, Spans: []driver.Span{{Region: a.r.Region, Offset: a.r.Layout.SlotBytes, Length: n}}}

					res := a.put(t, src)
					require.Equal(t, driver.Ready, res[0].Status, "%s: put: %v", p.name, res[0])
					res = a.get(t, dst)
					assert.Equal(t, driver.Ready, res[0].Status, "%s: get: %v", p.name, res[0])
					assert.Equal(t, p.payload, dst.Spans[0].Bytes(), "%s: the bytes read", p.name)
					res = a.put(t, src)
					assert.Equal(t, driver.Ready, res[0].Status, "%s: the second put: %v", p.name, res[0])
				}
			})
		}
	}
}

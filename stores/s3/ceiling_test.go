package s3_test

import (
	"testing"
	"time"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/s3"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
)

// TestACallNeverHasMoreThanRowsInFlightRows: a call of more rows than
// Options.RowsInFlight has exactly that many requests in flight at once
// (put for a put, get for a get), at the default and at limits set, one
// included: never every row of the call at once (a request and a
// connection each), which the floor's test,
// TestACallsRowsAreInFlightTogether, cannot see.
func TestACallNeverHasMoreThanRowsInFlightRows(t *testing.T) {
	e := gw.Need(t)
	for _, c := range []struct {
		name       string
		set, limit int
	}{
		{"default", 0, s3.DefaultRowsInFlight},
		{"one", 1, 1},
		{"three", 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			kit := s3kit.OpenWith(t, e, func(o *s3.Options) { o.RowsInFlight = c.set })
			f := storekit.NewFxSized(t, kit, 5*time.Second, driver.Layout{SlotBytes: 4 << 10, Slots: s3.DefaultRowsInFlight + 2})
			keys := make([]string, s3.DefaultRowsInFlight+2) // more than every limit here
			for i := range keys {
				keys[i] = key(t, string(rune('a'+i)))
			}
			f.RowsInFlightAtMost(t, kit.Seam, "put", "get", keys, c.limit)
		})
	}
}

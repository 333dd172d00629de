package fs_test

import (
	"os"
	"testing"
	"time"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/stores/fs"
)

// TestACallNeverHasMoreThanRowsInFlightRows: a call of more rows than
// Options.RowsInFlight has exactly that many inside their store call at
// once (claim for a put, read for a get), at the default and at limits
// set, one included: never every row of the call at once (a file each),
// which the floor's test, TestACallsRowsAreInFlightTogether, cannot see.
func TestACallNeverHasMoreThanRowsInFlightRows(t *testing.T) {
	for _, c := range []struct {
		name       string
		set, limit int
	}{
		{"default", 0, fs.DefaultRowsInFlight},
		{"one", 1, 1},
		{"three", 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, err := os.MkdirTemp(tree.Value().Dir, "ceiling-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = os.RemoveAll(root) })
			seam := &driverkit.Seam{}
			d, err := fs.Open(fs.Options{Root: root, Seam: seam, RowsInFlight: c.set})
			if err != nil {
				t.Fatal(err)
			}
			f := storekit.NewFx(t, d, 5*time.Second)
			keys := make([]string, 8) // the fixture's slots; more than every limit here
			for i := range keys {
				keys[i] = key(t, string(rune('a'+i)))
			}
			f.RowsInFlightAtMost(t, seam, "claim", "read", keys, c.limit)
		})
	}
}

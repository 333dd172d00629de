package fs_test

import (
	"testing"

	"github.com/kvblob/kvblob/stores/fs"
)

// TestACallsRowsAreInFlightTogether: a call of DefaultRowsInFlight rows
// (the kit's driver keeps the default) has every row inside its store
// call at once, for puts (claim) and gets (read) alike: each row is held
// in the seam until all are in, which a driver sending the rows one after
// another never reaches (it fails on the wait's timeout).
func TestACallsRowsAreInFlightTogether(t *testing.T) {
	f := newFx(t)
	keys := make([]string, fs.DefaultRowsInFlight)
	for i := range keys {
		keys[i] = key(t, string(rune('a'+i)))
	}
	f.RowsInFlightTogether(t, f.kit.Seam, "claim", "read", keys)
}

package s3_test

import (
	"testing"
	"time"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/stores/s3"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
)

// TestACallsRowsAreInFlightTogether: a call of DefaultRowsInFlight rows
// (the kit's driver keeps the default) has every row inside its store
// call at once, for puts (claim) and gets (read) alike: each row is held
// in the seam until all are in, which a driver sending the rows one after
// another never reaches (it fails on the wait's timeout).
func TestACallsRowsAreInFlightTogether(t *testing.T) {
	kit := s3kit.Open(t, gw.Value())
	f := &fx{Fx: storekit.NewFx(t, kit, 5*time.Second), kit: kit}
	keys := make([]string, s3.DefaultRowsInFlight)
	for i := range keys {
		keys[i] = key(t, string(rune('a'+i)))
	}
	f.RowsInFlightTogether(t, kit.Seam, "put", "get", keys)
}

// fx is a kit driver with a registered region of 64 KiB slots.
type fx struct {
	*storekit.Fx
	kit *s3kit.Driver
}

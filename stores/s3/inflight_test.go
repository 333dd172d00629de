package s3_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/blockingfx"
	"github.com/kvblob/kvblob/internal/s3kit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/s3"
)

// TestACallsRowsAreInFlightTogether: a call of DefaultRowsInFlight rows
// (the kit's driver keeps the default) has every row inside its store
// call at once, for puts (claim) and gets (read) alike: each row is held
// in the seam until all are in, which a driver sending the rows one after
// another never reaches (it fails on the wait's timeout).
func TestACallsRowsAreInFlightTogether(t *testing.T) {
	for _, c := range []struct {
		call string
		run  func(f *fx, rows []driver.Row) []driver.Result
	}{
		{"put", func(f *fx, rows []driver.Row) []driver.Result { return f.Put(rows...) }},
		{"get", func(f *fx, rows []driver.Row) []driver.Result { return f.Get(rows...) }},
	} {
		t.Run(c.call, func(t *testing.T) {
			kit := s3kit.Open(t, env)
			f := &fx{Fx: blockingfx.New(t, kit, 5*time.Second), kit: kit}
			rows := make([]driver.Row, s3.DefaultRowsInFlight)
			var entered []<-chan struct{}
			var releases []func()
			for i := range rows {
				k := key(t, string(rune('a'+i)))
				rows[i] = f.Row(k, i, blockingfx.Dest)
				in, release := f.kit.Seam.Hold(c.call, k)
				entered, releases = append(entered, in), append(releases, release)
			}
			done := make(chan []driver.Result)
			go func() { done <- c.run(f, rows) }()
			for i, in := range entered {
				select {
				case <-in:
				case <-time.After(10 * time.Second):
					t.Errorf("row %d never entered its %s while the others were held: the rows go one after another", i, c.call)
				}
			}
			for _, release := range releases {
				release()
			}
			res := <-done
			require.Len(t, res, len(rows))
			for i, r := range res {
				assert.NotEqual(t, driver.Cancelled, r.Status, "row %d ran", i)
			}
		})
	}
}

// fx is a kit driver with a registered region of 64 KiB slots.
type fx struct {
	*blockingfx.Fx
	kit *s3kit.Driver
}

package storekit

import (
	"testing"
	"time"

	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
)

// RowsInFlightTogether checks that a put ("put" names the spec call a put
// makes per row) and a get (likewise "get") of one row per key have every
// row inside its store call at once: each row is held in seam until all
// are in, which a driver that sends a call's rows one after another never
// reaches (the check then fails on the wait's bound, not on a sleep). The
// rows must fit the fixture's slots.
func (f *Fx) RowsInFlightTogether(t *testing.T, seam *driverkit.Seam, put, get string, keys []string) {
	t.Helper()
	for _, c := range []struct {
		call string
		run  func(rows []driver.Row) []driver.Result
	}{
		{put, func(rows []driver.Row) []driver.Result { return f.Put(rows...) }},
		{get, func(rows []driver.Row) []driver.Result { return f.Get(rows...) }},
	} {
		rows := make([]driver.Row, len(keys))
		var entered []<-chan struct{}
		var releases []func()
		for i, k := range keys {
			rows[i] = f.Row(k, i, Dest)
			in, release := seam.Hold(c.call, k)
			entered, releases = append(entered, in), append(releases, release)
		}
		done := make(chan []driver.Result)
		go func() { done <- c.run(rows) }()
		wait := time.NewTimer(10 * time.Second) // for all the rows: a driver that runs none waits it once, not once a row
		for i, in := range entered {
			select {
			case <-in:
			case <-wait.C:
				t.Errorf("rows %d to %d never entered their %s while the others were held: the rows go one after another, or never run", i, len(entered)-1, c.call)
			}
			if t.Failed() {
				break
			}
		}
		wait.Stop()
		for _, release := range releases {
			release()
		}
		res := bound.Recv(t, fxCallBound+10*time.Second, c.call+"'s results", done)
		if len(res) != len(rows) {
			t.Fatalf("%s answered %d results for %d rows", c.call, len(res), len(rows))
		}
		for i, r := range res {
			if r.Status == driver.Cancelled {
				t.Errorf("%s: row %d never ran: %v", c.call, i, r)
			}
		}
	}
}

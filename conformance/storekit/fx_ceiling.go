package storekit

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
)

// RowsInFlightAtMost checks a rows-in-flight limit at its ceiling: a put
// ("put" names the spec call a put makes per row) and a get (likewise
// "get") of one row per key, more keys than limit, never have more than
// limit rows inside their store call at once. Every row is held in seam;
// once every goroutine of the call is blocked (testing/synctest's Wait,
// so the count is exact and no sleep decides it) exactly limit rows must
// have entered: fewer is a driver that runs rows one after another, more
// one that opens every row of a call at once (a file or a request each).
// The call's context is then cancelled and the held rows released: the
// rows that entered finish as their store answers a cancelled call, and
// every other row is CANCELLED, never started. Every key is put first, so
// a get's rows all reach their store call. The rows must fit the
// fixture's slots.
func (f *Fx) RowsInFlightAtMost(t *testing.T, seam *driverkit.Seam, put, get string, keys []string, limit int) {
	t.Helper()
	if len(keys) <= limit {
		t.Fatalf("RowsInFlightAtMost needs more keys than the limit (%d), got %d", limit, len(keys))
	}
	// Every key holds an object first, so each get's row reaches its
	// store call (a missing one may answer MISS before it).
	setup := make([]driver.Row, len(keys))
	for i, k := range keys {
		setup[i] = f.Row(k, i, byte(i))
	}
	for i, r := range f.Put(setup...) {
		if r.Status != driver.Ready {
			t.Fatalf("putting row %d before the check: %v", i, r)
		}
	}
	for _, c := range []struct {
		call string
		run  func(ctx context.Context, rows []driver.Row) (driver.Operation, error)
	}{
		{put, func(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
			return f.Driver.Put(ctx, rows)
		}},
		{get, func(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
			return f.Driver.Get(ctx, rows, driver.Hint{})
		}},
	} {
		rows := make([]driver.Row, len(keys))
		for i, k := range keys {
			rows[i] = f.Row(k, i, Dest)
		}
		synctest.Test(t, func(t *testing.T) {
			var entered []<-chan struct{}
			var releases []func()
			for _, k := range keys {
				in, release := seam.Hold(c.call, k)
				entered, releases = append(entered, in), append(releases, release)
			}
			ctx, cancel := context.WithCancel(context.Background())
			type answer struct {
				op  driver.Operation
				err error
			}
			done := make(chan answer, 1)
			go func() {
				op, err := c.run(ctx, rows)
				done <- answer{op, err}
			}()
			synctest.Wait() // every row that can enter has entered and waits in the seam
			var in []int
			for i, ch := range entered {
				select {
				case <-ch:
					in = append(in, i)
				default:
				}
			}
			if len(in) != limit {
				t.Errorf("%s of %d rows: %d rows (%v) inside the store call at once, want %d (the limit)", c.call, len(keys), len(in), in, limit)
			}
			cancel()
			for _, release := range releases {
				release()
			}
			a := <-done
			if a.err != nil {
				t.Fatalf("%s: %v", c.call, a.err)
			}
			res, finished := a.op.Poll()
			if !finished || len(res) != len(rows) {
				t.Fatalf("%s answered %d results (finished %v) for %d rows", c.call, len(res), finished, len(rows))
			}
			ran := map[int]bool{}
			for _, i := range in {
				ran[i] = true
			}
			for i, r := range res {
				if !ran[i] && r.Status != driver.Cancelled {
					t.Errorf("%s: row %d never entered its store call before the cancel, yet answered %v, want CANCELLED", c.call, i, r)
				}
			}
			if n := seam.Armed(); n != len(keys)-len(in) {
				t.Errorf("%s: %d holds left unused, want %d (one a row that never started)", c.call, n, len(keys)-len(in))
			}
			// The holds of rows that never started stay armed (released):
			// take them here, inside the bubble their channels belong to,
			// so the next call's rows are held afresh.
			seam.Enter(c.call, keys...)
		})
	}
}

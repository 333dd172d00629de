package storekit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/testchild"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
)

// workers is a driver whose every call runs its rows on limit workers,
// each row passing the seam (call name "put" or "get") before it is
// READY. A row that has not started when the call's context is done
// answers CANCELLED without entering the seam; with late, it enters the
// seam first anyway (a driver that starts rows after the cancel and only
// reports them CANCELLED).
type workers struct {
	seam  *driverkit.Seam
	limit int
	late  bool
}

// done is an operation finished, its access ended.
type done []driver.Result

func (o done) Poll() ([]driver.Result, bool) { return o, true }
func (done) AccessEnded() bool               { return true }
func (done) AccessUnprovable() bool          { return false }
func (done) Cancel()                         {}

type reg struct{ r *driver.Region }

func (g reg) Region() *driver.Region { return g.r }

func (d *workers) Capabilities() driver.Capabilities {
	return driver.Capabilities{MultiSpan: true, MaxRowsPerOp: 16}
}
func (d *workers) Register(r *driver.Region) (driver.Registration, error) { return reg{r}, nil }
func (d *workers) Unregister(driver.Registration) error                   { return nil }
func (d *workers) Drain(context.Context) bool                             { return true }
func (d *workers) Close() error                                           { return nil }
func (d *workers) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	return d.run(ctx, "put", rows), nil
}
func (d *workers) Get(ctx context.Context, rows []driver.Row, _ driver.Hint) (driver.Operation, error) {
	return d.run(ctx, "get", rows), nil
}

func (d *workers) run(ctx context.Context, call string, rows []driver.Row) driver.Operation {
	res := make(done, len(rows))
	var mu sync.Mutex
	next := 0
	var wg sync.WaitGroup
	for range d.limit {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				mu.Unlock()
				if i >= len(rows) {
					return
				}
				if ctx.Err() != nil {
					if d.late {
						d.seam.Enter(call, rows[i].Key)
					}
					res[i] = driver.Result{Status: driver.Cancelled}
					continue
				}
				d.seam.Enter(call, rows[i].Key)
				res[i] = driver.Result{Status: driver.Ready}
			}
		}()
	}
	wg.Wait()
	return res
}

// ceilingEnv makes TestRowsInFlightAtMostChild run the fixture against
// the workers driver it names: "sound" (2 workers), "serial" (1) or
// "late" (2, starting rows after the cancel), or misused: "few-keys" (no
// more keys than the limit).
const ceilingEnv = "STOREKIT_TEST_CEILING"

// TestRowsInFlightAtMostPassesASoundDriver: the fixture passes a driver
// that runs exactly the limit's rows at once and never starts a row after
// the cancel, here in the test's own process, where a coverage run sees
// it (the failing runs below are child processes).
func TestRowsInFlightAtMostPassesASoundDriver(t *testing.T) {
	seam := &driverkit.Seam{}
	f := NewFx(t, &workers{seam: seam, limit: 2}, 5*time.Second)
	f.RowsInFlightAtMost(t, seam, "put", "get", []string{"a", "b", "c", "d"}, 2)
}

// TestRowsInFlightAtMostChild is the fixture run TestRowsInFlightAtMost
// watches from outside: a failing fixture fails its test binary.
func TestRowsInFlightAtMostChild(t *testing.T) {
	mode := os.Getenv(ceilingEnv)
	if mode == "" {
		t.Skip("run by TestRowsInFlightAtMost")
	}
	seam := &driverkit.Seam{}
	d := &workers{seam: seam, limit: 2, late: mode == "late"}
	if mode == "serial" {
		d.limit = 1
	}
	keys := []string{"a", "b", "c", "d"}
	if mode == "few-keys" {
		keys = keys[:2]
	}
	f := NewFx(t, d, 5*time.Second)
	f.RowsInFlightAtMost(t, seam, "put", "get", keys, 2)
}

// TestRowsInFlightAtMost: the fixture passes a driver that runs exactly
// the limit's rows at once and never starts a row after the cancel, and
// fails, saying why, one that runs fewer at once or starts the rows left
// after the cancel (they use the holds staged for them). A misuse is
// reported at the store test's line that called the fixture (it is a
// helper), not inside the fixture.
func TestRowsInFlightAtMost(t *testing.T) {
	for _, c := range []struct {
		mode string
		says string // "": the fixture passes
		at   string // a file the failure must be reported at ("": any)
	}{
		{"sound", "", ""},
		{"serial", "put of 4 rows: 1 rows ([0]) inside the store call at once, want 2 (the limit)", ""},
		{"late", "put: 0 holds left unused, want 2 (one a row that never started)", ""},
		{"few-keys", "RowsInFlightAtMost needs more keys than the limit (2), got 2", "ceiling_test.go"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			cmd := testchild.Command("-test.run=^TestRowsInFlightAtMostChild$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), ceilingEnv+"="+c.mode)
			out, err := cmd.CombinedOutput()
			if c.says == "" {
				require.NoError(t, err, "%s", out)
				return
			}
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "the fixture passed: %v\n%s", err, out)
			assert.Contains(t, string(out), c.says)
			if c.at != "" {
				assert.Regexp(t, regexp.QuoteMeta(c.at)+`:\d+: `+regexp.QuoteMeta(c.says), string(out))
			}
		})
	}
}

package main

import (
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
)

// TestShortSoak is the soak's short version in make test: a few hundred
// attempts over both stores with a fixed seed.
func TestShortSoak(t *testing.T) {
	covered := func(r Report) bool {
		for _, kind := range shortSoakFaults {
			if r.Faults[kind] == 0 {
				return false
			}
		}
		return r.RowsChecked > 0 && r.RowsCheckedUnquiesced > 0
	}
	// At least 400 attempts, and on until every kind of fault below was
	// injected and an attempt that never quiesced had its READY rows
	// checked: which faults the shared dice give depends on how the
	// goroutines that roll them interleave (under load a fixed run of 400
	// attempts in 20 s sometimes missed a rare kind, or the 400). The
	// duration is only a backstop: a run takes seconds (4 s quiet, under
	// -race), and a broken line that keeps a kind from ever being injected
	// fails here in 90 s rather than minutes.
	rep := Run(Config{Seed: 1, Duration: 90 * time.Second, Attempts: 400, Until: covered})
	t.Log(rep.String())
	assert.Empty(t, rep.Violations)
	assert.GreaterOrEqual(t, rep.Attempts, 400)
	assert.Greater(t, rep.RowsChecked, 0, "some READY rows were checked")
	assert.Greater(t, rep.RowsCheckedUnquiesced, 0, "no READY row of an attempt that never quiesced was checked")
	assert.Equal(t, rep.RowsReady, rep.RowsChecked+rep.RowsCheckedUnquiesced+rep.RowsGone, "every READY row is checked, or found gone")
	for _, kind := range shortSoakFaults {
		assert.Greater(t, rep.Faults[kind], 0, "no %s fault was injected", kind)
	}
}

// shortSoakFaults are the kinds of fault TestShortSoak must see injected.
var shortSoakFaults = []string{"random_code", "cancel", "shutdown", "delay", "short_read", "access_after_results",
	"register_refused", "register_raised", "register_raised_after", "unregister_refused", "unregister_raised",
	"bind_failed", "put_stuck_past_discard", "raise_before_call", "raise_after_call", "wrong_answer_count",
	"transfer_fail_still_writing", "lost_access_evidence"}

// TestUntilKeepsARunGoingPastItsAttempts: a run whose Until is not yet
// satisfied goes on past Attempts, and stops at the first epoch after
// which it is.
func TestUntilKeepsARunGoingPastItsAttempts(t *testing.T) {
	asked := 0
	rep := Run(Config{Seed: 2, Duration: time.Minute, Attempts: 1, Stores: []string{"memory"}, Until: func(r Report) bool {
		asked++
		return r.Epochs >= 3
	}})
	assert.Equal(t, 3, rep.Epochs)
	assert.Equal(t, 3, asked, "asked once after each epoch past Attempts")
	assert.Empty(t, rep.Violations)
}

// TestTheChecksBite feeds each invariant check a violation and asserts it
// is reported, so a quiet soak means something.
func TestTheChecksBite(t *testing.T) {
	region := &driver.Region{Name: "r", Kind: driver.Host, Layout: driver.Layout{SlotBytes: slotBytes, Slots: 1}, Mem: make([]byte, slotBytes)}
	tl := &tally{faults: map[string]int{}}
	c := &checker{Driver: acceptAll{}, t: tl}
	c.ops, c.rs = append(c.ops, openOp{}), append(c.rs, []*driver.Region{region})

	_ = c.Unregister(reg{region})
	(&checkHold{chk: c}).Release()

	e, err := newEpoch("memory", rand.New(rand.NewSource(1)), tl)
	require.NoError(t, err)
	at := &attempt{fetch: true, slots: []int{0}, names: []int{3}}
	e.checkRow(at, 0, "")   // the slot holds zeros, not name 3's content
	e.mem.Mapping()[0] ^= 1 // a write before the region
	e.checkGuard("test")
	e.shutdown(&Report{})

	all := strings.Join(tl.violations, "\n")
	for _, want := range []string{"unregistered while an operation may still touch it", "hold was released while an operation",
		"does not read back byte for byte", "written outside every window"} {
		assert.Contains(t, all, want)
	}
}

// TestTheNewChecksBite feeds each of the later invariants a violation: a
// finished outcome holding a PENDING row, an attempt quiesced while an
// operation may still touch its slot, a wrong READY row of an attempt that
// never quiesced (checked at the end), a Shutdown that took longer than
// its budget and slack, and a short read called READY.
func TestTheNewChecksBite(t *testing.T) {
	check := func(t *testing.T, want string, do func(e *epoch, rep *Report)) {
		t.Helper()
		tl := &tally{faults: map[string]int{}}
		e, err := newEpoch("memory", rand.New(rand.NewSource(1)), tl)
		require.NoError(t, err)
		rep := &Report{}
		do(e, rep)
		if assert.Len(t, tl.violations, 1) {
			assert.Contains(t, tl.violations[0], want)
		}
		e.shutdown(&Report{})
	}
	t.Run("pending row in a finished outcome", func(t *testing.T) {
		check(t, "still holds a PENDING row", func(e *epoch, _ *Report) {
			e.checkFinal(backend.Outcome{Results: []driver.Result{{Status: driver.Ready}, {Status: driver.Pending}}})
		})
	})
	t.Run("quiesced while touched", func(t *testing.T) {
		check(t, "quiesced while an operation may still touch its slot 5", func(e *epoch, _ *Report) {
			s := span(e.mem.Region, 5)
			_, _ = e.chk.track([]driver.Row{{Key: "k", Spans: []driver.Span{{Region: s.Region, Offset: s.Offset + 10, Length: 1}}}}, openOp{}, nil)
			e.checkQuiesced(&attempt{slots: []int{4}}) // another slot: no violation
			e.checkQuiesced(&attempt{slots: []int{5}})
		})
	})
	t.Run("wrong READY row of an attempt that never quiesced", func(t *testing.T) {
		check(t, "does not read back byte for byte", func(e *epoch, rep *Report) {
			content(3, span(e.mem.Region, 0).Bytes())
			e.open = []*attempt{
				{fetch: true, slots: []int{0}, names: []int{3}, a: fakeAttempt{backend.Outcome{Results: []driver.Result{{Status: driver.Ready}}}}},
				{fetch: true, slots: []int{1}, names: []int{3}, a: fakeAttempt{backend.Outcome{Results: []driver.Result{{Status: driver.Ready}}}}},
			}
			e.checkUnquiesced(rep)
			assert.Equal(t, 2, rep.RowsCheckedUnquiesced)
			e.open = nil
		})
	})
	t.Run("shutdown past its budget", func(t *testing.T) {
		check(t, "Shutdown(10ms) took 1.010000001s", func(e *epoch, _ *Report) {
			e.checkShutdownTime(10*time.Millisecond, 10*time.Millisecond+shutdownSlack) // at the bound: no violation
			e.checkShutdownTime(10*time.Millisecond, 10*time.Millisecond+shutdownSlack+time.Nanosecond)
		})
	})
	t.Run("short read called READY", func(t *testing.T) {
		check(t, "does not read back byte for byte", func(e *epoch, _ *Report) {
			b := span(e.mem.Region, 0).Bytes()
			content(3, b)
			assert.Equal(t, int64(100), shortRead(b, 100))
			e.checkRow(&attempt{fetch: true, slots: []int{0}, names: []int{3}}, 0, "")
		})
	})
}

// fakeAttempt is a finished attempt that never quiesces.
type fakeAttempt struct{ o backend.Outcome }

func (f fakeAttempt) Poll() (backend.Outcome, bool) { return f.o, true }
func (fakeAttempt) Quiesced() <-chan struct{}       { return nil }
func (fakeAttempt) Cancel()                         {}

// openOp is an operation whose access never ends.
type openOp struct{}

func (openOp) Poll() ([]driver.Result, bool) { return nil, false }
func (openOp) AccessEnded() bool             { return false }
func (openOp) AccessUnprovable() bool        { return false }
func (openOp) Cancel()                       {}

type reg struct{ r *driver.Region }

func (g reg) Region() *driver.Region { return g.r }

// acceptAll is a driver that accepts every unregister.
type acceptAll struct{ driver.Driver }

func (acceptAll) Unregister(driver.Registration) error { return nil }

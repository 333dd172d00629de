package driverkit

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/driver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func region(name string) *driver.Region {
	return &driver.Region{Name: name, Kind: driver.Host, Layout: driver.Layout{SlotBytes: 64, Slots: 2}, Mem: make([]byte, 128)}
}

func admitAll(*driver.Region) error { return nil }

// admitLive is what a generated AdmitPut does with liveness.
func admitLive(rows []driver.Row) func(func(*driver.Region) bool) error {
	return func(live func(*driver.Region) bool) error {
		for _, r := range rows {
			for _, s := range r.Spans {
				if !live(s.Region) {
					return driver.Reject(driver.RuleSpanOutside, "region %q is not live", s.Region.Name)
				}
			}
		}
		return nil
	}
}

func rowsIn(r *driver.Region) []driver.Row {
	return []driver.Row{{Key: "k", Spans: []driver.Span{r.Slot(0)}}}
}

func rule(err error) string {
	var re *driver.RejectedError
	if errors.As(err, &re) {
		return re.Rule
	}
	return ""
}

func TestLifecycleRules(t *testing.T) {
	bg := context.Background()
	cases := []struct {
		name string
		run  func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration)
	}{
		{"unregister is refused while a call pins the region", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			c, err := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			require.NoError(t, err)
			assert.Equal(t, driver.RuleAccessOpen, rule(l.Unregister(reg, nil)))
			c.End()
			assert.NoError(t, l.Unregister(reg, nil))
		}},
		{"a call whose results are in still pins until its access ends", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			c, _ := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			c.Done()
			assert.Equal(t, driver.RuleAccessOpen, rule(l.Unregister(reg, nil)))
			c.EndAccess()
			assert.NoError(t, l.Unregister(reg, nil))
		}},
		{"a call that ends at teardown is not ended by an EndAccess", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			// Only the teardown ends it (tried: dropping c.atTeardown = true
			// lets a late EndAccess unpin the region).
			c, _ := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			c.EndsAtTeardown()
			c.EndAccess()
			c.End()
			assert.Equal(t, driver.RuleAccessOpen, rule(l.Unregister(reg, nil)))
		}},
		{"an unprovable call pins for good and drain answers false at once", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			c, _ := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			c.Unprovable()
			c.End() // has no effect on an unprovable call
			assert.False(t, l.Drain(bg, nil))
			assert.True(t, l.Unprovable())
			assert.Equal(t, driver.RuleAccessOpen, rule(l.Unregister(reg, nil)))
			assert.Equal(t, driver.RuleAccessOpen, rule(l.Close(nil)))
		}},
		{"a call over an unregistered region is refused", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			require.NoError(t, l.Unregister(reg, nil))
			_, err := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			assert.Equal(t, driver.RuleSpanOutside, rule(err))
			assert.Equal(t, driver.RuleUnknownRegistration, rule(l.Unregister(reg, nil)), "a second unregister")
			// Each refusal leaves the lifecycle usable (tried: dropping the
			// unlock before this refusal fails the case on its bound).
			var other Lifecycle
			theirs, err := other.Register(r, admitAll, nil)
			require.NoError(t, err)
			assert.Equal(t, driver.RuleUnknownRegistration, rule(l.Unregister(theirs, nil)), "another lifecycle's registration")
			assert.Equal(t, driver.RuleUnknownRegistration, rule(l.Unregister(nil, nil)), "no registration")
			_, err = l.Register(r, admitAll, nil)
			assert.NoError(t, err, "the lifecycle goes on after the refusals")
		}},
		{"a failed detach leaves the registration live", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			boom := errors.New("sdk said no")
			assert.ErrorIs(t, l.Unregister(reg, func(any) error { return boom }), boom)
			_, err := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			assert.NoError(t, err, "still live")
		}},
		{"an idle driver closes without a drain once its regions are unregistered", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			c, _ := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			c.End()
			err := l.Close(nil)
			assert.Equal(t, driver.RuleAccessOpen, rule(err), "a region is registered")
			assert.ErrorContains(t, err, "1 regions are still registered; unregister them first")
			require.NoError(t, l.Unregister(reg, nil))
			closes := 0
			require.NoError(t, l.Close(func() error { closes++; return nil }), "no drain: every call ended")
			require.NoError(t, l.Close(func() error { closes++; return nil }))
			assert.Equal(t, 1, closes, "release runs once")
			_, err = l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			assert.Equal(t, driver.RuleClosed, rule(err))
			_, err = l.Register(r, admitAll, nil)
			assert.Equal(t, driver.RuleClosed, rule(err))
		}},
		{"close while a call is in progress says to drain first", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			c, _ := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			c.Done() // its results are in; its access is not over
			err := l.Close(nil)
			assert.Equal(t, driver.RuleAccessOpen, rule(err))
			assert.ErrorContains(t, err, "close refused: 1 calls are in progress (an operation that returned before it finished); Drain until it answers true, then Close")
			c.EndAccess()
			require.NoError(t, l.Unregister(reg, nil))
			require.NoError(t, l.Close(nil))
		}},
		{"close with a call whose access only a teardown ends says to drain", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			c, _ := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			c.EndsAtTeardown()
			err := l.Close(nil)
			assert.Equal(t, driver.RuleAccessOpen, rule(err))
			assert.ErrorContains(t, err, "close refused: 1 calls keep access that only the client's teardown ends; Drain tears the client down, then Close")
		}},
		{"an unprovable call keeps the driver from closing for good", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			c, _ := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			c.Unprovable()
			assert.False(t, l.Drain(bg, nil))
			err := l.Close(nil)
			assert.Equal(t, driver.RuleAccessOpen, rule(err))
			assert.ErrorContains(t, err, "close refused: 1 calls lost the evidence that their access ended")
		}},
		{"drain waits for a call in progress, and gives up with ctx", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			c, _ := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			ctx, cancel := context.WithCancel(bg)
			cancel()
			assert.False(t, l.Drain(ctx, nil))
			done := make(chan bool)
			go func() { done <- l.Drain(bg, nil) }()
			c.End()
			assert.True(t, <-done)
		}},
		{"drain waits for every call in progress, not only the last", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			// Two calls in flight: the drain is woken only once the count
			// reaches zero (tried: leaveLocked closing idle at
			// inProgress == 1 wakes the drain at the first End, and the
			// second End then wakes nothing: the case fails on its bound).
			a, _ := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			b, _ := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			waiting := func() { // until a drain waits on the idle channel
				for {
					l.mu.Lock()
					w := l.idle != nil
					l.mu.Unlock()
					if w {
						return
					}
					runtime.Gosched()
				}
			}
			done := make(chan bool)
			go func() { done <- l.Drain(bg, nil) }()
			waiting()
			a.End()
			waiting()
			select {
			case <-done:
				t.Error("the drain returned with a call in progress")
			default:
			}
			b.End()
			assert.True(t, <-done)
		}},
		{"drain answers what finish answers", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			assert.False(t, l.Drain(bg, func(context.Context) bool { return false }))
			assert.Equal(t, driver.RuleAccessOpen, rule(l.Close(nil)))
			assert.True(t, l.Drain(bg, func(context.Context) bool { return true }))
		}},
		{"registered counts the live registrations", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			// Each count is followed by another call on the lifecycle, so
			// a count that kept the lock fails on its deadline (tried:
			// dropping Registered's defer l.mu.Unlock()).
			assert.Equal(t, 1, l.Registered())
			require.NoError(t, l.Unregister(reg, nil))
			assert.Equal(t, 0, l.Registered())
			_, err := l.Register(r, admitAll, nil)
			require.NoError(t, err)
			assert.Equal(t, 1, l.Registered())
		}},
		{"a call with no rows is admitted and pins nothing", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			// A Put or Get of no rows reaches Begin: its admission looks at
			// no region (tried: liveFor's len(rows) > 0 as >= 0 panics here
			// on rows[0]).
			for _, rows := range [][]driver.Row{nil, {{Key: "no spans"}}} {
				c, err := l.Begin(rows, admitLive(rows))
				require.NoError(t, err)
				assert.NoError(t, l.Unregister(reg, nil), "a call over no region pins none")
				reg, err = l.Register(r, admitAll, nil)
				require.NoError(t, err)
				c.End()
			}
			op, err := l.EachRow(bg, nil, admitLive(nil), func(driver.Row) driver.Result {
				t.Error("a call with no rows ran one")
				return driver.Result{}
			})
			require.NoError(t, err)
			res, done := op.Poll()
			assert.True(t, done)
			assert.Empty(t, res)
			assert.True(t, l.Drain(bg, nil), "every call ended")
		}},
		{"admission refusals record nothing", func(t *testing.T, l *Lifecycle, r *driver.Region, reg driver.Registration) {
			_, err := l.Begin(rowsIn(r), func(func(*driver.Region) bool) error { return driver.Reject(driver.RuleEmptyKey, "x") })
			assert.Equal(t, driver.RuleEmptyKey, rule(err))
			assert.NoError(t, l.Unregister(reg, nil), "nothing pinned")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l Lifecycle
			r := region("r")
			reg, err := l.Register(r, admitAll, func() (any, error) { return "handle", nil })
			require.NoError(t, err)
			assert.Equal(t, "handle", reg.(*Registration).Handle)
			// Bounded: a lock the lifecycle never releases fails the case
			// in seconds (tried: dropping defer c.l.mu.Unlock() in Done).
			bound.Within(t, 10*time.Second, "the case's calls on the lifecycle", func() { c.run(t, &l, r, reg) })
		})
	}
}

// TestUnregisterNeverRacesAnAdmittedCall hammers Begin against Unregister
// of the same region: whenever detach runs (the store forgets the memory),
// no admitted call may still be using the region. The drivers before the
// shared lifecycle checked calls in progress and then removed the
// registration under separate locks, and lost this race.
func TestUnregisterNeverRacesAnAdmittedCall(t *testing.T) {
	const rounds = 300
	var l Lifecycle
	var violations, unregistered, admitted atomic.Int32
	for i := 0; i < rounds; i++ {
		// Each side announces itself, then looks for the other: whichever
		// comes second sees the first, so a detach inside an admitted
		// call's window is always caught.
		var using, detached atomic.Bool
		r := region("r")
		reg, err := l.Register(r, admitAll, nil)
		require.NoError(t, err)
		rows := rowsIn(r)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { // calls over the region until one is refused
			defer wg.Done()
			for {
				c, err := l.Begin(rows, admitLive(rows))
				if err != nil {
					return
				}
				admitted.Add(1)
				using.Store(true)
				if detached.Load() {
					violations.Add(1)
				}
				using.Store(false)
				c.End()
			}
		}()
		go func() {
			defer wg.Done()
			for {
				err := l.Unregister(reg, func(any) error {
					detached.Store(true)
					if using.Load() {
						violations.Add(1)
					}
					return nil
				})
				if err == nil {
					unregistered.Add(1)
					return
				}
				if rule(err) != driver.RuleAccessOpen {
					t.Errorf("unregister: %v", err)
					return
				}
			}
		}()
		wg.Wait()
	}
	assert.Zero(t, violations.Load(), "detach ran while an admitted call used the region")
	assert.EqualValues(t, rounds, unregistered.Load())
	t.Logf("%d rounds, %d calls admitted", rounds, admitted.Load())
}

func TestCloseWaitsForNoRegisterInProgress(t *testing.T) {
	var l Lifecycle
	require.True(t, l.Drain(context.Background(), nil))
	entered, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := l.Register(region("r"), admitAll, func() (any, error) { close(entered); <-release; return nil, nil })
		done <- err
	}()
	<-entered
	assert.Equal(t, driver.RuleAccessOpen, rule(l.Close(nil)), "a registration is being attached")
	close(release)
	require.NoError(t, <-done)
	assert.Equal(t, 1, l.Registered())
}

func TestFinishedIsDoneAndEnded(t *testing.T) {
	o := Finished([]driver.Result{{Status: driver.Ready}})
	res, done := o.Poll()
	assert.True(t, done)
	assert.Equal(t, []driver.Result{{Status: driver.Ready}}, res)
	assert.True(t, o.AccessEnded())
	assert.False(t, o.AccessUnprovable())
	res[0].Status = driver.Miss
	res, _ = o.Poll()
	assert.Equal(t, driver.Ready, res[0].Status, "Poll returns a copy")
}

// TestLivenessIsPerRegion: in a call over two regions, each region's
// liveness is its own: a live first region does not make a second,
// unregistered one live, nor the reverse.
func TestLivenessIsPerRegion(t *testing.T) {
	var l Lifecycle
	live, dead := region("live"), region("dead")
	reg, err := l.Register(live, admitAll, nil)
	require.NoError(t, err)
	for _, order := range [][]*driver.Region{{live, dead}, {dead, live}} {
		rows := []driver.Row{{Key: "a", Spans: []driver.Span{order[0].Slot(0)}}, {Key: "b", Spans: []driver.Span{order[1].Slot(0)}}}
		_, err := l.Begin(rows, admitLive(rows))
		assert.Equal(t, driver.RuleSpanOutside, rule(err), "rows in %q then %q", order[0].Name, order[1].Name)
	}
	rows := []driver.Row{{Key: "a", Spans: []driver.Span{live.Slot(0)}}, {Key: "b", Spans: []driver.Span{live.Slot(1)}}}
	c, err := l.Begin(rows, admitLive(rows))
	require.NoError(t, err)
	c.End()
	require.NoError(t, l.Unregister(reg, nil))
}

// TestARegionStaysPinnedUntilItsLastCallEndsAccess: with two calls open on
// a region, the first one ending its access (even twice: EndAccess, then
// End) leaves the region pinned by the second; once the second's ended,
// the lifecycle holds nothing of it.
func TestARegionStaysPinnedUntilItsLastCallEndsAccess(t *testing.T) {
	var l Lifecycle
	r := region("r")
	reg, err := l.Register(r, admitAll, nil)
	require.NoError(t, err)
	a, err := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
	require.NoError(t, err)
	b, err := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
	require.NoError(t, err)
	a.EndAccess()
	a.End()
	assert.Equal(t, driver.RuleAccessOpen, rule(l.Unregister(reg, nil)), "the second call may still touch the region")
	b.End()
	require.NoError(t, l.Unregister(reg, nil))
	// A driver that registers region after region for ever keeps no
	// entry for one nothing pins (tried: dropping unpinLocked's delete
	// fails here; the count it leaves, 0, pins nothing).
	assert.Empty(t, l.pinned, "entries kept for regions nothing pins")
}

func TestEachRowCancelsTheRowsCtxStopped(t *testing.T) {
	var l Lifecycle
	r := region("r")
	_, err := l.Register(r, admitAll, nil)
	require.NoError(t, err)
	rows := []driver.Row{{Key: "a", Spans: []driver.Span{r.Slot(0)}}, {Key: "b", Spans: []driver.Span{r.Slot(1)}}}
	ctx, cancel := context.WithCancel(context.Background())
	var seen []string
	op, err := l.EachRow(ctx, rows, admitLive(rows), func(row driver.Row) driver.Result {
		seen = append(seen, row.Key)
		cancel() // the second row never starts
		return driver.Result{Status: driver.Ready}
	})
	require.NoError(t, err)
	res, done := op.Poll()
	assert.True(t, done)
	assert.Equal(t, []driver.Result{{Status: driver.Ready}, {Status: driver.Cancelled}}, res)
	assert.Equal(t, []string{"a"}, seen)
	assert.True(t, l.Drain(context.Background(), nil), "the call ended")

	_, err = l.EachRow(context.Background(), rows, func(func(*driver.Region) bool) error {
		return driver.Reject(driver.RuleEmptyKey, "x")
	}, func(driver.Row) driver.Result { t.Fatal("a refused call ran a row"); return driver.Result{} })
	assert.Equal(t, driver.RuleEmptyKey, rule(err))
}

// TestACallThatEndsAtTeardown: a call whose access only the store client's
// teardown ends pins its region and is not waited for; a drain with a
// teardown ends it by tearing down once it is all that is left, and not
// before, nor when the teardown fails; after it no call is admitted and
// unregistering no longer asks the store.
func TestACallThatEndsAtTeardown(t *testing.T) {
	bg := context.Background()
	fail := errors.New("teardown raised")
	cases := []struct {
		name      string
		teardowns []error // what each drain's teardown returns, in order
		drained   []bool  // what each drain answers
	}{
		{"a teardown that succeeds ends the access", []error{nil}, []bool{true}},
		{"a failed teardown keeps it pinned; the next drain tries again", []error{fail, nil}, []bool{false, true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var l Lifecycle
			r := region("r")
			reg, err := l.Register(r, admitAll, func() (any, error) { return "h", nil })
			require.NoError(t, err)
			call, err := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			require.NoError(t, err)
			call.EndsAtTeardown()
			assert.Equal(t, driver.RuleAccessOpen, rule(l.Unregister(reg, nil)), "pinned")
			assert.False(t, l.Drain(bg, nil), "a drain with no teardown cannot end it")
			var tornDown int
			for i, want := range c.drained {
				got := l.DrainTearingDown(bg, nil, func() error { tornDown++; return c.teardowns[i] })
				assert.Equal(t, want, got, "drain %d", i)
				assert.Equal(t, driver.RuleClosed, rule(func() error { _, err := l.Begin(rowsIn(r), admitLive(rowsIn(r))); return err }()),
					"no call is admitted once a teardown began")
			}
			assert.Equal(t, len(c.drained), tornDown)
			detached := false
			require.NoError(t, l.Unregister(reg, func(any) error { detached = true; return errors.New("the client is gone") }))
			assert.False(t, detached, "the registration went with the client")
			require.NoError(t, l.Close(nil))
		})
	}
}

// TestATeardownWaitsForCallsInProgressAndUnprovable: a call in progress is
// waited for, and an unprovable call means no teardown at all.
func TestATeardownWaitsForCallsInProgressAndUnprovable(t *testing.T) {
	var l Lifecycle
	r := region("r")
	_, err := l.Register(r, admitAll, nil)
	require.NoError(t, err)
	ends, err := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
	require.NoError(t, err)
	ends.EndsAtTeardown()
	busy, err := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	torn := false
	teardown := func() error { torn = true; return nil }
	assert.False(t, l.DrainTearingDown(ctx, nil, teardown), "a call is in progress")
	assert.False(t, torn)
	busy.Unprovable()
	assert.False(t, l.DrainTearingDown(context.Background(), nil, teardown), "an unprovable call")
	assert.False(t, torn, "no teardown beside an unprovable call")
	assert.False(t, l.TornDown())
}

// TestEachRowInKeepsLimitRowsInFlight: a call's rows run limit at a time
// (never more), each result lands at its row's index, and the call returns
// only once every row's do returned. Each row waits until limit rows are
// in flight together, so a call that ran them one after another, or fewer
// at once, fails here (on its timeout) instead of passing.
func TestEachRowInKeepsLimitRowsInFlight(t *testing.T) {
	for _, c := range []struct {
		name        string
		rows, limit int
		want        int // rows in flight at most (and at least once)
	}{
		{"one at a time", 5, 1, 1},
		{"three of five", 5, 3, 3},
		{"more room than rows", 5, 8, 5},
		{"no limit set", 4, 0, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l Lifecycle
			r := &driver.Region{Name: "r", Kind: driver.Host, Layout: driver.Layout{SlotBytes: 8, Slots: c.rows}, Mem: make([]byte, 8*c.rows)}
			_, err := l.Register(r, admitAll, nil)
			require.NoError(t, err)
			rows := make([]driver.Row, c.rows)
			for i := range rows {
				rows[i] = driver.Row{Key: string(rune('a' + i)), Spans: []driver.Span{r.Slot(i)}}
			}
			var inFlight, most, finished atomic.Int32
			full := make(chan struct{})
			var once sync.Once
			op, err := l.EachRowIn(context.Background(), rows, c.limit, admitLive(rows), func(row driver.Row) driver.Result {
				n := inFlight.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				if int(n) == c.want {
					once.Do(func() { close(full) })
				}
				select {
				case <-full:
				case <-time.After(5 * time.Second):
					t.Errorf("row %s: %d rows in flight after 5 s, want %d together", row.Key, inFlight.Load(), c.want)
				}
				inFlight.Add(-1)
				finished.Add(1)
				return driver.Result{Status: driver.Ready, Code: int64(row.Key[0])}
			})
			require.NoError(t, err)
			assert.Equal(t, int32(c.rows), finished.Load(), "returned before every row's do did")
			assert.Equal(t, int32(c.want), most.Load(), "rows in flight at most")
			res, done := op.Poll()
			require.True(t, done)
			for i, x := range res {
				assert.Equal(t, int64('a'+i), x.Code, "row %d's result", i)
			}
			assert.True(t, l.Drain(context.Background(), nil), "the call ended")
		})
	}
}

package backend_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const slotBytes = 1024

// hookDriver wraps a memory driver. Each call is recorded; before, when
// set, runs first and may answer the call itself.
type hookDriver struct {
	*memory.Driver
	caps   *driver.Capabilities
	mu     sync.Mutex
	calls  []call
	closes int
	before func(c call) (driver.Operation, error, bool)
	// drain, when set, answers Drain instead of the memory driver.
	drain func(ctx context.Context) bool
}

func (h *hookDriver) Drain(ctx context.Context) bool {
	h.mu.Lock()
	drain := h.drain
	h.mu.Unlock()
	if drain != nil {
		return drain(ctx)
	}
	return h.Driver.Drain(ctx)
}

func (h *hookDriver) Close() error {
	h.mu.Lock()
	h.closes++
	h.mu.Unlock()
	return h.Driver.Close()
}

func (h *hookDriver) Closes() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closes
}

type call struct {
	ctx  context.Context // the ctx the backend called the driver with
	op   string          // put or get
	keys []string
	rows []driver.Row
	hint driver.Hint
}

func (h *hookDriver) Capabilities() driver.Capabilities {
	if h.caps != nil {
		return *h.caps
	}
	return h.Driver.Capabilities()
}

func (h *hookDriver) record(ctx context.Context, op string, rows []driver.Row, hint driver.Hint) (driver.Operation, error, bool) {
	c := call{ctx: ctx, op: op, rows: rows, hint: hint}
	for _, r := range rows {
		c.keys = append(c.keys, r.Key)
	}
	h.mu.Lock()
	h.calls = append(h.calls, c)
	before := h.before
	h.mu.Unlock()
	if before != nil {
		return before(c)
	}
	return nil, nil, false
}

func (h *hookDriver) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	if op, err, ok := h.record(ctx, "put", rows, driver.Hint{}); ok {
		return op, err
	}
	return h.Driver.Put(context.Background(), rows)
}

func (h *hookDriver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	if op, err, ok := h.record(ctx, "get", rows, hint); ok {
		return op, err
	}
	return h.Driver.Get(context.Background(), rows, hint)
}

func (h *hookDriver) Calls() []call {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]call(nil), h.calls...)
}

type env struct {
	t      *testing.T
	lender *hostmem.Lender
	hold   *hostmem.Hold
	d      *hookDriver
	be     *backend.Backend
	region *driver.Region
	w      *waker
}

func newEnv(t *testing.T, opt memory.Options, cfg backend.Config) *env {
	t.Helper()
	lender, err := hostmem.NewLender("slots", driver.Layout{SlotBytes: slotBytes, Slots: 64})
	require.NoError(t, err)
	hold, err := lender.Hold()
	require.NoError(t, err)
	d := &hookDriver{Driver: memory.New(opt)}
	bind, err := backend.Bind(t.Context(), hold.Regions(), d, hold)
	require.NoError(t, err)
	w := newWaker()
	cfg.Wake = w.wake
	be, err := backend.New(bind, cfg)
	require.NoError(t, err)
	e := &env{t: t, lender: lender, hold: hold, d: d, be: be, region: hold.Regions()[0], w: w}
	t.Cleanup(func() {
		if err := e.be.Shutdown(timeout(t, 10*time.Second)); err == nil {
			require.True(t, e.hold.Released(), "a clean shutdown releases the hold")
			require.NoError(t, e.lender.Close())
		} else {
			t.Logf("keeping the lender's memory: %v", err)
		}
	})
	return e
}

// timeout returns a context ending after d, cancelled when the test ends.
func timeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// view returns n rows named prefix-i over slots from, from+1, ...
func (e *env) view(prefix string, from, n int) backend.View {
	v := make(backend.View, n)
	for i := range v {
		s := e.region.Slot(from + i)
		v[i] = backend.ViewRow{Name: []byte(fmt.Sprintf("%s-%d", prefix, i)), Spans: []driver.Span{s}}
	}
	return v
}

func (e *env) fill(v backend.View, seed byte) {
	for i, r := range v {
		b := r.Spans[0].Bytes()
		for j := range b {
			b[j] = seed + byte(i) + byte(j)
		}
	}
}

// wait returns the attempt's outcome once it is final.
func wait(t *testing.T, a *backend.Attempt) backend.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	o, err := a.Wait(ctx)
	require.NoError(t, err, "attempt did not finish within 10s")
	return o
}

// waker is a backend's wake function as a runtime writes one: every call
// closes the current channel, so a waiter that took the channel before
// checking its condition never misses a change.
type waker struct {
	mu sync.Mutex
	ch chan struct{}
}

func newWaker() *waker { return &waker{ch: make(chan struct{})} }

func (w *waker) wake() {
	w.mu.Lock()
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
}

func (w *waker) changed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ch
}

// until waits for cond, checking it again after every wake.
func (w *waker) until(t testing.TB, what string, cond func() bool) {
	if cond() {
		return // no timer, no Helper (runtime.Callers): a benchmark settles many
	}
	t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		ch := w.changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-timeout.C:
			t.Fatalf("%s: not within 10s", what)
		}
	}
}

func (e *env) waitQuiesced(a *backend.Attempt) {
	e.t.Helper()
	require.NoError(e.t, a.WaitQuiesced(timeout(e.t, 10*time.Second)), "attempt quiesced")
}

func TestRoundTripThroughTheBackendIsByteForByte(t *testing.T) {
	e := newEnv(t, memory.Options{Mode: memory.Background}, backend.Config{Workers: 3, RowsPerBatch: 4})
	src := e.view("r", 0, 10)
	e.fill(src, 3)
	o := wait(t, must(e.be.Publish(t.Context(), src)))
	assert.Equal(t, 10, o.InOrder)
	dst := e.view("r", 20, 10)
	a := must(e.be.Fetch(t.Context(), dst))
	o = wait(t, a)
	e.waitQuiesced(a)
	assert.Equal(t, 10, o.InOrder)
	for i := range src {
		assert.True(t, bytes.Equal(src[i].Spans[0].Bytes(), dst[i].Spans[0].Bytes()), "row %d", i)
	}
}

func must(a *backend.Attempt, err error) *backend.Attempt {
	if err != nil {
		panic(err)
	}
	return a
}

func TestSubmissionValidatesTheWholeViewAndNeverCallsTheDriver(t *testing.T) {
	e := newEnv(t, memory.Options{NoHints: true}, backend.Config{})
	foreign := &driver.Region{Name: "foreign", Kind: driver.Host, Layout: driver.Layout{SlotBytes: slotBytes, Slots: 1}, Mem: make([]byte, slotBytes)}
	good := e.view("g", 0, 2)
	cases := []struct {
		name  string
		view  backend.View
		hint  []driver.Hint
		fetch bool
		want  string
	}{
		{"no rows", nil, nil, false, "no rows"},
		{"empty name", backend.View{{Name: nil, Spans: good[0].Spans}}, nil, false, "row 0 has an empty key"},
		{"no span", backend.View{{Name: []byte("x")}}, nil, false, "row 0 (\"kvblob/v1/78\") has no span"},
		{"invalid span", backend.View{{Name: []byte("x"), Spans: []driver.Span{{Region: e.region, Offset: -1, Length: 8}}}}, nil, false, "negative"},
		{"a region the backend did not register", backend.View{{Name: []byte("x"), Spans: []driver.Span{foreign.Slot(0)}}}, nil, false, "no live registration"},
		{"repeated name", backend.View{good[0], good[0]}, nil, false, "rows 0 and 1 repeat key"},
		{"hint to a hint-free driver", good, []driver.Hint{driver.NewHint([]byte("h"))}, true, "does not declare hints"},
		{"two hints", good, []driver.Hint{{}, {}}, true, "Fetch takes at most one hint, got 2"},
		{"a bad row after good ones", append(append(backend.View{}, good...), backend.ViewRow{Name: []byte("z")}), nil, true, "row 2 (\"kvblob/v1/7a\") has no span"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.fetch {
				_, err = e.be.Fetch(t.Context(), c.view, c.hint...)
			} else {
				_, err = e.be.Publish(t.Context(), c.view) // a publish has no hint parameter at all
			}
			var inv *backend.InvalidSubmissionError
			require.ErrorAs(t, err, &inv)
			assert.Contains(t, inv.Reason, c.want)
			assert.False(t, driver.IsRejected(err), "a refused submission is the backend's error, not a driver's")
		})
	}
	assert.Empty(t, e.d.Calls(), "no invalid submission may reach the driver")
}

func TestAFetchWhoseDestinationsOverlapIsRefusedAtSubmission(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{})
	src := e.view("r", 0, 2)
	e.fill(src, 7)
	o := wait(t, must(e.be.Publish(t.Context(), src)))
	require.Equal(t, 2, o.InOrder)
	slot := e.region.Slot(10)
	half := slotBytes / 2
	cases := []struct {
		name string
		view backend.View
		want string
	}{
		{"two rows into one slot", backend.View{
			{Name: src[0].Name, Spans: []driver.Span{slot}},
			{Name: src[1].Name, Spans: []driver.Span{slot}},
		}, "rows 0 (\"kvblob/v1/722d30\") and 1 (\"kvblob/v1/722d31\") have overlapping destinations"},
		{"two rows sharing a byte", backend.View{
			{Name: src[0].Name, Spans: []driver.Span{e.region.Slot(20)}},
			{Name: src[1].Name, Spans: []driver.Span{{Region: e.region, Offset: 21*slotBytes - 1, Length: slotBytes}}},
		}, "rows 0 (\"kvblob/v1/722d30\") and 1 (\"kvblob/v1/722d31\")"},
		{"a later row inside an earlier, longer one", backend.View{
			{Name: src[0].Name, Spans: []driver.Span{{Region: e.region, Offset: 30 * slotBytes, Length: 4 * slotBytes}}},
			{Name: []byte("x"), Spans: []driver.Span{e.region.Slot(40)}},
			{Name: src[1].Name, Spans: []driver.Span{e.region.Slot(32)}},
		}, "rows 0 (\"kvblob/v1/722d30\") and 2 (\"kvblob/v1/722d31\")"},
		{"one row's spans overlapping", backend.View{
			{Name: []byte("x"), Spans: []driver.Span{e.region.Slot(11)}},
			{Name: src[0].Name, Spans: []driver.Span{
				{Region: e.region, Offset: slot.Offset, Length: int64(half)},
				{Region: e.region, Offset: slot.Offset + int64(half) - 1, Length: int64(half)},
			}},
		}, "row 1 (\"kvblob/v1/722d30\") has spans 0 and 1 overlapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := len(e.d.Calls())
			_, err := e.be.Fetch(t.Context(), c.view)
			var inv *backend.InvalidSubmissionError
			require.ErrorAs(t, err, &inv, "a fetch whose rows could overwrite each other must never run, or both could answer READY")
			assert.Equal(t, backend.RuleOverlappingDestinations, inv.Rule)
			assert.Contains(t, inv.Reason, c.want)
			assert.Equal(t, calls, len(e.d.Calls()), "refused at submission: the driver never sees it")
		})
	}
	t.Run("adjacent spans and a publish from one slot twice are fine", func(t *testing.T) {
		o := wait(t, must(e.be.Fetch(t.Context(), backend.View{
			{Name: src[0].Name, Spans: []driver.Span{e.region.Slot(12)}},
			{Name: src[1].Name, Spans: []driver.Span{e.region.Slot(13)}},
		}, driver.Hint{})))
		assert.Equal(t, 2, o.InOrder)
		// A publish only reads its spans: two keys may carry the same bytes.
		o = wait(t, must(e.be.Publish(t.Context(), backend.View{
			{Name: []byte("p0"), Spans: []driver.Span{slot}},
			{Name: []byte("p1"), Spans: []driver.Span{slot}},
		})))
		assert.Equal(t, 2, o.InOrder)
	})
}

func TestBatchesAreCutByRowsBytesAndMaxRowsPerOp(t *testing.T) {
	cases := []struct {
		name     string
		cfg      backend.Config
		maxRows  int
		rows     int
		wantCuts []int
	}{
		{"no limits: one call", backend.Config{}, 0, 10, []int{10}},
		{"rows per batch", backend.Config{RowsPerBatch: 4}, 0, 10, []int{4, 4, 2}},
		{"bytes per batch", backend.Config{BytesPerBatch: 3 * slotBytes}, 0, 7, []int{3, 3, 1}},
		{"the driver's MaxRowsPerOp", backend.Config{RowsPerBatch: 8}, 3, 7, []int{3, 3, 1}},
		{"a row larger than the byte cap goes alone", backend.Config{BytesPerBatch: slotBytes / 2}, 0, 2, []int{1, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, memory.Options{MaxRowsPerOp: c.maxRows}, c.cfg)
			wait(t, must(e.be.Publish(t.Context(), e.view("r", 0, c.rows))))
			var got []int
			for _, cl := range e.d.Calls() {
				got = append(got, len(cl.rows))
			}
			assert.Equal(t, c.wantCuts, got)
		})
	}
}

func TestBatchSizeSaysTheRowsAndBytesOfOneCall(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{BytesPerBatch: backend.NoByteBound})
	rows, n, bounded := e.be.BatchSize(e.region)
	assert.False(t, bounded, "no limit anywhere: unbounded")
	assert.Zero(t, rows, "unbounded: no rows figure")
	assert.Zero(t, n, "unbounded: no bytes figure")
	e1 := newEnv(t, memory.Options{}, backend.Config{})
	rows, n, bounded = e1.be.BatchSize(e1.region)
	assert.True(t, bounded, "the default keeps a call short")
	assert.Equal(t, backend.DefaultBytesPerBatch/slotBytes, rows)
	assert.Equal(t, int64(backend.DefaultBytesPerBatch), n)
	e2 := newEnv(t, memory.Options{MaxRowsPerOp: 16}, backend.Config{RowsPerBatch: 32, BytesPerBatch: 8 * slotBytes})
	rows, n, bounded = e2.be.BatchSize(e2.region)
	assert.True(t, bounded)
	assert.Equal(t, 8, rows)
	assert.Equal(t, int64(8*slotBytes), n)
	// A slot larger than the byte bound goes alone: one row a call.
	e3 := newEnv(t, memory.Options{}, backend.Config{BytesPerBatch: slotBytes / 2})
	rows, n, bounded = e3.be.BatchSize(e3.region)
	assert.True(t, bounded)
	assert.Equal(t, 1, rows)
	assert.Equal(t, int64(slotBytes), n)
}

func TestAFetchHintReachesEveryGetOfADriverThatReadsHints(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{RowsPerBatch: 2})
	wait(t, must(e.be.Publish(t.Context(), e.view("r", 0, 6))))
	hint := driver.NewHint([]byte("node-3"))
	wait(t, must(e.be.Fetch(t.Context(), e.view("r", 10, 6), hint)))
	gets := 0
	for _, c := range e.d.Calls() {
		if c.op == "get" {
			gets++
			assert.Equal(t, []byte("node-3"), c.hint.Bytes())
		}
	}
	assert.Equal(t, 3, gets)
}

// gate blocks every driver call until released, counting calls in flight.
type gate struct {
	mu       sync.Mutex
	inFlight map[string]int
	peak     map[string]int
	order    []string
	release  chan struct{}
	entered  chan string
}

func newGate() *gate {
	return &gate{inFlight: map[string]int{}, peak: map[string]int{}, release: make(chan struct{}), entered: make(chan string, 1000)}
}

func (g *gate) hook(inner *memory.Driver) func(c call) (driver.Operation, error, bool) {
	return func(c call) (driver.Operation, error, bool) {
		g.mu.Lock()
		g.inFlight[c.op]++
		g.peak[c.op] = max(g.peak[c.op], g.inFlight[c.op])
		g.order = append(g.order, c.op+":"+strings.Split(c.keys[0], "/v1/")[1])
		g.mu.Unlock()
		g.entered <- c.op
		<-g.release
		g.mu.Lock()
		g.inFlight[c.op]--
		g.mu.Unlock()
		if c.op == "put" {
			op, err := inner.Put(context.Background(), c.rows)
			return op, err, true
		}
		op, err := inner.Get(context.Background(), c.rows, c.hint)
		return op, err, true
	}
}

func TestFetchesGoFirstAndAPublishGoesAfterFourFetches(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{Workers: 1, RowsPerBatch: 1})
	g := newGate()
	e.d.before = g.hook(e.d.Driver)
	// A first fetch occupies the only worker, so everything after it queues.
	first := must(e.be.Fetch(t.Context(), e.view("f0", 0, 1)))
	<-g.entered
	pub := must(e.be.Publish(t.Context(), e.view("p", 1, 2)))
	fetch := must(e.be.Fetch(t.Context(), e.view("f", 3, 6)))
	close(g.release)
	wait(t, first)
	wait(t, pub)
	wait(t, fetch)
	g.mu.Lock()
	defer g.mu.Unlock()
	hexOf := func(s string) string { return fmt.Sprintf("%x", s) }
	want := []string{"get:" + hexOf("f0-0"),
		"get:" + hexOf("f-0"), "get:" + hexOf("f-1"), "get:" + hexOf("f-2"), "get:" + hexOf("f-3"),
		"put:" + hexOf("p-0"),
		"get:" + hexOf("f-4"), "get:" + hexOf("f-5"),
		"put:" + hexOf("p-1")}
	assert.Equal(t, want, g.order)
}

// Publishes use at most max(1, min(Workers-1, GOMAXPROCS-1)) workers: a
// fetch finds a worker, and a CPU to run on.
func TestPublishesUseAtMostWorkersMinusOne(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	for _, c := range []struct{ workers, procs int }{{1, procs}, {2, procs}, {4, procs}, {4, 2}, {4, 8}} {
		t.Run(fmt.Sprint(c.workers, " workers, GOMAXPROCS ", c.procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.procs))
			workers := c.workers
			e := newEnv(t, memory.Options{}, backend.Config{Workers: workers, RowsPerBatch: 1})
			g := newGate()
			e.d.before = g.hook(e.d.Driver)
			pub := must(e.be.Publish(t.Context(), e.view("p", 0, 8)))
			capacity := max(1, min(workers-1, c.procs-1))
			for i := 0; i < capacity; i++ {
				<-g.entered
			}
			// A fetch still finds a free worker when there are two or more.
			var fetch *backend.Attempt
			if workers > 1 {
				fetch = must(e.be.Fetch(t.Context(), e.view("f", 20, 1)))
				assert.Equal(t, "get", <-g.entered)
			}
			close(g.release)
			wait(t, pub)
			if fetch != nil {
				wait(t, fetch)
			}
			g.mu.Lock()
			assert.Equal(t, capacity, g.peak["put"])
			g.mu.Unlock()
		})
	}
}

// A publish's calls run one after another on the worker that made the
// first, while the publish cap allows no other: a worker that ends a
// publish call takes the next itself. Handing each next call to another,
// parked, worker cost a wake-up between any two calls of one stream (some
// 15 us each here, 6% of a publish of 1 MiB rows cut at 4 MiB).
func TestAPublishStreamStaysOnItsWorker(t *testing.T) {
	for _, c := range []struct{ workers, procs int }{{2, 2}, {4, 2}} {
		t.Run(fmt.Sprint(c.workers, " workers, GOMAXPROCS ", c.procs), func(t *testing.T) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.procs))
			e := newEnv(t, memory.Options{}, backend.Config{Workers: c.workers, RowsPerBatch: 1})
			var mu sync.Mutex
			ran := map[string]int{} // goroutine -> puts
			e.d.before = func(c call) (driver.Operation, error, bool) {
				if c.op == "put" {
					mu.Lock()
					ran[goroutine()]++
					mu.Unlock()
				}
				return nil, nil, false
			}
			for round := 0; round < 5; round++ {
				pub := must(e.be.Publish(t.Context(), e.view(fmt.Sprint("r", round), 0, 16)))
				assert.Equal(t, 16, wait(t, pub).InOrder)
				e.waitQuiesced(pub)
				mu.Lock()
				assert.Len(t, ran, 1, "round %d: one publish's 16 calls ran on %d workers: %v", round, len(ran), ran)
				clear(ran)
				mu.Unlock()
			}
		})
	}
}

// goroutine returns the calling goroutine's number, from its stack trace.
func goroutine() string {
	var b [64]byte
	f := strings.Fields(string(b[:runtime.Stack(b[:], false)]))
	return f[1] // "goroutine N [running]:"
}

func TestAPublishNeverStarvesUnderAStreamOfFetches(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{Workers: 1, RowsPerBatch: 1})
	g := newGate()
	e.d.before = g.hook(e.d.Driver)
	first := must(e.be.Fetch(t.Context(), e.view("f0", 0, 1)))
	<-g.entered
	pub := must(e.be.Publish(t.Context(), e.view("p", 1, 1)))
	var fetches []*backend.Attempt
	for i := 0; i < 20; i++ {
		fetches = append(fetches, must(e.be.Fetch(t.Context(), e.view(fmt.Sprint("s", i), 2+i, 1))))
	}
	close(g.release)
	wait(t, pub)
	wait(t, first)
	for _, f := range fetches {
		wait(t, f)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, o := range g.order {
		if strings.HasPrefix(o, "put:") {
			assert.LessOrEqual(t, i, 5, "the publish waited behind more than four fetches")
		}
	}
}

// TestABatchTakenAfterItsAttemptsCtxEndedNeverEntersTheDriver: a worker
// that takes a batch whose attempt's ctx has ended drops it, the row
// CANCELLED with the ctx's cause, rather than calling the driver with a
// dead ctx, even before the cancel that ctx's end runs has got there
// (held here: without the hold the window is a race no test can aim at).
// (Tried: the worker's check made stopCancel == nil starts the second
// batch, and the driver sees two gets.)
func TestABatchTakenAfterItsAttemptsCtxEndedNeverEntersTheDriver(t *testing.T) {
	release := make(chan struct{})
	restore := backend.HoldCtxEndCancel(release)
	defer restore()
	defer close(release) // first: the held cancel then runs and ends
	e := newEnv(t, memory.Options{}, backend.Config{Workers: 1, RowsPerBatch: 1})
	src := e.view("r", 0, 2)
	e.fill(src, 1)
	wait(t, must(e.be.Publish(context.Background(), src)))
	g := newGate()
	e.d.before = g.hook(e.d.Driver)
	ctx, cancel := context.WithCancelCause(context.Background())
	a := must(e.be.Fetch(ctx, e.view("r", 10, 2)))
	<-g.entered // the first batch is in the driver, the second queued
	why := errors.New("the caller gave up")
	cancel(why)
	close(g.release)
	o := wait(t, a)
	gets := 0
	for _, c := range e.d.Calls() {
		if c.op == "get" {
			gets++
		}
	}
	assert.Equal(t, 1, gets, "the second batch entered the driver after its ctx ended")
	assert.Equal(t, driver.Ready, o.Results[0].Status)
	assert.Equal(t, driver.Cancelled, o.Results[1].Status)
	assert.ErrorIs(t, o.Err, backend.ErrCancelled)
	assert.ErrorIs(t, o.Err, why)
}

func TestABatchCountsAsStartedBeforeItEntersTheDriver(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{})
	g := newGate()
	e.d.before = g.hook(e.d.Driver)
	a := must(e.be.Publish(t.Context(), e.view("p", 0, 1)))
	<-g.entered // the worker is inside the driver
	assert.Equal(t, 1, e.be.Stats().BatchesStarted)
	a.Cancel()
	assert.False(t, closed(a.Quiesced()), "a cancelled attempt whose batch is in the driver must not quiesce")
	_, done := a.Poll()
	assert.False(t, done)
	close(g.release)
	o := wait(t, a)
	e.waitQuiesced(a)
	assert.Equal(t, driver.Ready, o.Results[0].Status, "the started batch ran; cancel did not fake its result")
}

// failRows makes the memory store fail the named keys' gets.
func (e *env) failGets(v backend.View, stemPrefix string) {
	for _, r := range v {
		key, _ := driver.Key(stemPrefix, r.Name)
		e.d.Store().Inject(memory.CallGet, key, -5)
	}
}

func TestAFetchWithAFaultInItsThirdBatchOfFiveMarksOnlyTheDeliveredPrefix(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{Workers: 1, RowsPerBatch: 2})
	src := e.view("r", 0, 10)
	e.fill(src, 1)
	wait(t, must(e.be.Publish(t.Context(), src)))
	e.failGets(src[4:5], "kvblob") // the third batch holds rows 4 and 5
	o := wait(t, must(e.be.Fetch(t.Context(), e.view("r", 20, 10))))
	assert.Equal(t, 4, o.InOrder)
	assert.Equal(t, []bool{true, true, true, true, false, true, false, false, false, false}, o.Delivered)
	assert.Equal(t, driver.Fault, o.Results[4].Status)
	for i := 6; i < 10; i++ {
		assert.Equal(t, driver.Cancelled, o.Results[i].Status, "row %d never started", i)
	}
	var rowErr *backend.RowError
	require.ErrorAs(t, o.Err, &rowErr, "the outcome says which row stopped the fetch")
	assert.Equal(t, 4, rowErr.Row)
	var fault *driver.FaultError
	require.ErrorAs(t, o.Err, &fault, "errors.As reaches the driver's fault")
	assert.Equal(t, o.Results[4].Code, fault.Code)
	gets := 0
	for _, c := range e.d.Calls() {
		if c.op == "get" {
			gets++
		}
	}
	assert.Equal(t, 3, gets, "the batches after the fault never reach the driver")
}

func TestAPublishStopsOnlyWhenACallFailedAsAWhole(t *testing.T) {
	for _, rows := range []int{1, 2} {
		t.Run(fmt.Sprintf("a row fault does not stop it (%d rows a call)", rows), func(t *testing.T) {
			e := newEnv(t, memory.Options{}, backend.Config{Workers: 1, RowsPerBatch: rows})
			v := e.view("r", 0, 6)
			key, _ := driver.Key("kvblob", v[1].Name)
			e.d.Store().Inject(memory.CallPut, key, -5)
			o := wait(t, must(e.be.Publish(t.Context(), v)))
			assert.Equal(t, []bool{true, false, true, true, true, true}, o.Delivered)
			var rowErr *backend.RowError
			require.ErrorAs(t, o.Err, &rowErr, "the outcome says which row faulted")
			assert.Equal(t, backend.RowError{Row: 1, Key: key, Err: &driver.FaultError{Code: -5, Text: o.Results[1].Text}}, *rowErr)
		})
	}
	t.Run("a rejected call stops it", func(t *testing.T) {
		e := newEnv(t, memory.Options{}, backend.Config{Workers: 1, RowsPerBatch: 2})
		n := 0
		e.d.before = func(c call) (driver.Operation, error, bool) {
			n++
			if n == 2 {
				return nil, driver.Reject("test", "refused"), true
			}
			return nil, nil, false
		}
		o := wait(t, must(e.be.Publish(t.Context(), e.view("r", 0, 6))))
		assert.Equal(t, []bool{true, true, false, false, false, false}, o.Delivered)
		assert.Equal(t, driver.Cancelled, o.Results[4].Status)
		var rej *driver.RejectedError
		require.ErrorAs(t, o.Err, &rej, "errors.As reaches the driver's refusal")
		assert.Equal(t, "test", rej.Rule)
		var rowErr *backend.RowError
		require.ErrorAs(t, o.Err, &rowErr)
		assert.Equal(t, 2, rowErr.Row, "the refused call's first row")
	})
}

func TestAfterAFaultTheOutcomeWaitsForBatchesAlreadyStarted(t *testing.T) {
	e := newEnv(t, memory.Options{Mode: memory.Background}, backend.Config{Workers: 2, RowsPerBatch: 1})
	src := e.view("r", 0, 2)
	wait(t, must(e.be.Publish(t.Context(), src)))
	k0, _ := driver.Key("kvblob", src[0].Name)
	entered, release := e.d.Store().Hold(memory.CallGet, k0)
	e.failGets(src[1:2], "kvblob")
	a := must(e.be.Fetch(t.Context(), e.view("r", 10, 2)))
	<-entered
	// The second batch faults while the first is still inside the store.
	e.w.until(t, "the faulted get settled", func() bool { return e.be.Stats().BatchesSettled >= 2 }) // 1 publish + the faulted get
	_, done := a.Poll()
	assert.False(t, done, "the outcome must wait for the started first batch")
	release()
	o := wait(t, a)
	assert.Equal(t, []bool{true, false}, o.Delivered, "the earlier row a prefix reuse needs is kept")
}

func TestUnprovableOperationsAreCountedAndNeverQuiesce(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{})
	e.d.LoseEvidenceNext()
	a := must(e.be.Publish(t.Context(), e.view("r", 0, 2)))
	o := wait(t, a)
	assert.Equal(t, 2, o.InOrder, "results are still recorded")
	assert.Equal(t, 1, e.be.Stats().BatchesUnprovable)
	assert.False(t, closed(a.Quiesced()))
	// No deadline at all: Shutdown must see that nothing can change.
	err := bound.Value(t, 10*time.Second, "Shutdown with no deadline, every open attempt pinned,",
		func() error { return e.be.Shutdown(context.Background()) })
	var se *backend.ShutdownError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 1, se.Pinned)
	assert.Zero(t, se.Settling)
	assert.Nil(t, se.Err, "it returned at once, not because a budget ran out")
	assert.Equal(t, []driver.Span{e.region.Slot(0), e.region.Slot(1)}, se.Kept, "the slots the store may still touch")
	assert.Equal(t, []*driver.Region{e.region}, se.Registered)
	assert.Contains(t, err.Error(), "keep the lender's memory")
	assert.False(t, e.hold.Released(), "the hold is kept while a store may touch the memory")
	assert.Error(t, e.lender.Close(), "the lender refuses to free memory under a hold")
	select {
	case <-e.be.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the progress goroutine did not exit")
	}
	assert.ErrorAs(t, e.be.Shutdown(context.Background()), &se, "the answer never changes")
}

func TestShutdownWithACallInTheDriverReturnsWithinItsBudget(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{})
	g := newGate()
	e.d.before = g.hook(e.d.Driver)
	a := must(e.be.Publish(t.Context(), e.view("r", 0, 1)))
	<-g.entered
	calls := len(e.d.Calls())
	start := time.Now()
	err := e.be.Shutdown(timeout(t, 20*time.Millisecond))
	assert.Less(t, time.Since(start), 5*time.Second)
	var se *backend.ShutdownError
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a budget that ran out is matchable")
	assert.Equal(t, 1, se.Settling, "the attempt whose call is in the driver")
	assert.Zero(t, se.Pinned)
	assert.Equal(t, []*driver.Region{e.region}, se.Registered)
	_, err = e.be.Publish(t.Context(), e.view("late", 5, 1))
	var rej *backend.SubmissionRejectedError
	assert.ErrorAs(t, err, &rej)
	assert.Equal(t, calls, len(e.d.Calls()), "shutdown never calls the driver")
	assert.False(t, e.hold.Released())
	close(g.release)
	wait(t, a)
	assert.NoError(t, e.be.Shutdown(timeout(t, 10*time.Second)), "once the call returns, the background drain and unregister finish")
	assert.True(t, e.hold.Released())
}

func TestShutdownUnregistersInTheBackgroundAndReleasesTheHold(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{Workers: 2})
	wait(t, must(e.be.Publish(t.Context(), e.view("r", 0, 3))))
	queuedBehind := newGate()
	e.d.before = queuedBehind.hook(e.d.Driver)
	close(queuedBehind.release)
	assert.NoError(t, e.be.Shutdown(timeout(t, 10*time.Second)))
	assert.True(t, e.hold.Released())
	assert.True(t, e.be.Stats().ShutDown)
	assert.True(t, closed(e.be.Done()), "Done is closed once the backend finished")
	assert.NoError(t, e.be.Shutdown(context.Background()), "a later Shutdown answers nil at once")
	assert.Zero(t, e.d.Closes(), "Shutdown never closes the driver: its owner does")
	assert.NoError(t, e.d.Close(), "after a nil Shutdown the driver is drained and has no region: it closes")
}

func TestShutdownDropsEveryQueuedAttempt(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{Workers: 1})
	g := newGate()
	e.d.before = g.hook(e.d.Driver)
	first := must(e.be.Publish(t.Context(), e.view("p", 0, 1)))
	<-g.entered // the only worker is busy: the attempts after it stay queued
	var queued []*backend.Attempt
	for i := 0; i < 5; i++ {
		queued = append(queued, must(e.be.Fetch(t.Context(), e.view(fmt.Sprint("q", i), 10+i, 1))))
	}
	err := e.be.Shutdown(timeout(t, 20*time.Millisecond))
	var se *backend.ShutdownError
	require.ErrorAs(t, err, &se, "the call in the driver is still open")
	assert.Equal(t, 1, se.Settling, "every queued attempt was dropped; only the one in the driver settles")
	for i, a := range queued {
		require.True(t, closed(a.Done()), "queued attempt %d is final once Shutdown dropped it", i)
		o, _ := a.Poll()
		assert.Equal(t, driver.Cancelled, o.Results[0].Status, "attempt %d", i)
		assert.True(t, closed(a.Quiesced()), "attempt %d never started", i)
	}
	close(g.release)
	wait(t, first)
	assert.NoError(t, e.be.Shutdown(timeout(t, 10*time.Second)))
}

func TestProtocolViolationsRefuseEveryLaterSubmission(t *testing.T) {
	// A fetch's FAULT stops its attempt with the fault as its Err, so the
	// violation must stop it first, or its Err would not name the
	// violation (tried: dropping violationLocked's first stopLocked fails
	// both cases).
	for _, op := range []string{"publish", "fetch"} {
		t.Run("an error that is not DriverRejected, on a "+op, func(t *testing.T) {
			e := newEnv(t, memory.Options{}, backend.Config{Workers: 1, RowsPerBatch: 1})
			e.d.before = func(c call) (driver.Operation, error, bool) { return nil, errors.New("sdk exploded"), true }
			submit := e.be.Publish
			if op == "fetch" {
				submit = func(ctx context.Context, v backend.View) (*backend.Attempt, error) {
					return e.be.Fetch(ctx, v)
				}
			}
			a := must(submit(t.Context(), e.view("r", 0, 3)))
			o := wait(t, a)
			assert.Equal(t, driver.Fault, o.Results[0].Status)
			assert.Equal(t, driver.Cancelled, o.Results[2].Status, "queued batches are dropped")
			assert.False(t, closed(a.Quiesced()), "the batch is held: its access was never proven")
			assert.ErrorIs(t, o.Err, backend.ErrProtocolViolation)
			assert.ErrorContains(t, o.Err, "sdk exploded")
			_, err := e.be.Publish(t.Context(), e.view("s", 10, 1))
			var rej *backend.SubmissionRejectedError
			require.ErrorAs(t, err, &rej)
			assert.Contains(t, rej.Reason, "sdk exploded")
			assert.ErrorIs(t, err, backend.ErrProtocolViolation)
			assert.Equal(t, 1, e.be.Stats().BatchesUnprovable)
		})
	}
	t.Run("every other attempt's queued batches are dropped", func(t *testing.T) {
		e := newEnv(t, memory.Options{}, backend.Config{Workers: 1, RowsPerBatch: 1})
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		e.d.before = func(c call) (driver.Operation, error, bool) {
			once.Do(func() { close(entered); <-release })
			return nil, errors.New("sdk exploded"), true
		}
		first := must(e.be.Publish(t.Context(), e.view("r", 0, 1)))
		<-entered // the only worker is in the driver: the next attempt stays queued
		other := must(e.be.Publish(t.Context(), e.view("q", 10, 2)))
		close(release)
		wait(t, first)
		o := wait(t, other)
		for i, r := range o.Results {
			assert.Equal(t, driver.Cancelled, r.Status, "row %d never reached the driver (tried: dropping the loop's stopLocked runs it into the violating driver)", i)
		}
		assert.ErrorIs(t, o.Err, backend.ErrProtocolViolation)
		assert.True(t, closed(other.Quiesced()), "a dropped attempt touched nothing")
	})
	t.Run("a poll with the wrong row count", func(t *testing.T) {
		e := newEnv(t, memory.Options{}, backend.Config{})
		e.d.before = func(c call) (driver.Operation, error, bool) {
			return shortOp{}, nil, true
		}
		o := wait(t, must(e.be.Publish(t.Context(), e.view("r", 0, 2))))
		assert.Equal(t, driver.Fault, o.Results[0].Status)
		_, err := e.be.Fetch(t.Context(), e.view("r", 10, 1))
		var rej *backend.SubmissionRejectedError
		require.ErrorAs(t, err, &rej)
		assert.Contains(t, rej.Reason, "answered 1 results for 2 rows")
	})
}

// shortOp answers one result whatever the row count, and never ends access.
type shortOp struct{}

func (shortOp) Poll() ([]driver.Result, bool) { return []driver.Result{{Status: driver.Ready}}, true }
func (shortOp) AccessEnded() bool             { return false }
func (shortOp) AccessUnprovable() bool        { return false }
func (shortOp) Cancel()                       {}

func TestASlowCallWarnsOnceAndStatsReportTheOldestCall(t *testing.T) {
	buf := newSafeBuffer()
	e := newEnv(t, memory.Options{}, backend.Config{SlowCall: time.Millisecond, Logger: zerolog.New(buf)})
	g := newGate()
	e.d.before = g.hook(e.d.Driver)
	a := must(e.be.Publish(t.Context(), e.view("r", 0, 1)))
	<-g.entered
	timeout := time.After(10 * time.Second)
	for !strings.Contains(buf.String(), "slow-call") {
		select {
		case <-buf.wrote:
		case <-timeout:
			t.Fatal("no slow-call warning within 10s")
		}
	}
	assert.GreaterOrEqual(t, e.be.Stats().OldestCall, time.Millisecond)
	close(g.release)
	wait(t, a)
	assert.Equal(t, 1, strings.Count(buf.String(), "slow-call"), "one warning per call")
}

// safeBuffer is a log sink tests read while the backend writes; wrote
// receives a nudge after each write.
type safeBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func newSafeBuffer() *safeBuffer { return &safeBuffer{wrote: make(chan struct{}, 1)} }

func (s *safeBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *safeBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestWakeIsCalledAfterStateChangesOutsideTheLock(t *testing.T) {
	lender, err := hostmem.NewLender("slots", driver.Layout{SlotBytes: slotBytes, Slots: 4})
	require.NoError(t, err)
	hold, err := lender.Hold()
	require.NoError(t, err)
	d := memory.New(memory.Options{})
	bind, err := backend.Bind(t.Context(), hold.Regions(), d, hold)
	require.NoError(t, err)
	var be *backend.Backend
	var mu sync.Mutex
	wakes := 0
	be, err = backend.New(bind, backend.Config{Wake: func() {
		mu.Lock()
		wakes++
		mu.Unlock()
		if be != nil {
			_ = be.Stats() // would deadlock if wake ran under the backend's lock
		}
	}})
	require.NoError(t, err)
	v := backend.View{{Name: []byte("a"), Spans: []driver.Span{hold.Regions()[0].Slot(0)}}}
	wait(t, must(be.Publish(t.Context(), v)))
	require.NoError(t, be.Shutdown(timeout(t, 10*time.Second)))
	mu.Lock()
	assert.Greater(t, wakes, 1)
	mu.Unlock()
	require.NoError(t, lender.Close())
}

func TestConfigIsValidated(t *testing.T) {
	for _, cfg := range []backend.Config{{Workers: -1}, {RowsPerBatch: -1}, {BytesPerBatch: -1}, {SlowCall: -1}, {Prefix: "a//b"}} {
		lender, err := hostmem.NewLender("slots", driver.Layout{SlotBytes: 64, Slots: 1})
		require.NoError(t, err)
		hold, _ := lender.Hold()
		bind, err := backend.Bind(t.Context(), hold.Regions(), memory.New(memory.Options{}), hold)
		require.NoError(t, err)
		_, err = backend.New(bind, cfg)
		assert.Error(t, err, "%+v", cfg)
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestDoneClosesWhenTheOutcomeIsFinalAndWaitReturnsIt(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{})
	g := newGate()
	e.d.before = g.hook(e.d.Driver)
	a := must(e.be.Publish(t.Context(), e.view("r", 0, 2)))
	<-g.entered // the batch is inside the driver: no result yet
	assert.False(t, closed(a.Done()), "Done closed before any result")
	o, done := a.Poll()
	assert.False(t, done)
	assert.Nil(t, o.Results, "Poll's outcome is empty until done")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	o, err := a.Wait(ctx)
	assert.ErrorIs(t, err, context.Canceled, "Wait gives up with ctx, not with a guess")
	assert.Nil(t, o.Results)

	close(g.release)
	select { // what a runtime selects on
	case <-a.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("Done was not closed once the call returned")
	}
	o, done = a.Poll()
	require.True(t, done, "Done is closed only once Poll reports the outcome final")
	assert.Equal(t, 2, o.InOrder)
	o, err = a.Wait(ctx) // ctx already ended, the outcome final: the outcome wins
	require.NoError(t, err)
	assert.Equal(t, 2, o.InOrder)
	assert.Equal(t, a.Done(), a.Done(), "one channel for every call")
}

func TestDoneClosesWhenQueuedBatchesAreDropped(t *testing.T) {
	t.Run("by Cancel", func(t *testing.T) {
		e := newEnv(t, memory.Options{}, backend.Config{Workers: 1})
		g := newGate()
		e.d.before = g.hook(e.d.Driver)
		first := must(e.be.Publish(t.Context(), e.view("p", 0, 1)))
		<-g.entered // the only worker is busy: the next attempt stays queued
		queued := must(e.be.Fetch(t.Context(), e.view("p", 10, 1)))
		queued.Cancel()
		require.True(t, closed(queued.Done()), "an attempt whose every batch was dropped is final at once")
		o, err := queued.Wait(context.Background())
		require.NoError(t, err)
		assert.Equal(t, driver.Cancelled, o.Results[0].Status)
		assert.ErrorIs(t, o.Err, backend.ErrCancelled)
		close(g.release)
		wait(t, first)
	})
	t.Run("by a fault that stops a fetch", func(t *testing.T) {
		e := newEnv(t, memory.Options{}, backend.Config{Workers: 1, RowsPerBatch: 1})
		src := e.view("r", 0, 3)
		wait(t, must(e.be.Publish(t.Context(), src)))
		e.failGets(src[0:1], "kvblob")
		a := must(e.be.Fetch(t.Context(), e.view("r", 10, 3)))
		o := wait(t, a)
		assert.Equal(t, []driver.Status{driver.Fault, driver.Cancelled, driver.Cancelled},
			[]driver.Status{o.Results[0].Status, o.Results[1].Status, o.Results[2].Status})
	})
}

func TestTheBackendCopiesTheViewItWasGiven(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{Workers: 1})
	g := newGate()
	e.d.before = g.hook(e.d.Driver)
	first := must(e.be.Publish(t.Context(), e.view("a", 0, 1)))
	<-g.entered // the only worker is busy: the next view stays queued
	v := e.view("b", 1, 1)
	queued := must(e.be.Publish(t.Context(), v))
	v[0].Spans[0] = e.region.Slot(9) // the caller reuses its view
	close(g.release)
	wait(t, first)
	wait(t, queued)
	calls := e.d.Calls()
	require.Len(t, calls, 2)
	assert.Equal(t, []driver.Span{e.region.Slot(1)}, calls[1].rows[0].Spans, "the driver got the validated spans")
}

// atTeardownOp is an operation whose access only the store client's
// teardown ends: it has its results, and reports its access neither ended
// nor unprovable.
type atTeardownOp struct{ n int }

func (o atTeardownOp) Poll() ([]driver.Result, bool) {
	return make([]driver.Result, o.n), true // every row MISS (the zero Status)
}
func (atTeardownOp) AccessEnded() bool          { return false }
func (atTeardownOp) AccessUnprovable() bool     { return false }
func (atTeardownOp) AccessEndsAtTeardown() bool { return true }
func (atTeardownOp) Cancel()                    {}

// laterOp is an operation with its results whose access ends by itself
// once end is set: no teardown is needed for it.
type laterOp struct {
	n   int
	end *atomic.Bool
}

func (o laterOp) Poll() ([]driver.Result, bool) { return make([]driver.Result, o.n), true }
func (o laterOp) AccessEnded() bool             { return o.end.Load() }
func (laterOp) AccessUnprovable() bool          { return false }
func (laterOp) Cancel()                         {}

// TestAShutdownPinnedLeavesCallsThatEndAtTeardown: a drain never answers
// true beside an unprovable call, so no teardown ends the access of a call
// that waits for one (driver.Driver.Drain). Once such calls are all that is
// left open beside the pin, they count as unprovable (their attempts pinned,
// their slots kept) and the progress goroutine exits pinned instead of
// waiting for ever.
func TestAShutdownPinnedLeavesCallsThatEndAtTeardown(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{})
	e.d.LoseEvidenceNext()
	wait(t, must(e.be.Publish(t.Context(), e.view("r", 0, 1))))
	require.Equal(t, 1, e.be.Stats().BatchesUnprovable)
	e.d.before = func(c call) (driver.Operation, error, bool) {
		return atTeardownOp{n: len(c.rows)}, nil, true
	}
	a := must(e.be.Fetch(t.Context(), e.view("r", 4, 1)))
	wait(t, a)
	assert.False(t, closed(a.Quiesced()), "its access has not ended")
	err := bound.Value(t, 10*time.Second, "Shutdown with no deadline, waiting for a teardown that cannot come beside an unprovable call,",
		func() error { return e.be.Shutdown(context.Background()) })
	var se *backend.ShutdownError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, 2, se.Pinned, "the unprovable put's attempt and the get's")
	assert.Zero(t, se.Settling)
	assert.Nil(t, se.Err, "it returned at once, not because a budget ran out")
	assert.ElementsMatch(t, []driver.Span{e.region.Slot(0), e.region.Slot(4)}, se.Kept, "the get's slot too: the store may still write it")
	assert.Equal(t, 2, e.be.Stats().BatchesUnprovable)
	assert.False(t, e.hold.Released(), "the hold is kept while a store may touch the memory")
	select {
	case <-e.be.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the progress goroutine did not exit")
	}
	assert.ErrorAs(t, e.be.Shutdown(context.Background()), &se, "the answer never changes")
	assert.ErrorIs(t, a.WaitQuiesced(t.Context()), backend.ErrPinned, "the get's slot is never reused")
}

// tornOp is an operation with its results whose access ends when the
// driver's client is torn down (teardown.end), as a driver.Notifier: it
// calls the observer at the teardown, and never before.
type tornOp struct {
	n int
	*teardown
}

// teardown is a driver client's teardown: end marks it done and tells the
// operation's observer.
type teardown struct {
	torn   atomic.Bool
	mu     sync.Mutex
	notify func()
}

func (td *teardown) end() {
	td.torn.Store(true)
	td.mu.Lock()
	f := td.notify
	td.mu.Unlock()
	if f != nil {
		f()
	}
}

func (o tornOp) Poll() ([]driver.Result, bool) { return make([]driver.Result, o.n), true }
func (o tornOp) AccessEnded() bool             { return o.torn.Load() }
func (tornOp) AccessUnprovable() bool          { return false }
func (o tornOp) AccessEndsAtTeardown() bool    { return !o.torn.Load() }
func (tornOp) Cancel()                         {}
func (o tornOp) Notify(f func())               { o.mu.Lock(); o.notify = f; o.mu.Unlock() }

// TestADrainThatDidNotTearDownIsTriedAgain: a closing backend whose open
// calls wait only for the driver's teardown drains the driver; when that
// drain does not tear the client down (a call of another kind was still
// in the store), the progress goroutine tries again on its own timer, not
// after SlowCall, since an operation that waits for a teardown may notify
// nothing until one comes (tried: drainDue's len(b.open) > 0 made <= 0
// leaves the second drain to SlowCall, an hour here).
func TestADrainThatDidNotTearDownIsTriedAgain(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{SlowCall: time.Hour})
	td := &teardown{}
	e.d.before = func(c call) (driver.Operation, error, bool) {
		return tornOp{n: len(c.rows), teardown: td}, nil, true
	}
	a := must(e.be.Fetch(t.Context(), e.view("r", 0, 1)))
	wait(t, a)
	var drains atomic.Int32
	e.d.mu.Lock()
	e.d.drain = func(ctx context.Context) bool {
		if drains.Add(1) == 1 {
			return false // the first try does not tear the client down
		}
		td.end()
		return true
	}
	e.d.mu.Unlock()
	err := bound.Value(t, 10*time.Second, "Shutdown, whose second drain tears the client down", func() error {
		return e.be.Shutdown(context.Background())
	})
	require.NoError(t, err)
	assert.GreaterOrEqual(t, drains.Load(), int32(2), "the drain was tried again")
	assert.True(t, closed(a.Quiesced()), "the teardown ended the get's access")
}

// TestAShutdownPinnedLeavesOnlyTeardownWaitersPinned: once an unprovable
// call pins the closing backend, only the calls whose operation says its
// access ends at the driver's teardown (driver.TeardownEnder) are counted
// unprovable; a call whose access ends by itself is still waited for, and
// its attempt quiesces when it does.
func TestAShutdownPinnedLeavesOnlyTeardownWaitersPinned(t *testing.T) {
	e := newEnv(t, memory.Options{}, backend.Config{})
	e.d.LoseEvidenceNext()
	wait(t, must(e.be.Publish(t.Context(), e.view("r", 0, 1))))
	require.Equal(t, 1, e.be.Stats().BatchesUnprovable)
	var end atomic.Bool
	e.d.before = func(c call) (driver.Operation, error, bool) {
		return laterOp{n: len(c.rows), end: &end}, nil, true
	}
	a := must(e.be.Fetch(t.Context(), e.view("r", 4, 1)))
	wait(t, a)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var se *backend.ShutdownError
	require.ErrorAs(t, e.be.Shutdown(ctx), &se)
	assert.Equal(t, 1, se.Pinned, "only the unprovable put's attempt: the get's access may still end by itself")
	assert.Equal(t, 1, se.Settling, "the get's attempt waits for its access")
	assert.Equal(t, 1, e.be.Stats().BatchesUnprovable)
	end.Store(true)
	wctx, wcancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer wcancel()
	assert.NoError(t, a.WaitQuiesced(wctx), "its access ended by itself: its slot may be reused")
	select {
	case <-e.be.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the progress goroutine did not exit")
	}
	require.ErrorAs(t, e.be.Shutdown(context.Background()), &se)
	assert.Equal(t, 1, se.Pinned)
	assert.Equal(t, []driver.Span{e.region.Slot(0)}, se.Kept, "only the put's slot is kept")
}

// refusingDriver refuses Unregister the first left times (for ever when
// left is negative), counting the refusals.
type refusingDriver struct {
	*memory.Driver
	mu      sync.Mutex
	left    int
	refused int
}

var errStillRegistered = errors.New("unregister_buffer raised after taking effect; it is still registered")

func (d *refusingDriver) Unregister(g driver.Registration) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.left != 0 {
		d.left--
		d.refused++
		return driver.Reject("unregister_buffer", "%v", errStillRegistered)
	}
	return d.Driver.Unregister(g)
}

func (d *refusingDriver) Refused() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.refused
}

// TestADriverThatNeverUnregistersEndsTheShutdown: a drained driver that
// refuses every unregister (an SDK that applied one and then raised
// refuses all later ones) is asked a bounded number of times: Shutdown,
// with no deadline, then returns a ShutdownError naming the region and the
// refusal, the hold is kept, the backend's goroutine has ended (Done), and
// a later Shutdown answers the same at once. The driver is asked exactly
// UnregisterTries times, so one that refuses a few times, or one time
// fewer than that, and then unregisters still shuts down cleanly (tried:
// counting from 1 gives up one refusal early). Before, the backend
// retried every second for ever, and Shutdown without a deadline never
// returned.
func TestADriverThatNeverUnregistersEndsTheShutdown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		refuses int
	}{{"refuses for ever", -1}, {"refuses three times", 3}, {"refuses one time fewer than the bound", backend.UnregisterTries - 1}} {
		t.Run(tc.name, func(t *testing.T) {
			lender, err := hostmem.NewLender("slots", driver.Layout{SlotBytes: slotBytes, Slots: 4})
			require.NoError(t, err)
			hold, err := lender.Hold()
			require.NoError(t, err)
			d := &refusingDriver{Driver: memory.New(memory.Options{}), left: tc.refuses}
			bind, err := backend.Bind(t.Context(), hold.Regions(), d, hold)
			require.NoError(t, err)
			be, err := backend.New(bind, backend.Config{Wake: newWaker().wake})
			require.NoError(t, err)

			err = bound.Value(t, 10*time.Second, "Shutdown with no deadline, the driver refusing to unregister,",
				func() error { return be.Shutdown(context.Background()) })
			if tc.refuses > 0 {
				require.NoError(t, err)
				assert.Equal(t, tc.refuses, d.Refused())
				assert.True(t, hold.Released())
				require.NoError(t, lender.Close())
				return
			}
			var se *backend.ShutdownError
			require.ErrorAs(t, err, &se)
			assert.True(t, driver.IsRejected(se.Unregistering), "the driver's refusal: %v", se.Unregistering)
			assert.ErrorContains(t, se.Unregistering, errStillRegistered.Error())
			assert.Equal(t, hold.Regions(), se.Registered)
			assert.Contains(t, err.Error(), "would not unregister")
			assert.False(t, hold.Released(), "the region may still be registered: the hold is kept")
			assert.True(t, closed(be.Done()), "the backend stopped asking: its goroutine ended")
			n := d.Refused()
			assert.Equal(t, backend.UnregisterTries, n, "a refusal is retried up to the bound, one region asked each time")
			again := bound.Value(t, time.Second, "a second Shutdown", func() error { return be.Shutdown(context.Background()) })
			assert.ErrorAs(t, again, &se)
			assert.Equal(t, n, d.Refused(), "nothing asks the driver any more")
			assert.False(t, be.Stats().ShutDown)
		})
	}
}

package metrics_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	memorygen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/runtime/metrics"
	"github.com/kvblob/kvblob/stores/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const slotBytes = 4 << 10

// logs is a zerolog writer that keeps every line and says when one came.
type logs struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	wrote chan struct{}
}

func newLogs() *logs { return &logs{wrote: make(chan struct{}, 1)} }

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

// events returns every logged line decoded.
func (l *logs) events(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
	for sc.Scan() {
		var e map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &e), sc.Text())
		out = append(out, e)
	}
	return out
}

// waitFor waits, on the log's writes, until an event with message msg is
// logged, and returns it.
func (l *logs) waitFor(t *testing.T, msg string) map[string]any {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		for _, e := range l.events(t) {
			if e["message"] == msg {
				return e
			}
		}
		select {
		case <-l.wrote:
		case <-deadline:
			t.Fatalf("no %q logged within 10s; logged:\n%s", msg, l.buf.String())
		}
	}
}

// env is a backend over an instrumented driver, both collectors in a
// registry served over loopback HTTP.
type env struct {
	t      *testing.T
	ctx    context.Context
	srv    *httptest.Server
	client *http.Client
	be     *backend.Backend
	slots  *driver.Region
	logs   *logs
	stem   driver.Stem
}

func newEnv(t *testing.T, d driver.Driver, store string, cfg backend.Config) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, logs: newLogs()}
	log := zerolog.New(e.logs)
	drivers := metrics.NewDrivers(metrics.Options{Logger: log})
	wrapped := drivers.Instrument(d, store)

	lender, err := hostmem.NewLender("kv", driver.Layout{SlotBytes: slotBytes, Slots: 16})
	require.NoError(t, err)
	hold, err := lender.Hold()
	require.NoError(t, err)
	bind, err := backend.Bind(t.Context(), hold.Regions(), wrapped, hold)
	require.NoError(t, err)
	if cfg.Prefix == "" {
		cfg.Prefix = "metrics-test"
	}
	cfg.Logger = log.With().Str("store", store).Logger()
	e.be, err = backend.New(bind, cfg)
	require.NoError(t, err)
	e.stem, err = driver.KeyStem(cfg.Prefix)
	require.NoError(t, err)
	e.slots = hold.Regions()[0]

	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(drivers, metrics.NewBackendCollector(store, e.be))
	e.srv = httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	e.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	t.Cleanup(func() {
		e.srv.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.be.Shutdown(sctx); err != nil {
			// A store may still touch the slots: keep the lender's memory.
			var se *backend.ShutdownError
			require.ErrorAs(t, err, &se)
			return
		}
		assert.NoError(t, d.Close())
		assert.NoError(t, lender.Close())
	})
	return e
}

// scrape GETs /metrics over loopback and returns every sample by its
// series as the text format prints it.
func (e *env) scrape() map[string]float64 {
	t := e.t
	t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, http.MethodGet, e.srv.URL+"/metrics", nil)
	require.NoError(t, err)
	resp, err := e.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	return out
}

// view is n rows named first, first+1, ..., one slot each from slot.
func (e *env) view(first byte, n, slot int) backend.View {
	v := make(backend.View, n)
	for i := range v {
		v[i] = backend.ViewRow{Name: []byte{first + byte(i)}, Spans: []driver.Span{e.slots.Slot(slot + i)}}
	}
	return v
}

func (e *env) key(name byte) string {
	k, err := e.stem.Key([]byte{name})
	require.NoError(e.t, err)
	return k
}

func (e *env) wait(a *backend.Attempt) backend.Outcome {
	e.t.Helper()
	o, err := a.Wait(e.ctx)
	require.NoError(e.t, err)
	return o
}

func (e *env) quiesce(a *backend.Attempt) {
	e.t.Helper()
	require.NoError(e.t, a.WaitQuiesced(e.ctx), "attempt never quiesced")
}

func s(name string, labels ...string) string {
	var parts []string
	for i := 0; i < len(labels); i += 2 {
		parts = append(parts, labels[i]+`="`+labels[i+1]+`"`)
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func rows(op, result string) string {
	return s("kvblob_driver_rows_total", "op", op, "result", result, "store", "memory")
}

func bytesOf(op string) string {
	return s("kvblob_driver_bytes_total", "op", op, "store", "memory")
}

func be(name string) string { return s("kvblob_backend_"+name, "store", "memory") }

func so(name, op string) string { return s(name, "op", op, "store", "memory") }

// moved returns after[k] - before[k], failing when the scrape lacks k.
func moved(t *testing.T, before, after map[string]float64, k string) float64 {
	t.Helper()
	a, ok := after[k]
	require.True(t, ok, "the scrape has no series %s", k)
	return a - before[k]
}

// TestScrapeSeesRowsMove publishes and fetches through a backend over the
// memory store and scrapes each family that moves when rows move.
func TestScrapeSeesRowsMove(t *testing.T) {
	e := newEnv(t, memory.New(memory.Options{}), "memory", backend.Config{RowsPerBatch: 2})
	before := e.scrape()
	for _, k := range []string{rows("put", "ready"), rows("get", "miss"), rows("get", "rejected"), bytesOf("get")} {
		require.Contains(t, before, k, "every series exists, at 0, once a driver is instrumented")
	}

	pub, err := e.be.Publish(t.Context(), e.view(0, 4, 0))
	require.NoError(t, err)
	e.wait(pub)
	e.quiesce(pub)
	get, err := e.be.Fetch(t.Context(), e.view(0, 4, 4))
	require.NoError(t, err)
	e.wait(get)
	e.quiesce(get)
	miss, err := e.be.Fetch(t.Context(), e.view(100, 2, 8))
	require.NoError(t, err)
	assert.Equal(t, 0, e.wait(miss).InOrder)
	e.quiesce(miss)

	after := e.scrape()
	assert.Equal(t, 4.0, moved(t, before, after, rows("put", "ready")))
	assert.Equal(t, 4.0, moved(t, before, after, rows("get", "ready")))
	assert.Equal(t, 2.0, moved(t, before, after, rows("get", "miss")))
	assert.Equal(t, 0.0, moved(t, before, after, rows("put", "fault")))
	assert.Equal(t, 4.0*slotBytes, moved(t, before, after, bytesOf("put")))
	assert.Equal(t, 4.0*slotBytes, moved(t, before, after, bytesOf("get")), "bytes moved: the misses moved none")
	// Two batches of two rows each way, and one batch of misses.
	assert.Equal(t, 2.0, moved(t, before, after, so("kvblob_driver_call_seconds_count", "put")))
	assert.Equal(t, 3.0, moved(t, before, after, so("kvblob_driver_call_seconds_count", "get")))
	assert.Equal(t, 2.0, moved(t, before, after, so("kvblob_driver_result_seconds_count", "put")))
	assert.Equal(t, 3.0, moved(t, before, after, so("kvblob_driver_result_seconds_count", "get")))
	assert.Greater(t, moved(t, before, after, so("kvblob_driver_call_seconds_sum", "get")), 0.0)
	assert.Equal(t, 3.0, moved(t, before, after, be("attempts_total")))
	assert.Equal(t, 5.0, moved(t, before, after, be("batches_queued_total")))
	assert.Equal(t, 5.0, moved(t, before, after, be("batches_started_total")))
	assert.Equal(t, 5.0, moved(t, before, after, be("batches_settled_total")))
	for _, g := range []string{so("kvblob_driver_calls_in_flight", "get"), so("kvblob_driver_operations_open", "put"),
		be("calls_open"), be("oldest_call_seconds"), be("protocol_violation"), be("batches_unprovable_total"), be("shut_down")} {
		assert.Equal(t, 0.0, after[g], g)
	}

	require.NoError(t, e.be.Shutdown(e.ctx))
	assert.Equal(t, 1.0, e.scrape()[be("shut_down")], "shut_down is 1 once Shutdown finished")
}

// TestScrapeSeesACallInFlight holds a get inside the store and scrapes the
// gauges of calls in progress, then sees them fall when it returns.
func TestScrapeSeesACallInFlight(t *testing.T) {
	d := memory.New(memory.Options{})
	e := newEnv(t, d, "memory", backend.Config{})
	entered, release := d.Store().Hold(memory.CallGet, e.key(0))
	defer release()
	a, err := e.be.Fetch(t.Context(), e.view(0, 1, 0))
	require.NoError(t, err)
	select {
	case <-entered:
	case <-e.ctx.Done():
		t.Fatal("the get never entered the store")
	}
	// One worker: a second fetch waits in the queue behind the held one.
	queued, err := e.be.Fetch(t.Context(), e.view(1, 1, 1))
	require.NoError(t, err)
	during := e.scrape()
	assert.Equal(t, 1.0, during[so("kvblob_driver_calls_in_flight", "get")])
	assert.Equal(t, 1.0, during[be("calls_open")])
	assert.Greater(t, during[be("oldest_call_seconds")], 0.0)
	assert.Equal(t, 2.0, during[be("batches_queued_total")])
	assert.Equal(t, 1.0, during[be("batches_started_total")])
	assert.Equal(t, 0.0, during[be("batches_settled_total")])
	release()
	for _, a := range []*backend.Attempt{a, queued} {
		e.wait(a)
		e.quiesce(a)
	}
	after := e.scrape()
	assert.Equal(t, 0.0, after[so("kvblob_driver_calls_in_flight", "get")])
	assert.Equal(t, 0.0, after[be("calls_open")])
	assert.Equal(t, 0.0, after[be("oldest_call_seconds")])
}

// TestScrapeSeesAnOpenAccess scrapes an operation whose results are in
// while the store still touches its memory.
func TestScrapeSeesAnOpenAccess(t *testing.T) {
	d := memory.New(memory.Options{})
	e := newEnv(t, d, "memory", backend.Config{})
	release := d.HoldAccessNext()
	defer release()
	a, err := e.be.Publish(t.Context(), e.view(0, 2, 0))
	require.NoError(t, err)
	e.wait(a)
	assert.False(t, closed(a.Quiesced()))
	assert.Equal(t, 1.0, e.scrape()[so("kvblob_driver_operations_open", "put")])
	release()
	e.quiesce(a)
	assert.Equal(t, 0.0, e.scrape()[so("kvblob_driver_operations_open", "put")])
}

// TestScrapeSeesPinnedMemory makes an operation lose the evidence of its
// access end and scrapes what it pins.
func TestScrapeSeesPinnedMemory(t *testing.T) {
	d := memory.New(memory.Options{})
	e := newEnv(t, d, "memory", backend.Config{})
	d.LoseEvidenceNext()
	a, err := e.be.Publish(t.Context(), e.view(0, 3, 0))
	require.NoError(t, err)
	e.wait(a)
	got := e.scrape()
	assert.Equal(t, 1.0, got[so("kvblob_driver_unprovable_operations_total", "put")])
	assert.Equal(t, 3.0, got[so("kvblob_driver_pinned_spans_total", "put")])
	assert.Equal(t, 3.0*slotBytes, got[so("kvblob_driver_pinned_bytes_total", "put")])
	assert.Equal(t, 0.0, got[so("kvblob_driver_operations_open", "put")])
	assert.Equal(t, 1.0, got[be("batches_unprovable_total")])

	ev := e.logs.waitFor(t, "driver: operation access unprovable; its memory is pinned and must never be reused")
	assert.Equal(t, "memory", ev["store"])
	assert.Equal(t, "put", ev["op"])
	assert.EqualValues(t, 3, ev["rows"])
	assert.EqualValues(t, 3*slotBytes, ev["bytes"])
	assertMillis(t, ev, metrics.FieldAge)

	var se *backend.ShutdownError
	require.ErrorAs(t, e.be.Shutdown(e.ctx), &se, "a pinned attempt keeps the lender's memory")
	assert.Equal(t, 1, se.Pinned)
}

// TestScrapeSeesFaults injects a store fault and sees the row counted and
// the event logged with the store's code and no key in any label.
func TestScrapeSeesFaults(t *testing.T) {
	d := memory.New(memory.Options{})
	e := newEnv(t, d, "memory", backend.Config{})
	pub, err := e.be.Publish(t.Context(), e.view(0, 2, 0))
	require.NoError(t, err)
	e.wait(pub)
	e.quiesce(pub)
	d.Store().Inject(memory.CallGet, e.key(1), memorygen.IOError)
	before := e.scrape()
	a, err := e.be.Fetch(t.Context(), e.view(0, 2, 4))
	require.NoError(t, err)
	o := e.wait(a)
	e.quiesce(a)
	require.Equal(t, 1, o.InOrder)
	after := e.scrape()
	assert.Equal(t, 1.0, moved(t, before, after, rows("get", "ready")))
	assert.Equal(t, 1.0, moved(t, before, after, rows("get", "fault")))
	assert.Equal(t, float64(slotBytes), moved(t, before, after, bytesOf("get")), "the READY row's bytes alone moved")
	for k := range after {
		assert.NotContains(t, k, e.key(1), "no label holds a key")
	}

	ev := e.logs.waitFor(t, "driver: rows faulted")
	assert.Equal(t, "get", ev["op"])
	assert.EqualValues(t, 1, ev["rows"])
	assert.EqualValues(t, slotBytes, ev["bytes"])
	assert.EqualValues(t, int64(memorygen.IOError), ev["code"])
	assert.NotEmpty(t, ev["error"])
}

// broken is a memory driver whose Put refuses every call and whose Get
// fails with an error that is not a DriverRejected: a protocol violation.
type broken struct{ *memory.Driver }

func (b broken) Put(context.Context, []driver.Row) (driver.Operation, error) {
	return nil, driver.Reject(driver.RuleClosed, "refusing for the test")
}

func (b broken) Get(context.Context, []driver.Row, driver.Hint) (driver.Operation, error) {
	return nil, errors.New("the connection broke")
}

// TestScrapeSeesRejectionsAndViolations counts the rows of refused and
// failed calls and reads the protocol-violation gauge.
func TestScrapeSeesRejectionsAndViolations(t *testing.T) {
	e := newEnv(t, broken{memory.New(memory.Options{})}, "memory", backend.Config{})
	before := e.scrape()
	pub, err := e.be.Publish(t.Context(), e.view(0, 2, 0))
	require.NoError(t, err)
	e.wait(pub)
	e.quiesce(pub)
	mid := e.scrape()
	assert.Equal(t, 2.0, moved(t, before, mid, rows("put", "rejected")))
	assert.Equal(t, 0.0, mid[be("protocol_violation")])
	ev := e.logs.waitFor(t, "driver: call rejected")
	assert.Equal(t, driver.RuleClosed, ev["rule"])

	get, err := e.be.Fetch(t.Context(), e.view(0, 3, 4))
	require.NoError(t, err)
	e.wait(get)
	after := e.scrape()
	assert.Equal(t, 3.0, moved(t, before, after, rows("get", "error")))
	assert.Equal(t, 0.0, moved(t, before, after, bytesOf("get")), "a failed call moved nothing")
	assert.Equal(t, 1.0, after[be("protocol_violation")])
	ev = e.logs.waitFor(t, "driver: call failed without a DriverRejected error")
	assert.Equal(t, "the connection broke", ev["error"])
}

// mute is a memory driver whose Get returns neither an operation nor an
// error: a protocol violation of another kind.
type mute struct{ *memory.Driver }

func (mute) Get(context.Context, []driver.Row, driver.Hint) (driver.Operation, error) {
	return nil, nil
}

// TestScrapeSeesACallThatReturnedNothing: a call that returned neither an
// operation nor an error counts its rows as errors and logs that it did,
// as a failed call does; the test above has only calls that returned an
// error (tried: call's err != nil || op == nil as && fails here).
func TestScrapeSeesACallThatReturnedNothing(t *testing.T) {
	e := newEnv(t, mute{memory.New(memory.Options{})}, "memory", backend.Config{})
	before := e.scrape()
	get, err := e.be.Fetch(t.Context(), e.view(0, 2, 0))
	require.NoError(t, err)
	e.wait(get)
	after := e.scrape()
	assert.Equal(t, 2.0, moved(t, before, after, rows("get", "error")))
	assert.Equal(t, 1.0, after[be("protocol_violation")])
	ev := e.logs.waitFor(t, "driver: call returned neither an operation nor an error")
	assert.Equal(t, "get", ev["op"])
	assert.EqualValues(t, 2, ev["rows"])
}

// TestInstrumentForwardsAs reaches the memory driver through the wrapper.
func TestInstrumentForwardsAs(t *testing.T) {
	d := memory.New(memory.Options{})
	w := metrics.NewDrivers(metrics.Options{}).Instrument(d, "memory")
	var got *memory.Driver
	require.True(t, driver.As(w, &got))
	assert.Same(t, d, got)
}

// TestSlowCallFieldsAreStable holds a get past the backend's slow-call
// threshold and reads the warning's fields.
func TestSlowCallFieldsAreStable(t *testing.T) {
	d := memory.New(memory.Options{})
	e := newEnv(t, d, "memory", backend.Config{SlowCall: time.Millisecond})
	entered, release := d.Store().Hold(memory.CallGet, e.key(0))
	defer release()
	a, err := e.be.Fetch(t.Context(), e.view(0, 2, 0))
	require.NoError(t, err)
	<-entered
	ev := e.logs.waitFor(t, "backend: a driver call is taking longer than the slow-call threshold")
	release()
	e.wait(a)
	e.quiesce(a)
	assert.Equal(t, "warn", ev["level"])
	assert.Equal(t, "memory", ev["store"])
	assert.Equal(t, "get", ev["op"])
	assert.EqualValues(t, 2, ev["rows"])
	assert.EqualValues(t, 2*slotBytes, ev["bytes"])
	assertMillis(t, ev, metrics.FieldAge)
}

// assertMillis checks that ev's field is a whole number of milliseconds
// in a field whose name says so, whatever zerolog.DurationFieldUnit is.
func assertMillis(t *testing.T, ev map[string]any, field string) {
	t.Helper()
	require.True(t, strings.HasSuffix(field, "_ms"), "a duration's field names its unit")
	v, ok := ev[field].(float64)
	require.True(t, ok, "%s is a number: %v", field, ev)
	assert.Equal(t, float64(int64(v)), v, "%s is whole milliseconds", field)
	assert.Less(t, v, 60_000.0, "%s is in milliseconds, not a finer unit", field)
}

// closed asks, without waiting, whether ch is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestRowFaultLogsAreRateLimited: at most one "driver: rows faulted"
// event per store, op and code in each Options.FaultLogEvery; the next
// one logged says how many were held back and their rows, while the
// counters count every row.
func TestRowFaultLogsAreRateLimited(t *testing.T) {
	d := memory.New(memory.Options{})
	log := newLogs()
	drivers := metrics.NewDrivers(metrics.Options{Logger: zerolog.New(log), FaultLogEvery: time.Second})
	now := time.Unix(1000, 0)
	metrics.SetClock(drivers, func() time.Time { return now })
	w := drivers.Instrument(d, "memory")
	lender, err := hostmem.NewLender("kv", driver.Layout{SlotBytes: slotBytes, Slots: 4})
	require.NoError(t, err)
	defer func() { require.NoError(t, lender.Close()) }()
	r := lender.Regions()[0]
	reg, err := w.Register(r)
	require.NoError(t, err)
	stem, err := driver.KeyStem("rate")
	require.NoError(t, err)
	key, err := stem.Key([]byte("k"))
	require.NoError(t, err)
	get := func(code memorygen.Code) {
		t.Helper()
		d.Store().Inject(memory.CallGet, key, code)
		op, err := w.Get(t.Context(), []driver.Row{{Key: key, Spans: []driver.Span{r.Slot(0)}}}, driver.Hint{})
		require.NoError(t, err)
		res, done := op.Poll()
		require.True(t, done)
		require.Equal(t, driver.Fault, res[0].Status)
		require.True(t, op.AccessEnded())
	}
	faulted := func() []map[string]any {
		var out []map[string]any
		for _, ev := range log.events(t) {
			if ev["message"] == "driver: rows faulted" {
				out = append(out, ev)
			}
		}
		return out
	}

	get(memorygen.IOError) // logged: the first of its code
	get(memorygen.IOError) // held back: within the second
	get(memorygen.IOError) // held back
	get(memorygen.Corrupt) // another code: logged
	now = now.Add(999 * time.Millisecond)
	get(memorygen.IOError) // held back: still within the second
	require.Len(t, faulted(), 2, "one event per code within FaultLogEvery")
	assert.EqualValues(t, 0, faulted()[0][metrics.FieldSuppressed])
	assert.EqualValues(t, int64(memorygen.Corrupt), faulted()[1][metrics.FieldCode])

	now = now.Add(time.Millisecond)
	get(memorygen.IOError) // a second after the first: logged, with what was held back
	evs := faulted()
	require.Len(t, evs, 3)
	assert.EqualValues(t, int64(memorygen.IOError), evs[2][metrics.FieldCode])
	assert.EqualValues(t, 3, evs[2][metrics.FieldSuppressed], "three events held back since the last")
	assert.EqualValues(t, 3, evs[2][metrics.FieldSuppressedRows])

	reg2 := prometheus.NewRegistry()
	reg2.MustRegister(drivers)
	families, err := reg2.Gather()
	require.NoError(t, err)
	faults := 0.0
	for _, f := range families {
		if f.GetName() != "kvblob_driver_rows_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "fault" {
					faults += m.GetCounter().GetValue()
				}
			}
		}
	}
	assert.Equal(t, 6.0, faults, "the counters count every faulted row")
	require.NoError(t, w.Unregister(reg))
}

// TestDefaultBucketsAreOneTwoFive: the default buckets are 1, 2 and 5
// times each power of ten from 10 µs to 20 s, then the slow-call
// threshold, 60 s, as their doc says.
func TestDefaultBucketsAreOneTwoFive(t *testing.T) {
	var want []float64
	for e := -5; e <= 1; e++ {
		for _, m := range []float64{1, 2, 5} {
			if b := m * math.Pow10(e); b <= 20 {
				want = append(want, b)
			}
		}
	}
	want = append(want, 60)
	require.Len(t, metrics.DefaultBuckets, len(want))
	for i, b := range metrics.DefaultBuckets {
		assert.InEpsilon(t, want[i], b, 1e-9, "bucket %d", i)
	}
}

// TestDefaultBucketsSeeALocalCall: a local call of 1 MiB takes 100-200
// µs and a memory store's call of a few KiB a few microseconds; the
// default buckets tell those apart from each other and from a 250 µs
// call, instead of lumping all under one bound.
func TestDefaultBucketsSeeALocalCall(t *testing.T) {
	bucketOf := func(d time.Duration) float64 {
		for _, b := range metrics.DefaultBuckets {
			if d.Seconds() <= b {
				return b
			}
		}
		return math.Inf(1)
	}
	assert.NotEqual(t, bucketOf(5*time.Microsecond), bucketOf(50*time.Microsecond), "a memory store's small call has buckets of its own")
	assert.NotEqual(t, bucketOf(90*time.Microsecond), bucketOf(150*time.Microsecond))
	assert.NotEqual(t, bucketOf(150*time.Microsecond), bucketOf(250*time.Microsecond))
	assert.Equal(t, 60.0, metrics.DefaultBuckets[len(metrics.DefaultBuckets)-1], "up to the slow-call threshold")
	assert.True(t, slices.IsSorted(metrics.DefaultBuckets))
}

// TestMonotonicFamiliesAreCounters: a count that never goes down is a
// counter named _total (so rate() and increase() apply), never a gauge.
func TestMonotonicFamiliesAreCounters(t *testing.T) {
	d := memory.New(memory.Options{})
	e := newEnv(t, d, "memory", backend.Config{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewBackendCollector("memory", e.be))
	drivers := metrics.NewDrivers(metrics.Options{})
	drivers.Instrument(memory.New(memory.Options{}), "other")
	reg.MustRegister(drivers)
	families, err := reg.Gather()
	require.NoError(t, err)
	types := map[string]string{}
	for _, f := range families {
		types[f.GetName()] = f.GetType().String()
	}
	for _, name := range []string{"kvblob_backend_batches_unprovable_total", "kvblob_driver_pinned_spans_total",
		"kvblob_driver_pinned_bytes_total", "kvblob_driver_unprovable_operations_total", "kvblob_driver_bytes_total"} {
		assert.Equal(t, "COUNTER", types[name], "%s never goes down", name)
	}
	for name, typ := range types {
		assert.Equal(t, typ == "COUNTER", strings.HasSuffix(name, "_total"), "%s is a %s", name, typ)
	}
}

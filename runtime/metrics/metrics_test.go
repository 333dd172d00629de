package metrics_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
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

	gen "github.com/kvblob/kvblob/generated/memory"
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

func bytesOf(op, result string) string {
	return s("kvblob_driver_bytes_total", "op", op, "result", result, "store", "memory")
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
	for _, k := range []string{rows("put", "ready"), rows("get", "miss"), rows("get", "rejected"), bytesOf("get", "error")} {
		require.Contains(t, before, k, "every series exists, at 0, once a driver is instrumented")
	}

	pub, err := e.be.Publish(t.Context(), e.view(0, 4, 0))
	require.NoError(t, err)
	e.wait(pub)
	e.quiesce(pub)
	get, err := e.be.Fetch(t.Context(), e.view(0, 4, 4), driver.Hint{})
	require.NoError(t, err)
	e.wait(get)
	e.quiesce(get)
	miss, err := e.be.Fetch(t.Context(), e.view(100, 2, 8), driver.Hint{})
	require.NoError(t, err)
	assert.Equal(t, 0, e.wait(miss).InOrder)
	e.quiesce(miss)

	after := e.scrape()
	assert.Equal(t, 4.0, moved(t, before, after, rows("put", "ready")))
	assert.Equal(t, 4.0, moved(t, before, after, rows("get", "ready")))
	assert.Equal(t, 2.0, moved(t, before, after, rows("get", "miss")))
	assert.Equal(t, 0.0, moved(t, before, after, rows("put", "fault")))
	assert.Equal(t, 4.0*slotBytes, moved(t, before, after, bytesOf("put", "ready")))
	assert.Equal(t, 4.0*slotBytes, moved(t, before, after, bytesOf("get", "ready")))
	assert.Equal(t, 2.0*slotBytes, moved(t, before, after, bytesOf("get", "miss")))
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
		be("calls_open"), be("oldest_call_seconds"), be("protocol_violation"), be("batches_unprovable"), be("shut_down")} {
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
	a, err := e.be.Fetch(t.Context(), e.view(0, 1, 0), driver.Hint{})
	require.NoError(t, err)
	select {
	case <-entered:
	case <-e.ctx.Done():
		t.Fatal("the get never entered the store")
	}
	// One worker: a second fetch waits in the queue behind the held one.
	queued, err := e.be.Fetch(t.Context(), e.view(1, 1, 1), driver.Hint{})
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
	assert.Equal(t, 3.0, got[so("kvblob_driver_pinned_spans", "put")])
	assert.Equal(t, 3.0*slotBytes, got[so("kvblob_driver_pinned_bytes", "put")])
	assert.Equal(t, 0.0, got[so("kvblob_driver_operations_open", "put")])
	assert.Equal(t, 1.0, got[be("batches_unprovable")])

	ev := e.logs.waitFor(t, "driver: operation access unprovable; its memory is pinned and must never be reused")
	assert.Equal(t, "memory", ev["store"])
	assert.Equal(t, "put", ev["op"])
	assert.EqualValues(t, 3, ev["rows"])
	assert.EqualValues(t, 3*slotBytes, ev["bytes"])
	assert.Contains(t, ev, "age")

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
	d.Store().Inject(memory.CallGet, e.key(1), gen.IOError)
	before := e.scrape()
	a, err := e.be.Fetch(t.Context(), e.view(0, 2, 4), driver.Hint{})
	require.NoError(t, err)
	o := e.wait(a)
	e.quiesce(a)
	require.Equal(t, 1, o.InOrder)
	after := e.scrape()
	assert.Equal(t, 1.0, moved(t, before, after, rows("get", "ready")))
	assert.Equal(t, 1.0, moved(t, before, after, rows("get", "fault")))
	assert.Equal(t, float64(slotBytes), moved(t, before, after, bytesOf("get", "fault")))
	for k := range after {
		assert.NotContains(t, k, e.key(1), "no label holds a key")
	}

	ev := e.logs.waitFor(t, "driver: rows faulted")
	assert.Equal(t, "get", ev["op"])
	assert.EqualValues(t, 1, ev["rows"])
	assert.EqualValues(t, slotBytes, ev["bytes"])
	assert.EqualValues(t, int64(gen.IOError), ev["code"])
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

	get, err := e.be.Fetch(t.Context(), e.view(0, 3, 4), driver.Hint{})
	require.NoError(t, err)
	e.wait(get)
	after := e.scrape()
	assert.Equal(t, 3.0, moved(t, before, after, rows("get", "error")))
	assert.Equal(t, 3.0*slotBytes, moved(t, before, after, bytesOf("get", "error")))
	assert.Equal(t, 1.0, after[be("protocol_violation")])
	ev = e.logs.waitFor(t, "driver: call failed without a DriverRejected error")
	assert.Equal(t, "the connection broke", ev["error"])
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
	a, err := e.be.Fetch(t.Context(), e.view(0, 2, 0), driver.Hint{})
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
	assert.Contains(t, ev, "age")
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

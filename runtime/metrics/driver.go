package metrics

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Field names of every log event this package and the backend write. They
// never change; new fields are added beside them. A duration's field
// names its unit (age_ms): neither package reads zerolog's globals
// (DurationFieldUnit, ErrorFieldName, TimeFieldFormat, ...), which an
// embedder may set for its own logs.
const (
	FieldStore          = "store"           // the store name given to Instrument
	FieldOp             = "op"              // "put" or "get"
	FieldRows           = "rows"            // rows of the call, or of the rows the event is about
	FieldBytes          = "bytes"           // payload bytes of those rows
	FieldCode           = "code"            // the store's numeric code of a FAULT
	FieldAge            = "age_ms"          // milliseconds since the call started
	FieldRule           = "rule"            // the rule of a driver.RejectedError
	FieldError          = "error"           // an error's or a FAULT's text
	FieldResults        = "results"         // how many results an operation answered
	FieldSuppressed     = "suppressed"      // "driver: rows faulted" events of this store, op and code not logged since the last one
	FieldSuppressedRows = "suppressed_rows" // the rows of those events
)

// Result label values beside the row statuses in lower case ("ready",
// "miss", "not_ready", "declined", "fault", "cancelled").
const (
	// ResultRejected counts the rows of a call refused with a
	// driver.RejectedError: nothing was recorded and nothing escaped.
	ResultRejected = "rejected"
	// ResultError counts the rows of a call that failed with any other
	// error, or whose operation answered the wrong number of results: a
	// protocol violation.
	ResultError = "error"
)

// Ops are the op label's values.
const (
	OpPut = "put"
	OpGet = "get"
)

// DefaultBuckets are the latency histograms' buckets, in seconds, 1-2-5
// from 10 µs to 60 s (the backend's slow-call threshold): a memory
// store's call of a few KiB takes a few microseconds, a local call of
// 1 MiB 100-200 µs (told apart by the 100, 200 and 500 µs bounds), a
// loopback Redis call a few hundred microseconds to milliseconds.
var DefaultBuckets = []float64{
	10e-6, 20e-6, 50e-6, 100e-6, 200e-6, 500e-6,
	.001, .002, .005, .01, .02, .05, .1, .2, .5,
	1, 2, 5, 10, 20, 60,
}

// DefaultFaultLogEvery is the default Options.FaultLogEvery.
const DefaultFaultLogEvery = time.Second

// Options configure Drivers. The zero value logs nothing and uses
// DefaultBuckets.
type Options struct {
	// Logger receives the drivers' events (zero value: discarded). Each
	// instrumented driver adds store=<its name>.
	Logger zerolog.Logger
	// Buckets are the latency histograms' buckets in seconds (nil:
	// DefaultBuckets).
	Buckets []float64
	// FaultLogEvery bounds the "driver: rows faulted" events: at most one
	// per store, op and fault code in each FaultLogEvery (0 or less:
	// DefaultFaultLogEvery, 1 s). The events it holds back are counted,
	// and the next event of that store, op and code logged carries the
	// count (suppressed) and their rows (suppressed_rows). The counters
	// (kvblob_driver_rows_total) count every row whatever the log keeps.
	FaultLogEvery time.Duration
}

// Drivers counts what moves through the drivers its Instrument wraps. It
// is a prometheus.Collector: register it once. Build it with NewDrivers.
type Drivers struct {
	log        zerolog.Logger
	faultEvery time.Duration
	now        func() time.Time // the fault log's clock (a test's own)

	rows, bytes          *prometheus.CounterVec
	callSecs, resultSecs *prometheus.HistogramVec
	inFlight, opsOpen    *prometheus.GaugeVec
	unprovable           *prometheus.CounterVec
	pinnedSpans          *prometheus.CounterVec
	pinnedBytes          *prometheus.CounterVec
}

// NewDrivers returns the driver metrics, with no series until a driver is
// instrumented.
func NewDrivers(opt Options) *Drivers {
	buckets := opt.Buckets
	if buckets == nil {
		buckets = DefaultBuckets
	}
	every := opt.FaultLogEvery
	if every <= 0 {
		every = DefaultFaultLogEvery
	}
	so := []string{"store", "op"}
	sor := []string{"store", "op", "result"}
	return &Drivers{
		log: opt.Logger, faultEvery: every, now: time.Now,
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvblob_driver_rows_total",
			Help: "Rows through Put (op=put) and Get (op=get), by the row's result."}, sor),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvblob_driver_bytes_total",
			Help: "Payload bytes moved: of the rows that answered READY (a put stored them whole, a get read them whole)."}, so),
		callSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kvblob_driver_call_seconds",
			Help: "Time a Put or Get call took to return.", Buckets: buckets}, so),
		resultSecs: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kvblob_driver_result_seconds",
			Help: "Time from a call's start until a Poll saw every row's result.", Buckets: buckets}, so),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kvblob_driver_calls_in_flight",
			Help: "Put and Get calls inside the driver now."}, so),
		opsOpen: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kvblob_driver_operations_open",
			Help: "Recorded operations whose access end has not been observed yet (the store may still touch their memory)."}, so),
		unprovable: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvblob_driver_unprovable_operations_total",
			Help: "Operations whose driver lost the evidence that its access ended; their memory must never be reused."}, so),
		pinnedSpans: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvblob_driver_pinned_spans_total",
			Help: "Spans (slots) named by unprovable operations: memory pinned for the life of the process, so it never goes down."}, so),
		pinnedBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kvblob_driver_pinned_bytes_total",
			Help: "Bytes of the spans of kvblob_driver_pinned_spans_total."}, so),
	}
}

func (m *Drivers) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.rows, m.bytes, m.callSecs, m.resultSecs, m.inFlight, m.opsOpen, m.unprovable, m.pinnedSpans, m.pinnedBytes}
}

// Describe sends the descriptors of every family.
func (m *Drivers) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect sends every series.
func (m *Drivers) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

var _ prometheus.Collector = (*Drivers)(nil)

// results are every result label value, in a fixed order.
var results = func() []string {
	var out []string
	for s := driver.Ready; s <= driver.Cancelled; s++ {
		out = append(out, resultLabel(s))
	}
	return append(out, ResultRejected, ResultError)
}()

func resultLabel(s driver.Status) string { return strings.ToLower(s.String()) }

// Instrument returns d wrapped: every Put and Get is counted under
// store=store, and the events of docs/operating.md are logged. driver.As
// on the wrapper reaches d. Instrument every driver once, with a store
// name that stays fixed (the store's kind, "redis", or a deployment's
// short name); the name is a label, so never derive it from request data.
func (m *Drivers) Instrument(d driver.Driver, store string) driver.Driver {
	w := &instrumented{d: d, m: m, log: m.log.With().Str(FieldStore, store).Logger(), faults: map[faultKey]*faultLog{}}
	for _, op := range []string{OpPut, OpGet} {
		s := &w.put
		if op == OpGet {
			s = &w.get
		}
		*s = series{
			op:          op,
			rows:        map[string]prometheus.Counter{},
			bytes:       m.bytes.WithLabelValues(store, op),
			callSecs:    m.callSecs.WithLabelValues(store, op),
			resultSecs:  m.resultSecs.WithLabelValues(store, op),
			inFlight:    m.inFlight.WithLabelValues(store, op),
			opsOpen:     m.opsOpen.WithLabelValues(store, op),
			unprovable:  m.unprovable.WithLabelValues(store, op),
			pinnedSpans: m.pinnedSpans.WithLabelValues(store, op),
			pinnedBytes: m.pinnedBytes.WithLabelValues(store, op),
		}
		for _, r := range results { // every series exists from the start, at 0
			s.rows[r] = m.rows.WithLabelValues(store, op, r)
		}
	}
	return w
}

// series are one store's and one op's series, looked up once.
type series struct {
	op                       string
	rows                     map[string]prometheus.Counter // by result; read-only after Instrument
	bytes                    prometheus.Counter            // of READY rows
	callSecs, resultSecs     prometheus.Observer
	inFlight, opsOpen        prometheus.Gauge
	unprovable               prometheus.Counter
	pinnedSpans, pinnedBytes prometheus.Counter
}

// instrumented is a driver wrapped by Instrument.
type instrumented struct {
	d        driver.Driver
	m        *Drivers
	log      zerolog.Logger
	put, get series

	mu     sync.Mutex
	faults map[faultKey]*faultLog // the "rows faulted" events' rate limit
}

// faultKey is what the fault log limits its events by, beside the store.
type faultKey struct {
	op   string
	code int64
}

// faultLog is one key's last event logged and what was held back since.
type faultLog struct {
	last                 time.Time
	suppressed, suppRows int
}

// allowFault reports whether an event of rows faulted rows may be logged
// now; when it may, it returns the events and rows held back since the
// last one, and counts them from zero again; when not, it counts this one.
func (w *instrumented) allowFault(op string, code int64, rows int) (ok bool, suppressed, suppressedRows int) {
	now := w.m.now()
	w.mu.Lock()
	defer w.mu.Unlock()
	k := faultKey{op, code}
	f := w.faults[k]
	if f == nil {
		f = &faultLog{}
		w.faults[k] = f
	} else if now.Sub(f.last) < w.m.faultEvery {
		f.suppressed++
		f.suppRows += rows
		return false, 0, 0
	}
	suppressed, suppressedRows = f.suppressed, f.suppRows
	*f = faultLog{last: now}
	return true, suppressed, suppressedRows
}

var _ driver.Driver = (*instrumented)(nil)

func (w *instrumented) Capabilities() driver.Capabilities { return w.d.Capabilities() }
func (w *instrumented) Register(r *driver.Region) (driver.Registration, error) {
	return w.d.Register(r)
}
func (w *instrumented) Unregister(reg driver.Registration) error { return w.d.Unregister(reg) }
func (w *instrumented) Drain(ctx context.Context) bool           { return w.d.Drain(ctx) }
func (w *instrumented) Close() error                             { return w.d.Close() }

// As reaches the wrapped driver (see driver.As).
func (w *instrumented) As(target any) bool { return driver.As(w.d, target) }

func (w *instrumented) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	return w.call(&w.put, rows, func() (driver.Operation, error) { return w.d.Put(ctx, rows) })
}

func (w *instrumented) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	return w.call(&w.get, rows, func() (driver.Operation, error) { return w.d.Get(ctx, rows, hint) })
}

func (w *instrumented) call(s *series, rows []driver.Row, call func() (driver.Operation, error)) (driver.Operation, error) {
	sizes := make([]int64, len(rows))
	var total int64
	spans := 0
	for i, r := range rows {
		sizes[i] = r.Bytes()
		total += sizes[i]
		spans += len(r.Spans)
	}
	start := time.Now()
	s.inFlight.Inc()
	op, err := call()
	s.inFlight.Dec()
	s.callSecs.Observe(time.Since(start).Seconds())
	if err != nil || op == nil {
		result := ResultError
		var rej *driver.RejectedError
		switch {
		case errors.As(err, &rej):
			result = ResultRejected
			w.log.Warn().Str(FieldOp, s.op).Int(FieldRows, len(rows)).Int64(FieldBytes, total).Str(FieldRule, rej.Rule).
				Str(FieldError, err.Error()).Msg("driver: call rejected")
		case err == nil:
			w.log.Error().Str(FieldOp, s.op).Int(FieldRows, len(rows)).Int64(FieldBytes, total).
				Msg("driver: call returned neither an operation nor an error")
		default:
			w.log.Error().Str(FieldOp, s.op).Int(FieldRows, len(rows)).Int64(FieldBytes, total).
				Str(FieldError, err.Error()).Msg("driver: call failed without a DriverRejected error")
		}
		s.rows[result].Add(float64(len(rows)))
		return op, err
	}
	s.opsOpen.Inc()
	return &operation{Operation: op, w: w, s: s, start: start, sizes: sizes, total: total, spans: spans}, nil
}

// operation is an operation of an instrumented driver: it counts its rows
// the first time a Poll sees them all, and its access end or loss the
// first time AccessEnded or AccessUnprovable reports it.
type operation struct {
	driver.Operation
	w     *instrumented
	s     *series
	start time.Time
	sizes []int64
	total int64
	spans int

	mu                 sync.Mutex
	counted, accessSet bool
}

// Unwrap returns the wrapped driver's operation.
func (o *operation) Unwrap() driver.Operation { return o.Operation }

func (o *operation) Poll() ([]driver.Result, bool) {
	res, done := o.Operation.Poll()
	if done {
		o.mu.Lock()
		first := !o.counted
		o.counted = true
		o.mu.Unlock()
		if first {
			o.count(res)
		}
	}
	return res, done
}

func (o *operation) count(res []driver.Result) {
	s, log := o.s, o.w.log
	s.resultSecs.Observe(time.Since(o.start).Seconds())
	if len(res) != len(o.sizes) {
		s.rows[ResultError].Add(float64(len(o.sizes)))
		log.Error().Str(FieldOp, s.op).Int(FieldRows, len(o.sizes)).Int64(FieldBytes, o.total).Int(FieldResults, len(res)).
			Msg("driver: operation answered the wrong number of results")
		return
	}
	type faults struct {
		rows  int
		bytes int64
		text  string
	}
	var byCode map[int64]*faults
	var codes []int64 // in the order first seen
	var moved int64
	for i, r := range res {
		label := ResultError
		if r.Status >= driver.Ready && r.Status <= driver.Cancelled {
			label = resultLabel(r.Status)
		}
		s.rows[label].Inc()
		if r.Status == driver.Ready {
			moved += o.sizes[i]
		}
		if r.Status == driver.Fault {
			if byCode == nil {
				byCode = map[int64]*faults{}
			}
			f := byCode[r.Code]
			if f == nil {
				f = &faults{text: r.Text}
				byCode[r.Code] = f
				codes = append(codes, r.Code)
			}
			f.rows++
			f.bytes += o.sizes[i]
		}
	}
	s.bytes.Add(float64(moved))
	for _, c := range codes {
		f := byCode[c]
		ok, suppressed, suppressedRows := o.w.allowFault(s.op, c, f.rows)
		if !ok {
			continue
		}
		log.Warn().Str(FieldOp, s.op).Int(FieldRows, f.rows).Int64(FieldBytes, f.bytes).Int64(FieldCode, c).
			Str(FieldError, f.text).Int(FieldSuppressed, suppressed).Int(FieldSuppressedRows, suppressedRows).
			Msg("driver: rows faulted")
	}
}

func (o *operation) AccessEnded() bool {
	ended := o.Operation.AccessEnded()
	if ended && o.settleAccess() {
		o.s.opsOpen.Dec()
	}
	return ended
}

func (o *operation) AccessUnprovable() bool {
	lost := o.Operation.AccessUnprovable()
	if lost && o.settleAccess() {
		s := o.s
		s.opsOpen.Dec()
		s.unprovable.Inc()
		s.pinnedSpans.Add(float64(o.spans))
		s.pinnedBytes.Add(float64(o.total))
		o.w.log.Error().Str(FieldOp, s.op).Int(FieldRows, len(o.sizes)).Int64(FieldBytes, o.total).
			Int64(FieldAge, time.Since(o.start).Milliseconds()).
			Msg("driver: operation access unprovable; its memory is pinned and must never be reused")
	}
	return lost
}

// settleAccess reports whether this is the first access end or loss seen.
func (o *operation) settleAccess() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	first := !o.accessSet
	o.accessSet = true
	return first
}

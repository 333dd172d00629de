package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kvblob/kvblob/runtime/backend"
)

// StatsSource is what a BackendCollector reads: a *backend.Backend.
type StatsSource interface {
	Stats() backend.Stats
}

// BackendCollector is a prometheus.Collector over one backend's Stats,
// read afresh at each scrape. Build it with NewBackendCollector.
type BackendCollector struct {
	src   StatsSource
	descs backendDescs
}

type backendDescs struct {
	attempts, queued, started, settled       *prometheus.Desc
	unprovable, open, oldest, violation, off *prometheus.Desc
}

// NewBackendCollector returns a collector over src's Stats, every series
// labelled store=store. Register one per backend; two backends over one
// store need two names ("redis-model-a", "redis-model-b"), or the
// registry refuses the second.
func NewBackendCollector(store string, src StatsSource) *BackendCollector {
	l := prometheus.Labels{"store": store}
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc("kvblob_backend_"+name, help, nil, l)
	}
	return &BackendCollector{src: src, descs: backendDescs{
		attempts:   d("attempts_total", "Publishes and fetches submitted (Stats.Attempts)."),
		queued:     d("batches_queued_total", "Batches queued: one batch is one driver call's rows (Stats.BatchesQueued)."),
		started:    d("batches_started_total", "Batches handed to the driver (Stats.BatchesStarted)."),
		settled:    d("batches_settled_total", "Batches whose results are recorded and whose access ended, or that went unprovable with results recorded (Stats.BatchesSettled)."),
		unprovable: d("batches_unprovable_total", "Batches whose driver can never prove its access ended; their slots are pinned for the life of the process, so it never goes down (Stats.BatchesUnprovable)."),
		open:       d("calls_open", "Driver calls started and not settled (Stats.CallsOpen)."),
		oldest:     d("oldest_call_seconds", "Age of the oldest open driver call, 0 when none is open (Stats.OldestCall)."),
		violation:  d("protocol_violation", "1 once the driver broke its protocol: the backend refuses every later submission (Stats.ProtocolViolation; the refusal and the driver's log say what happened)."),
		off:        d("shut_down", "1 once Shutdown finished: the driver drained and every region is unregistered (Stats.ShutDown)."),
	}}
}

// Describe sends the descriptors of every series.
func (c *BackendCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.all() {
		ch <- d
	}
}

func (c *BackendCollector) all() []*prometheus.Desc {
	d := c.descs
	return []*prometheus.Desc{d.attempts, d.queued, d.started, d.settled, d.unprovable, d.open, d.oldest, d.violation, d.off}
}

// Collect reads Stats once and sends every series.
func (c *BackendCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	d := c.descs
	counter := func(desc *prometheus.Desc, v int) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, float64(v))
	}
	gauge := func(desc *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v)
	}
	counter(d.attempts, s.Attempts)
	counter(d.queued, s.BatchesQueued)
	counter(d.started, s.BatchesStarted)
	counter(d.settled, s.BatchesSettled)
	counter(d.unprovable, s.BatchesUnprovable)
	gauge(d.open, float64(s.CallsOpen))
	gauge(d.oldest, s.OldestCall.Seconds())
	gauge(d.violation, flag(s.ProtocolViolation != ""))
	gauge(d.off, flag(s.ShutDown))
}

func flag(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var _ prometheus.Collector = (*BackendCollector)(nil)

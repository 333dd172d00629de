package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	mcgen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

type plan struct {
	reps           int
	viewBytes      int64
	rowSizes       []int64
	workers        []int
	latencyFetches int
	latencyRows    int
	admissionRows  int
}

type report struct {
	Bandwidth []bandwidth `json:"bandwidth"`
	Latency   []latency   `json:"latency"`
	Admission admission   `json:"admission"`
	Overhead  overhead    `json:"overhead"`
	Ratios    ratios      `json:"ratios"`
}

type bandwidth struct {
	Store           string  `json:"store"`
	RowBytes        int64   `json:"row_bytes"`
	Workers         int     `json:"workers"`
	PublishGBs      float64 `json:"publish_gb_s"`
	FetchGBs        float64 `json:"fetch_gb_s"`
	MemcpyGBs       float64 `json:"memcpy_gb_s"`
	PublishVsMemcpy float64 `json:"publish_vs_memcpy"`
	FetchVsMemcpy   float64 `json:"fetch_vs_memcpy"`
}

type latency struct {
	Store           string        `json:"store"`
	IdleP50         time.Duration `json:"idle_p50_ns"`
	IdleP99         time.Duration `json:"idle_p99_ns"`
	LoadedP50       time.Duration `json:"loaded_p50_ns"`
	LoadedP99       time.Duration `json:"loaded_p99_ns"`
	P99LoadedVsIdle float64       `json:"p99_loaded_vs_idle"`
}

type admission struct {
	RowsPerSecond float64 `json:"rows_per_s"`
	NsPerRow      float64 `json:"ns_per_row"`
}

type overhead struct {
	NsPerRow float64 `json:"ns_per_row"`
}

type ratios struct {
	PublishVsMemcpy      float64 `json:"publish_vs_memcpy"`
	FetchVsMemcpy        float64 `json:"fetch_vs_memcpy"`
	FetchP99LoadedVsIdle float64 `json:"fetch_p99_loaded_vs_idle"`
	RowsPerSecond        float64 `json:"rows_per_s"`
}

// store makes a fresh driver of one store.
type store struct {
	name string
	make func() (driver.Driver, error)
}

var stores = []store{
	{"memory", func() (driver.Driver, error) { return memory.New(memory.Options{}), nil }},
	{"mooncake", func() (driver.Driver, error) {
		return mooncake.New(fakesdk.NewClient(fakesdk.NewMaster(0), "0.3.13"))
	}},
}

// rig is a backend over a fresh driver with src and dst views of n rows.
type rig struct {
	lender *hostmem.Lender
	be     *backend.Backend
	d      driver.Driver
	slots  *driver.Region
	n      int
	seq    int
}

// forget deletes a view's objects from the store, outside the timed part:
// the test-double stores allocate every object, and a heap that only grows
// would time their first-touch page faults rather than kvblob.
func (r *rig) forget(v backend.View) {
	stem, _ := driver.KeyStem("kvblob")
	for _, row := range v {
		key, _ := stem.Key(row.Name)
		switch d := r.d.(type) {
		case *memory.Driver:
			d.Store().Delete(key)
		case *mooncake.Driver:
			d.SDK().(*fakesdk.Client).Master().Delete(key)
		}
	}
}

func newRig(s store, rowBytes int64, rows, workers int) (*rig, error) {
	d, err := s.make()
	if err != nil {
		return nil, err
	}
	lender, err := hostmem.NewLender("bench", driver.Layout{SlotBytes: rowBytes, Slots: 2 * rows})
	if err != nil {
		return nil, err
	}
	hold, err := lender.Hold()
	if err != nil {
		return nil, err
	}
	bind, err := backend.Bind(hold.Regions(), d, hold)
	if err != nil {
		return nil, err
	}
	be, err := backend.New(bind, nil, backend.Config{Workers: workers, RowsPerBatch: mcgen.DefaultRowsPerBatch, BytesPerBatch: mcgen.DefaultBytesPerBatch})
	if err != nil {
		return nil, err
	}
	r := &rig{lender: lender, be: be, d: d, slots: hold.Regions()[0], n: rows}
	src := r.slots.Mem[:int64(rows)*rowBytes]
	for i := range src {
		src[i] = byte(i*31 + i>>12)
	}
	return r, nil
}

// views returns a fresh batch of names over the src (first n) and dst
// (last n) slots; names are new each call, so every publish writes.
func (r *rig) views(first, n int) (src, dst backend.View) {
	r.seq++
	src, dst = make(backend.View, n), make(backend.View, n)
	for i := 0; i < n; i++ {
		name := []byte(fmt.Sprintf("r%d-%d", r.seq, i))
		src[i] = backend.ViewRow{Name: name, Spans: []driver.Span{r.slots.Slot(first + i)}}
		dst[i] = backend.ViewRow{Name: name, Spans: []driver.Span{r.slots.Slot(r.n + first + i)}}
	}
	return src, dst
}

func (r *rig) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.be.Shutdown(ctx); err != nil {
		return err // the lender keeps its memory: a store may still touch it
	}
	return r.lender.Close()
}

func finish(a *backend.Attempt, err error) error {
	if err != nil {
		return err
	}
	o, err := a.Wait(context.Background())
	if err != nil {
		return err
	}
	if o.Prefix != len(o.Results) {
		return fmt.Errorf("attempt delivered %d of %d rows: %s", o.Prefix, len(o.Results), o.Fault)
	}
	for !a.Quiesced() {
		time.Sleep(10 * time.Microsecond)
	}
	return nil
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func gbs(bytes int64, d time.Duration) float64 { return float64(bytes) / d.Seconds() / 1e9 }

func measure(p plan, log io.Writer) (*report, error) {
	rep := &report{}
	for _, s := range stores {
		for _, rowBytes := range p.rowSizes {
			rows := int(max(1, p.viewBytes/rowBytes))
			for _, w := range p.workers {
				fmt.Fprintf(log, "blobbench: %s %s rows x%d, %d workers\n", s.name, size(rowBytes), rows, w)
				b, err := measureBandwidth(s, rowBytes, rows, w, p.reps)
				if err != nil {
					return nil, fmt.Errorf("%s %s %d workers: %w", s.name, size(rowBytes), w, err)
				}
				rep.Bandwidth = append(rep.Bandwidth, b)
			}
		}
		fmt.Fprintf(log, "blobbench: %s fetch latency\n", s.name)
		l, err := measureLatency(s, p)
		if err != nil {
			return nil, fmt.Errorf("%s latency: %w", s.name, err)
		}
		rep.Latency = append(rep.Latency, l)
	}
	rep.Admission = measureAdmission(p.admissionRows)
	ov, err := measureOverhead(p)
	if err != nil {
		return nil, fmt.Errorf("overhead: %w", err)
	}
	rep.Overhead = ov
	for _, b := range rep.Bandwidth {
		if b.Store == "mooncake" && b.RowBytes == 1<<20 && b.Workers == 2 {
			rep.Ratios.PublishVsMemcpy, rep.Ratios.FetchVsMemcpy = b.PublishVsMemcpy, b.FetchVsMemcpy
		}
	}
	for _, l := range rep.Latency {
		if l.Store == "mooncake" {
			rep.Ratios.FetchP99LoadedVsIdle = l.P99LoadedVsIdle
		}
	}
	rep.Ratios.RowsPerSecond = rep.Admission.RowsPerSecond
	return rep, nil
}

func measureBandwidth(s store, rowBytes int64, rows, workers, reps int) (bandwidth, error) {
	r, err := newRig(s, rowBytes, rows, workers)
	if err != nil {
		return bandwidth{}, err
	}
	total := int64(rows) * rowBytes
	var pubs, gets, cps []time.Duration
	srcMem := r.slots.Mem[:total]
	dstMem := r.slots.Mem[total : 2*total]
	for i := 0; i < reps; i++ {
		src, dst := r.views(0, rows)
		t0 := time.Now()
		if err := finish(r.be.Publish(src)); err != nil {
			return bandwidth{}, err
		}
		t1 := time.Now()
		if err := finish(r.be.Fetch(dst, driver.Hint{})); err != nil {
			return bandwidth{}, err
		}
		t2 := time.Now()
		copy(dstMem, srcMem)
		t3 := time.Now()
		pubs, gets, cps = append(pubs, t1.Sub(t0)), append(gets, t2.Sub(t1)), append(cps, t3.Sub(t2))
		r.forget(src)
	}
	if err := r.close(); err != nil {
		return bandwidth{}, err
	}
	b := bandwidth{Store: s.name, RowBytes: rowBytes, Workers: workers,
		PublishGBs: gbs(total, median(pubs)), FetchGBs: gbs(total, median(gets)), MemcpyGBs: gbs(total, median(cps))}
	b.PublishVsMemcpy, b.FetchVsMemcpy = b.PublishGBs/b.MemcpyGBs, b.FetchGBs/b.MemcpyGBs
	return b, nil
}

// measureLatency times small fetches of 1 MiB rows with 2 workers, idle and
// next to two publish streams.
func measureLatency(s store, p plan) (latency, error) {
	const rowBytes = 1 << 20
	streamRows := 16
	r, err := newRig(s, rowBytes, p.latencyRows+2*streamRows, 2)
	if err != nil {
		return latency{}, err
	}
	src, dst := r.views(0, p.latencyRows)
	if err := finish(r.be.Publish(src)); err != nil {
		return latency{}, err
	}
	fetches := func() ([]time.Duration, error) {
		var ds []time.Duration
		for i := 0; i < p.latencyFetches; i++ {
			t0 := time.Now()
			if err := finish(r.be.Fetch(dst, driver.Hint{})); err != nil {
				return nil, err
			}
			ds = append(ds, time.Since(t0))
		}
		return ds, nil
	}
	idle, err := fetches()
	if err != nil {
		return latency{}, err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var streamErr error
	var mu sync.Mutex
	for k := 0; k < 2; k++ {
		first := p.latencyRows + k*streamRows
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				v, _ := r.views(first, streamRows)
				mu.Unlock()
				if err := finish(r.be.Publish(v)); err != nil {
					mu.Lock()
					streamErr = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	loaded, err := fetches()
	close(stop)
	wg.Wait()
	if err != nil {
		return latency{}, err
	}
	if streamErr != nil {
		return latency{}, streamErr
	}
	if err := r.close(); err != nil {
		return latency{}, err
	}
	l := latency{Store: s.name, IdleP50: percentile(idle, 0.5), IdleP99: percentile(idle, 0.99),
		LoadedP50: percentile(loaded, 0.5), LoadedP99: percentile(loaded, 0.99)}
	l.P99LoadedVsIdle = float64(l.LoadedP99) / float64(l.IdleP99)
	return l, nil
}

// measureAdmission runs 4 KiB rows through the Mooncake driver's generated
// admission and answer mapping, 256 rows a call, as a get would.
func measureAdmission(total int) admission {
	const rowBytes = 4 << 10
	const batch = 256
	region := &driver.Region{Name: "r", Kind: driver.Host, Layout: driver.Layout{SlotBytes: rowBytes, Slots: batch}, Mem: make([]byte, rowBytes*batch)}
	rows := make([]driver.Row, batch)
	for i := range rows {
		rows[i] = driver.Row{Key: fmt.Sprintf("kv/v1/%08x", i), Spans: []driver.Span{region.Slot(i)}}
	}
	live := func(r *driver.Region) bool { return r == region }
	answers := make([]int64, batch)
	for i := range answers {
		answers[i] = rowBytes
	}
	answers[batch/2] = int64(mcgen.ObjectNotFound) // keep the per-row mapping honest
	n := 0
	ready := 0
	t0 := time.Now()
	for n < total {
		if err := mcgen.AdmitGet(rows, driver.Hint{}, live); err != nil {
			panic(err)
		}
		for i, a := range answers {
			if mcgen.MapBatchGetInto(a, rows[i].Bytes()).Result.Status == driver.Ready {
				ready++
			}
		}
		n += batch
	}
	el := time.Since(t0)
	_ = ready
	return admission{RowsPerSecond: float64(n) / el.Seconds(), NsPerRow: float64(el.Nanoseconds()) / float64(n)}
}

// measureOverhead is the backend's cost per row over a memcpy: a publish and
// a fetch of 4 KiB rows over the memory store with one worker, less the
// memcpy of the same bytes, per row.
func measureOverhead(p plan) (overhead, error) {
	const rowBytes = 4 << 10
	rows := 4096
	if p.reps == 1 {
		rows = 256
	}
	r, err := newRig(stores[0], rowBytes, rows, 1)
	if err != nil {
		return overhead{}, err
	}
	total := int64(rows) * rowBytes
	var per []time.Duration
	for i := 0; i < p.reps; i++ {
		src, dst := r.views(0, rows)
		t0 := time.Now()
		if err := finish(r.be.Publish(src)); err != nil {
			return overhead{}, err
		}
		if err := finish(r.be.Fetch(dst, driver.Hint{})); err != nil {
			return overhead{}, err
		}
		t1 := time.Now()
		copy(r.slots.Mem[total:2*total], r.slots.Mem[:total])
		copy(r.slots.Mem[:total], r.slots.Mem[total:2*total])
		t2 := time.Now()
		per = append(per, t1.Sub(t0)-t2.Sub(t1))
		r.forget(src)
	}
	if err := r.close(); err != nil {
		return overhead{}, err
	}
	return overhead{NsPerRow: float64(median(per).Nanoseconds()) / float64(2*rows)}, nil
}

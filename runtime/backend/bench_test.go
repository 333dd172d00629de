package backend_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kvblob/kvblob/internal/scalebench"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
)

// roundTripRig is a backend over the memory store with a view of rows
// source rows and one of as many destination rows, rowBytes each, and
// done, which waits for an attempt to deliver every row and quiesce. The
// sources hold bytes (scalebench.Fill), as blobbench's do.
type roundTripRig struct {
	be       *scalebench.Backend
	src, dst backend.View
	done     func(*backend.Attempt, error)
}

func newRoundTripRig(b *testing.B, rows, rowBytes int, cfg backend.Config) *roundTripRig {
	be, err := scalebench.NewBackend(2*rows, int64(rowBytes), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := be.Close(); err != nil {
			b.Error(err)
		}
	})
	rig := &roundTripRig{be: be}
	rig.src, rig.dst = rig.views(rows, "row-")
	scalebench.Fill(be.Slots.Mem[:rows*rowBytes])
	rig.done = func(a *backend.Attempt, err error) {
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := be.Settle(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	return rig
}

// views returns a source and a destination view of rows rows over the
// rig's slots, named prefix0, prefix1, ...
func (r *roundTripRig) views(rows int, prefix string) (src, dst backend.View) {
	src, dst = make(backend.View, rows), make(backend.View, rows)
	for i := range src {
		name := []byte(fmt.Sprint(prefix, i))
		src[i] = backend.ViewRow{Name: name, Spans: []driver.Span{r.be.Slots.Slot(i)}}
		dst[i] = backend.ViewRow{Name: name, Spans: []driver.Span{r.be.Slots.Slot(rows + i)}}
	}
	return src, dst
}

// BenchmarkRoundTrip4KiB publishes and fetches 1024 rows of 4 KiB through
// the backend over the memory store, and reports ns per row; compare with
// BenchmarkMemcpy4KiB in the same run.
func BenchmarkRoundTrip4KiB(b *testing.B) {
	const rows, rowBytes = 1024, 4 << 10
	r := newRoundTripRig(b, rows, rowBytes, backend.Config{Workers: 1, RowsPerBatch: 256})
	b.SetBytes(2 * rows * rowBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r.done(r.be.Publish(context.Background(), r.src))
		r.done(r.be.Fetch(context.Background(), r.dst))
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*rows), "ns/row")
}

// BenchmarkRowOps4KiB is blobbench's row-ops rep as a Go benchmark, to
// profile and compare alone: a publish and then a fetch of a view of 4,096
// rows of 4 KiB through the backend over the memory store, 2 workers and
// the default bytes per call (so 1,024 rows a call). Every round trip
// publishes new keys, as blobbench's do and a serving engine's publishes
// of new blocks do (an overwrite would skip the store's insert); the
// objects are deleted after, untimed. It reports round-trip row-ops per
// second and the ns per row of each direction; with -short it publishes
// once and times fetches only.
func BenchmarkRowOps4KiB(b *testing.B) {
	const rows, rowBytes = 4096, 4 << 10
	r := newRoundTripRig(b, rows, rowBytes, backend.Config{Workers: 2})
	fetchOnly := testing.Short()
	if fetchOnly {
		r.done(r.be.Publish(context.Background(), r.src))
	}
	// Two sets of names, used in turn: a set's objects are deleted after
	// its round trip, so each publish inserts its keys afresh.
	var sets [2][2]backend.View
	for k := range sets {
		sets[k][0], sets[k][1] = r.views(rows, fmt.Sprint("set", k, "-row-"))
	}
	var put, get time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		src, dst := r.src, r.dst
		if !fetchOnly {
			src, dst = sets[i%2][0], sets[i%2][1]
		}
		t0 := time.Now()
		if !fetchOnly {
			r.done(r.be.Publish(context.Background(), src))
		}
		t1 := time.Now()
		r.done(r.be.Fetch(context.Background(), dst))
		put, get = put+t1.Sub(t0), get+time.Since(t1)
		if !fetchOnly {
			b.StopTimer()
			if err := r.be.Forget(src); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	b.StopTimer()
	ops := rows * b.N
	if !fetchOnly {
		ops *= 2
		b.ReportMetric(float64(put.Nanoseconds())/float64(rows*b.N), "ns/put-row")
	}
	b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "row-ops/s")
	b.ReportMetric(float64(get.Nanoseconds())/float64(rows*b.N), "ns/get-row")
}

// BenchmarkSubmit4096 times submission alone: a Publish and then a Fetch
// of a view of 4,096 rows of 4 KiB (one slot each, ascending in one
// region), each timed until it returns (validation, cutting, queueing),
// then settled untimed. It reports the ns per row submitted, over both
// directions, and each direction's. The workers are idle while the
// submission is timed: what it reports is the caller's serial cost before
// any row can reach the driver.
func BenchmarkSubmit4096(b *testing.B) {
	const rows, rowBytes = 4096, 4 << 10
	r := newRoundTripRig(b, rows, rowBytes, backend.Config{Workers: 2})
	var put, get time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		a, err := r.be.Publish(context.Background(), r.src)
		put += time.Since(t0)
		r.done(a, err)
		t1 := time.Now()
		a, err = r.be.Fetch(context.Background(), r.dst)
		get += time.Since(t1)
		r.done(a, err)
	}
	b.StopTimer()
	b.ReportMetric(float64(put.Nanoseconds())/float64(rows*b.N), "ns/put-row")
	b.ReportMetric(float64(get.Nanoseconds())/float64(rows*b.N), "ns/get-row")
	b.ReportMetric(float64((put+get).Nanoseconds())/float64(2*rows*b.N), "ns/row")
}

func BenchmarkMemcpy4KiB(b *testing.B) {
	const rows, rowBytes = 1024, 4 << 10
	src, dst := make([]byte, rows*rowBytes), make([]byte, rows*rowBytes)
	b.SetBytes(2 * rows * rowBytes)
	for i := 0; i < b.N; i++ {
		copy(dst, src)
		copy(src, dst)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*rows), "ns/row")
}

// newScaleRig returns a scalebench.Rig of slots rows, closed when b ends.
func newScaleRig(b *testing.B, slots int, cfg backend.Config) *scalebench.Rig {
	r, err := scalebench.New(slots, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := r.Close(); err != nil {
			b.Error(err)
		}
	})
	return r
}

// BenchmarkOutstandingAttempts keeps n one-row fetches in flight
// (submitting a new one as the oldest finishes) and reports the cost per
// row-op: settle must not grow with the attempts outstanding. blobbench
// prints every n side by side.
func BenchmarkOutstandingAttempts(b *testing.B) {
	for _, n := range scalebench.Attempts {
		b.Run(fmt.Sprint("attempts=", n), func(b *testing.B) {
			r := newScaleRig(b, n, backend.Config{Workers: 2})
			b.ResetTimer()
			el, err := r.Outstanding(b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/row-op")
		})
	}
}

// BenchmarkBatchesPerView fetches views of 1 to 1,024 one-row batches and
// reports the cost per row-op: it must not grow with the batches of a
// view. A one-batch view carries an attempt's two goroutine hand-offs on
// its one row (internal/scalebench's BenchmarkHandoff times them alone).
// blobbench prints every size side by side, and the hand-offs.
func BenchmarkBatchesPerView(b *testing.B) {
	for _, n := range scalebench.BatchesPerView {
		b.Run(fmt.Sprint("batches=", n), func(b *testing.B) {
			r := newScaleRig(b, n, backend.Config{Workers: 2, RowsPerBatch: 1})
			b.ResetTimer()
			el, rows, err := r.Views(b.N)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(el.Nanoseconds())/float64(rows), "ns/row-op")
		})
	}
}

// callGaps is a memory driver that times the gaps between one publish's
// consecutive puts: from one put's return to the next one's start.
type callGaps struct {
	*memory.Driver
	mu   sync.Mutex
	last time.Time // the last put's return
	gaps time.Duration
	n    int
}

func (d *callGaps) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	start := time.Now()
	op, err := d.Driver.Put(ctx, rows)
	end := time.Now()
	d.mu.Lock()
	if !d.last.IsZero() {
		d.gaps += start.Sub(d.last)
		d.n++
	}
	d.last = end
	d.mu.Unlock()
	return op, err
}

// BenchmarkPublishCallGaps publishes views of 32 rows of 1 MiB, 4 rows a
// call (blobbench's bandwidth views, cut at 4 MiB), with 2 workers, and
// reports the mean time between a publish's consecutive calls: the
// backend's own time between them. A stream handed from worker to worker
// spent it waking a parked goroutine, whose core had gone idle during a
// call this long.
func BenchmarkPublishCallGaps(b *testing.B) {
	const rows, rowBytes = 32, 1 << 20
	var d *callGaps
	be, err := scalebench.NewBackendOver(rows, rowBytes, backend.Config{Workers: 2, RowsPerBatch: 4},
		func(m *memory.Driver) driver.Driver { d = &callGaps{Driver: m}; return d })
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := be.Close(); err != nil {
			b.Error(err)
		}
	})
	region := be.Slots
	scalebench.Fill(region.Mem)
	v := make(backend.View, rows)
	for i := range v {
		v[i] = backend.ViewRow{Name: []byte(fmt.Sprint("gap-", i)), Spans: []driver.Span{region.Slot(i)}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var gaps time.Duration
	var n int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d.mu.Lock()
		d.last, d.gaps, d.n = time.Time{}, 0, 0
		d.mu.Unlock()
		a, err := be.Publish(context.Background(), v)
		if err == nil {
			err = be.Settle(ctx, a)
		}
		if err != nil {
			b.Fatal(err)
		}
		d.mu.Lock()
		gaps, n = gaps+d.gaps, n+d.n
		d.mu.Unlock()
	}
	b.ReportMetric(float64(gaps.Nanoseconds())/float64(max(n, 1)), "ns/gap")
}

// BenchmarkOneRowCtx times a one-row publish and fetch of 64 bytes,
// settled, under a ctx that never ends and under one that can: the
// difference is what a ctx that can end costs an attempt (the cancel
// registered with context.AfterFunc, and unregistered once the outcome is
// final).
func BenchmarkOneRowCtx(b *testing.B) {
	for _, c := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
	}{
		{"background", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
		{"cancellable", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }},
	} {
		b.Run("ctx="+c.name, func(b *testing.B) {
			r := newRoundTripRig(b, 1, 64, backend.Config{Workers: 2})
			ctx, cancel := c.ctx()
			defer cancel()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.done(r.be.Publish(ctx, r.src))
				r.done(r.be.Fetch(ctx, r.dst))
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/attempt")
		})
	}
}

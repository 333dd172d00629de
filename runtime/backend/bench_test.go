package backend_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
)

// BenchmarkRoundTrip4KiB publishes and fetches 1024 rows of 4 KiB through
// the backend over the memory store, and reports ns per row; compare with
// BenchmarkMemcpy4KiB in the same run.
func BenchmarkRoundTrip4KiB(b *testing.B) {
	const rows, rowBytes = 1024, 4 << 10
	lender, err := hostmem.NewLender("bench", driver.Layout{SlotBytes: rowBytes, Slots: 2 * rows})
	if err != nil {
		b.Fatal(err)
	}
	hold, _ := lender.Hold()
	bind, err := backend.Bind(hold.Regions(), memory.New(memory.Options{}), hold)
	if err != nil {
		b.Fatal(err)
	}
	w := newWaker()
	be, err := backend.New(bind, w.wake, backend.Config{Workers: 1, RowsPerBatch: 256})
	if err != nil {
		b.Fatal(err)
	}
	r := hold.Regions()[0]
	src, dst := make(backend.View, rows), make(backend.View, rows)
	for i := range src {
		name := []byte(fmt.Sprint("row-", i))
		src[i] = backend.ViewRow{Name: name, Spans: []driver.Span{r.Slot(i)}}
		dst[i] = backend.ViewRow{Name: name, Spans: []driver.Span{r.Slot(rows + i)}}
	}
	done := func(a *backend.Attempt, err error) {
		if err != nil {
			b.Fatal(err)
		}
		w.until(b, "quiesced", a.Quiesced)
	}
	b.SetBytes(2 * rows * rowBytes)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		done(be.Publish(src))
		done(be.Fetch(dst, driver.Hint{}))
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*rows), "ns/row")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := be.Shutdown(ctx); err != nil {
		b.Fatal(err)
	}
	_ = lender.Close()
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

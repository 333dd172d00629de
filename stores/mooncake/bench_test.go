package mooncake_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

// BenchmarkRoundTrip publishes and fetches views of 16 rows through the
// backend over the fake SDK, from GOMAXPROCS goroutines at once, each with
// its own client of one shared master (the master's lock is what they
// share), and forgets what it published. Profile it with
//
//	go test ./stores/mooncake -run '^$' -bench RoundTrip -cpuprofile cpu.out
func BenchmarkRoundTrip(b *testing.B) {
	for _, rowBytes := range []int64{256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", rowBytes>>10), func(b *testing.B) {
			const rows = 16
			m := fakesdk.NewMaster(0)
			var seq atomic.Int64
			b.SetBytes(2 * rows * rowBytes)
			b.RunParallel(func(pb *testing.PB) {
				d, err := mooncake.New(fakesdk.NewClient(m, "0.3.13"))
				if err != nil {
					b.Error(err)
					return
				}
				lender, err := hostmem.NewLender("bench", driver.Layout{SlotBytes: rowBytes, Slots: 2 * rows})
				if err != nil {
					b.Error(err)
					return
				}
				hold, _ := lender.Hold()
				bind, err := backend.Bind(context.Background(), hold.Regions(), d, hold)
				if err != nil {
					b.Error(err)
					return
				}
				be, err := backend.New(bind, backend.Config{Workers: 2, RowsPerBatch: 8})
				if err != nil {
					b.Error(err)
					return
				}
				r := hold.Regions()[0]
				for i := 0; i < 4096; i++ {
					r.Mem[i] = byte(i * 3)
				}
				for n := 4096; n < len(r.Mem); n *= 2 {
					copy(r.Mem[n:], r.Mem[:n])
				}
				stem, _ := driver.KeyStem("kvblob")
				finish := func(a *backend.Attempt, err error) bool {
					if err != nil {
						b.Error(err)
						return false
					}
					<-a.Quiesced()
					if o, _ := a.Poll(); o.InOrder != rows {
						b.Errorf("delivered %d of %d: %v", o.InOrder, rows, o.Err)
						return false
					}
					return true
				}
				for pb.Next() {
					n := seq.Add(1)
					src, dst := make(backend.View, rows), make(backend.View, rows)
					for k := range src {
						name := []byte(fmt.Sprint(n, "-", k))
						src[k] = backend.ViewRow{Name: name, Spans: []driver.Span{r.Slot(k)}}
						dst[k] = backend.ViewRow{Name: name, Spans: []driver.Span{r.Slot(rows + k)}}
					}
					if !finish(be.Publish(context.Background(), src)) || !finish(be.Fetch(context.Background(), dst, driver.Hint{})) {
						break
					}
					for _, row := range src {
						key, _ := stem.Key(row.Name)
						m.Delete(key)
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				if err := be.Shutdown(ctx); err != nil {
					b.Error(err)
					return
				}
				_ = d.Close()
				_ = lender.Close()
			})
		})
	}
}

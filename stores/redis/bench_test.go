package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
)

// BenchmarkRoundTrip publishes and fetches 32 rows through the backend over
// loopback Redis and, in the same run, over the memory store, at 256 KiB
// and 1 MiB rows; compare their MB/s.
func BenchmarkRoundTrip(b *testing.B) {
	redis7.Need(b)
	for _, rowBytes := range []int64{256 << 10, 1 << 20} {
		for _, store := range []string{"redis", "memory"} {
			b.Run(fmt.Sprintf("%s/%dKiB", store, rowBytes>>10), func(b *testing.B) {
				const rows = 32
				lender, err := hostmem.NewLender("bench", driver.Layout{SlotBytes: rowBytes, Slots: 2 * rows})
				if err != nil {
					b.Fatal(err)
				}
				hold, _ := lender.Hold()
				var d driver.Driver = memory.New(memory.Options{})
				if store == "redis" {
					d = rediskit.Factory(standalone())(b)
				}
				bind, err := backend.Bind(context.Background(), hold.Regions(), d, hold)
				if err != nil {
					b.Fatal(err)
				}
				be, err := backend.New(bind, backend.Config{Workers: 2, RowsPerBatch: 8})
				if err != nil {
					b.Fatal(err)
				}
				r := hold.Regions()[0]
				view := func(i, first int) backend.View {
					v := make(backend.View, rows)
					for k := range v {
						v[k] = backend.ViewRow{Name: []byte(fmt.Sprint(i, "-", k)), Spans: []driver.Span{r.Slot(first + k)}}
					}
					return v
				}
				finish := func(a *backend.Attempt, err error) {
					if err != nil {
						b.Fatal(err)
					}
					<-a.Quiesced()
					if o, _ := a.Poll(); o.InOrder != rows {
						b.Fatalf("delivered %d of %d: %v", o.InOrder, rows, o.Err)
					}
				}
				b.SetBytes(2 * rows * rowBytes)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					finish(be.Publish(context.Background(), view(i, 0)))
					finish(be.Fetch(context.Background(), view(i, rows)))
				}
				b.StopTimer()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				if err := be.Shutdown(ctx); err != nil {
					b.Fatal(err)
				}
				cancel()
				_ = d.Close()
				_ = lender.Close()
			})
		}
	}
}

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
	"github.com/kvblob/kvblob/stores/trailer"
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
				d, err := mooncake.New(fakesdk.NewClient(m, fakesdk.Version))
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
					if !finish(be.Publish(context.Background(), src)) || !finish(be.Fetch(context.Background(), dst)) {
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

// BenchmarkTrailerCost publishes and fetches 16 rows through the driver
// (Put, then Get into other slots) over the fake SDK, with the object
// trailer off (zero-copy both ways), on unkeyed (CRC32) and on keyed
// (HMAC-SHA256): what the trailer costs a row. Compare the medians:
//
//	go test ./stores/mooncake -run '^$' -bench TrailerCost -count 7
func BenchmarkTrailerCost(b *testing.B) {
	in, err := trailer.NewIntegrity(rowKey, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, rowBytes := range []int64{4 << 10, 1 << 20} {
		for _, mode := range []struct {
			name string
			opt  mooncake.Options
		}{{"off", mooncake.Options{}}, {"crc32", mooncake.Options{Trailer: true}}, {"keyed", mooncake.Options{Integrity: in}}} {
			b.Run(fmt.Sprintf("%dKiB/%s", rowBytes>>10, mode.name), func(b *testing.B) {
				const rows = 16
				m := fakesdk.NewMaster(0)
				d, err := mooncake.NewWith(fakesdk.NewClient(m, fakesdk.Version), mode.opt)
				if err != nil {
					b.Fatal(err)
				}
				r, err := hostmem.Map("bench", driver.Layout{SlotBytes: rowBytes, Slots: 2 * rows})
				if err != nil {
					b.Fatal(err)
				}
				reg, err := d.Register(r.Region)
				if err != nil {
					b.Fatal(err)
				}
				for i := range r.Mem {
					r.Mem[i] = byte(i * 7)
				}
				stem, _ := driver.KeyStem("bench")
				src, dst := make([]driver.Row, rows), make([]driver.Row, rows)
				for k := range src {
					key, _ := stem.Key([]byte(fmt.Sprint("row-", k)))
					src[k] = driver.Row{Key: key, Spans: []driver.Span{r.Slot(k)}}
					dst[k] = driver.Row{Key: key, Spans: []driver.Span{r.Slot(rows + k)}}
				}
				ready := func(op driver.Operation, err error) {
					if err != nil {
						b.Fatal(err)
					}
					res, _ := op.Poll()
					for _, x := range res {
						if x.Status != driver.Ready {
							b.Fatalf("%v", x)
						}
					}
				}
				b.SetBytes(2 * rows * rowBytes)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					ready(d.Put(context.Background(), src))
					ready(d.Get(context.Background(), dst, driver.Hint{}))
					b.StopTimer()
					for _, row := range src {
						m.Delete(row.Key)
					}
					b.StartTimer()
				}
				b.StopTimer()
				if !d.Drain(context.Background()) || d.Unregister(reg) != nil || d.Close() != nil {
					b.Fatal("the driver did not close")
				}
				_ = r.Close()
			})
		}
	}
}

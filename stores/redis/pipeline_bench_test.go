package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/trailer"
)

// BenchmarkVsPipeline puts and gets 16 rows through the driver and, side
// by side in the same iteration, sends a plain go-redis pipelined SET and
// GET of the same bytes (payload and trailer) on the same client. It
// reports publish_vs_set and fetch_vs_get: the pipeline's time over the
// driver's, summed over the run (1 means as fast as the plain pipeline).
// Run it with -count 5 or more and take the median:
//
//	go test ./stores/redis -run '^$' -bench VsPipeline -count 7
func BenchmarkVsPipeline(b *testing.B) {
	redis7.Need(b)
	for _, rowBytes := range []int64{256 << 10, 1 << 20} {
		b.Run(fmt.Sprintf("%dKiB", rowBytes>>10), func(b *testing.B) {
			const rows = 16
			ctx := context.Background()
			d, err := redis.Open(ctx, redis.Options{Addrs: []string{redis7.Value().Addr}})
			if err != nil {
				b.Fatal(err)
			}
			lender, err := hostmem.NewLender("bench", driver.Layout{SlotBytes: rowBytes, Slots: 2 * rows})
			if err != nil {
				b.Fatal(err)
			}
			hold, _ := lender.Hold()
			region := hold.Regions()[0]
			reg, err := d.Register(region)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				d.Drain(ctx)
				_ = d.Unregister(reg)
				_ = d.Close()
				_ = lender.Close()
			}()
			for i := range region.Mem {
				region.Mem[i] = byte(i * 7)
			}
			c := d.Client()
			var tPut, tSet, tGet, tPlainGet time.Duration
			b.SetBytes(2 * rows * rowBytes)
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				src, dst := make([]driver.Row, rows), make([]driver.Row, rows)
				keys := make([]string, rows)
				objs := make([][]byte, rows) // each key's own bytes, as the driver sends: one cached object for all would flatter the SETs
				for i := range src {
					keys[i] = fmt.Sprintf("bench/%d/%d", n, i)
					src[i] = driver.Row{Key: keys[i], Spans: []driver.Span{region.Slot(i)}}
					dst[i] = driver.Row{Key: keys[i], Spans: []driver.Span{region.Slot(rows + i)}}
					objs[i] = trailer.Encode(keys[i]+"/plain", region.Slot(i).Bytes())
				}
				t0 := time.Now()
				op, err := d.Put(ctx, src)
				if err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				res, _ := op.Poll()
				for i, r := range res {
					if r.Status != driver.Ready {
						b.Fatalf("put %d: %v", i, r)
					}
				}
				t2 := time.Now()
				pipe := c.Pipeline()
				for i := range keys {
					pipe.Set(ctx, keys[i]+"/plain", objs[i], 0)
				}
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				op, err = d.Get(ctx, dst, driver.Hint{})
				if err != nil {
					b.Fatal(err)
				}
				t4 := time.Now()
				res, _ = op.Poll()
				for i, r := range res {
					if r.Status != driver.Ready {
						b.Fatalf("get %d: %v", i, r)
					}
				}
				t5 := time.Now()
				pipe = c.Pipeline()
				gets := make([]*goredis.StringCmd, rows)
				for i := range keys {
					gets[i] = pipe.Get(ctx, keys[i]+"/plain")
				}
				if _, err := pipe.Exec(ctx); err != nil {
					b.Fatal(err)
				}
				for _, g := range gets {
					_ = g.Val()
				}
				t6 := time.Now()
				tPut, tSet, tGet, tPlainGet = tPut+t1.Sub(t0), tSet+t3.Sub(t2), tGet+t4.Sub(t3), tPlainGet+t6.Sub(t5)
				b.StopTimer()
				all := append(keys[:rows:rows], make([]string, rows)...)
				for i := range keys {
					all[rows+i] = keys[i] + "/plain"
				}
				_ = c.Del(ctx, all...).Err()
				b.StartTimer()
			}
			b.ReportMetric(float64(tSet)/float64(tPut), "publish_vs_set")
			b.ReportMetric(float64(tPlainGet)/float64(tGet), "fetch_vs_get")
		})
	}
}

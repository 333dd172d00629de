package s3_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/s3"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
)

// BenchmarkVersusClient compares the store with what a user would write by
// hand with the same client: PutObject and GetObject (io.ReadAll) of the
// same bytes, one object per row, s3.DefaultRowsInFlight requests at once
// as the store sends them, over the kit's versitygw (HTTPS on
// loopback, over a tmpfs as root). Each iteration is one rep of 16 rows of
// 256 KiB through each, on fresh keys; the metrics are the median of the
// reps' ratios (store time over raw time) and their range:
//
//	put/PutObject  (the store also sends If-None-Match: *, the trailer, and
//	                seals the body)
//	get/GetObject  (the store also checks the trailer's CRC32 and copies
//	                into the slot)
//
//	go test ./stores/s3 -run '^$' -bench VersusClient -benchtime 9x
func BenchmarkVersusClient(b *testing.B) {
	gw.Need(b)
	const rows, rowBytes = 16, 256 << 10
	k := s3kit.Open(b, gw.Value())
	c, bucket := k.Client(), aws.String(k.Bucket())
	r, err := hostmem.Map("bench", driver.Layout{SlotBytes: rowBytes, Slots: 2 * rows})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	reg, err := k.Register(r.Region)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < rows; i++ {
		p := r.Slot(i).Bytes()
		for j := range p {
			p[j] = byte(i*13 + j)
		}
	}
	ctx := context.Background()
	timed := func(f func()) time.Duration { t := time.Now(); f(); return time.Since(t) }
	var putR, getR []float64
	b.SetBytes(2 * rows * rowBytes)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		src, dst, raw := make([]driver.Row, rows), make([]driver.Row, rows), make([]string, rows)
		for i := range src {
			key, _ := driver.Key("bench", []byte(fmt.Sprint("rep-", n, "-row-", i)))
			src[i] = driver.Row{Key: key, Spans: []driver.Span{r.Slot(i)}}
			dst[i] = driver.Row{Key: key, Spans: []driver.Span{r.Slot(rows + i)}}
			raw[i] = fmt.Sprint("raw/", n, "/", i)
		}
		store := timed(func() {
			op, err := k.Put(ctx, src)
			must(b, err, op)
		})
		hand := timed(func() {
			inFlight(b, rows, func(i int) error {
				_, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: bucket, Key: aws.String(raw[i]), Body: bytes.NewReader(src[i].Spans[0].Bytes())})
				return err
			})
		})
		putR = append(putR, float64(store)/float64(hand))
		store = timed(func() {
			op, err := k.Get(ctx, dst, driver.Hint{})
			must(b, err, op)
		})
		hand = timed(func() {
			inFlight(b, rows, func(i int) error {
				out, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: bucket, Key: aws.String(raw[i])})
				if err != nil {
					return err
				}
				_, err = io.ReadAll(out.Body)
				_ = out.Body.Close()
				return err
			})
		})
		getR = append(getR, float64(store)/float64(hand))
		b.StopTimer()
		for i := range src { // room on the kit's tmpfs for the next rep
			_, _ = c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: bucket, Key: aws.String(src[i].Key)})
			_, _ = c.DeleteObject(ctx, &awss3.DeleteObjectInput{Bucket: bucket, Key: aws.String(raw[i])})
		}
		b.StartTimer()
	}
	b.StopTimer()
	for name, xs := range map[string][]float64{"put/PutObject": putR, "get/GetObject": getR} {
		lo, med, hi := spread(xs)
		b.ReportMetric(med, name)
		b.ReportMetric(lo, name+"-min")
		b.ReportMetric(hi, name+"-max")
	}
	if !k.Drain(ctx) || k.Unregister(reg) != nil || k.Close() != nil {
		b.Fatal("the driver did not close")
	}
}

// inFlight runs f for each index below n, s3.DefaultRowsInFlight at once
// (the store's concurrency), and fails b on the first error.
func inFlight(b *testing.B, n int, f func(i int) error) {
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range min(n, s3.DefaultRowsInFlight) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func must(b *testing.B, err error, op driver.Operation) {
	if err != nil {
		b.Fatal(err)
	}
	res, _ := op.Poll()
	for i, r := range res {
		if r.Status != driver.Ready {
			b.Fatalf("row %d: %v", i, r)
		}
	}
}

// spread is the minimum, median and maximum of xs.
func spread(xs []float64) (lo, med, hi float64) {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[0], s[len(s)/2], s[len(s)-1]
}

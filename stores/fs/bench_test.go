package fs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/fs"
)

// BenchmarkVersusOS compares the store with what a user would write by
// hand: os.WriteFile and os.ReadFile of the same bytes, one file per row,
// fs.DefaultRowsInFlight at once as the store does them.
// Each iteration is one rep of 16 rows through each; the metrics are the
// medians over the reps of the store's time over the hand-written one's:
//
//	put/os.WriteFile  (the store also makes a marker, fsyncs the file,
//	                   renames it and fsyncs the directory)
//	put/durable       against a hand-written durable write: a temporary
//	                  file, fsync, rename, fsync of the directory
//	get/os.ReadFile   (the store also reads the trailer first and checks
//	                   the CRC32 of each piece it reads into the slot)
//
// on the disk under TMPDIR and, as root, on the kit's tmpfs (where fsync
// costs nothing, so only the store's own work shows):
//
//	go test ./stores/fs -run '^$' -bench VersusOS -benchtime 9x
func BenchmarkVersusOS(b *testing.B) {
	dirs := map[string]string{"disk": ""}
	if tree.Value().Tmpfs {
		dirs["tmpfs"] = tree.Value().Dir
	}
	for _, where := range []string{"disk", "tmpfs"} {
		if _, ok := dirs[where]; !ok {
			continue
		}
		sizes := []int64{256 << 10, 4 << 20}
		if where == "tmpfs" {
			sizes = sizes[:1] // 3 x 16 rows of 4 MiB would not fit the kit's tmpfs
		}
		for _, rowBytes := range sizes {
			b.Run(fmt.Sprintf("%s/%dKiB", where, rowBytes>>10), func(b *testing.B) {
				root := b.TempDir()
				if dirs[where] != "" {
					var err error
					if root, err = os.MkdirTemp(dirs[where], "bench-"); err != nil {
						b.Fatal(err)
					}
					defer os.RemoveAll(root)
				}
				benchVersusOS(b, root, rowBytes)
			})
		}
	}
}

func benchVersusOS(b *testing.B, root string, rowBytes int64) {
	const rows = 16
	d, err := fs.Open(fs.Options{Root: root})
	if err != nil {
		b.Fatal(err)
	}
	r, err := hostmem.Map("bench", driver.Layout{SlotBytes: rowBytes, Slots: 2 * rows})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	reg, err := d.Register(r.Region)
	if err != nil {
		b.Fatal(err)
	}
	src, dst := make([]driver.Row, rows), make([]driver.Row, rows)
	plain := filepath.Join(root, "plain")
	if err := os.MkdirAll(plain, 0o755); err != nil {
		b.Fatal(err)
	}
	for i := range src {
		k, _ := driver.Key("bench", []byte(fmt.Sprint("row-", i)))
		src[i] = driver.Row{Key: k, Spans: []driver.Span{r.Slot(i)}}
		dst[i] = driver.Row{Key: k, Spans: []driver.Span{r.Slot(rows + i)}}
		p := src[i].Spans[0].Bytes()
		for j := range p {
			p[j] = byte(i*13 + j)
		}
	}
	timed := func(f func()) time.Duration { t := time.Now(); f(); return time.Since(t) }
	var putRaw, putDurable, getRaw []float64
	b.SetBytes(2 * rows * rowBytes)
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		store := timed(func() {
			op, err := d.Put(context.Background(), src)
			must(b, err, op, driver.Ready)
		})
		raw := timed(func() {
			inFlight(len(src), func(i int) {
				if err := os.WriteFile(filepath.Join(plain, fmt.Sprint(i)), src[i].Spans[0].Bytes(), 0o644); err != nil {
					b.Error(err)
				}
			})
		})
		durable := timed(func() {
			inFlight(len(src), func(i int) { durableWrite(b, plain, fmt.Sprint("d", i), src[i].Spans[0].Bytes()) })
		})
		putRaw, putDurable = append(putRaw, ratio(store, raw)), append(putDurable, ratio(store, durable))
		store = timed(func() {
			op, err := d.Get(context.Background(), dst, driver.Hint{})
			must(b, err, op, driver.Ready)
		})
		raw = timed(func() {
			inFlight(len(src), func(i int) {
				if _, err := os.ReadFile(filepath.Join(plain, fmt.Sprint(i))); err != nil {
					b.Error(err)
				}
			})
		})
		getRaw = append(getRaw, ratio(store, raw))
	}
	b.StopTimer()
	b.ReportMetric(median(putRaw), "put/os.WriteFile")
	b.ReportMetric(median(putDurable), "put/durable")
	b.ReportMetric(median(getRaw), "get/os.ReadFile")
	if !d.Drain(context.Background()) || d.Unregister(reg) != nil || d.Close() != nil {
		b.Fatal("the driver did not close")
	}
}

// inFlight runs f for each index below n, fs.DefaultRowsInFlight at once:
// the store's concurrency.
func inFlight(n int, f func(i int)) {
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(n, fs.DefaultRowsInFlight) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				f(i)
			}
		}()
	}
	wg.Wait()
}

// durableWrite is what a careful user writes by hand: a temporary file,
// fsync, rename, fsync of the directory.
func durableWrite(b *testing.B, dir, name string, data []byte) {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err == nil {
		_, err = f.Write(data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err == nil {
		var df *os.File
		if df, err = os.Open(dir); err == nil {
			err = df.Sync()
			_ = df.Close()
		}
	}
	if err != nil {
		b.Error(err) // on inFlight's goroutines: Fatal would not stop the test
	}
}

func must(b *testing.B, err error, op driver.Operation, want driver.Status) {
	if err != nil {
		b.Fatal(err)
	}
	res, _ := op.Poll()
	for i, r := range res {
		if r.Status != want {
			b.Fatalf("row %d: %v", i, r)
		}
	}
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

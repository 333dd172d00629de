package fs_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/fs"
)

// The benchmarks below time the paths the framework's safety mechanisms
// sit on, per row or per entry, through the public API alone, so the same
// file builds against a tree without them and the two builds can be run
// in turn (paired) for the cost of each mechanism as a ratio:
//
//	BenchmarkSafetyPut    a put of one 4 KiB row: its claim (a marker
//	                      holding a claim.Token) and release (read back
//	                      and compared) are on it; on the kit's tmpfs
//	                      (tmpfs, as root) and under TMPDIR (disk)
//	BenchmarkSafetySweep  a sweep of a tree of 512 keys' objects in 4
//	                      fan-out directories and one dead temporary file,
//	                      planted anew before each sweep, which removes it:
//	                      the bounded walk (runtime/sweep) is all of it
//
// The kit's tmpfs (as root; else TMPDIR) is where fsync costs nothing, so
// only the driver's own work shows:
//
//	go test ./stores/fs -run '^$' -bench Safety -benchtime 2000x

func benchRoot(b *testing.B) string {
	b.Helper()
	parent := ""
	if tree.Value().Tmpfs {
		parent = tree.Value().Dir
	}
	root, err := os.MkdirTemp(parent, "safety-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = os.RemoveAll(root) })
	return root
}

func BenchmarkSafetyPut(b *testing.B) {
	b.Run("tmpfs", func(b *testing.B) { benchSafetyPut(b, benchRoot(b)) })
	b.Run("disk", func(b *testing.B) { benchSafetyPut(b, b.TempDir()) })
}

func benchSafetyPut(b *testing.B, root string) {
	d, err := fs.Open(fs.Options{Root: root, SweepBudget: -1})
	if err != nil {
		b.Fatal(err)
	}
	r, err := hostmem.Map("bench", driver.Layout{SlotBytes: 4 << 10, Slots: 1})
	if err != nil {
		b.Fatal(err)
	}
	reg, err := d.Register(r.Region)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		d.Drain(context.Background())
		_ = d.Unregister(reg)
		_ = d.Close()
		_ = r.Close()
	}()
	keys := make([]string, 64)
	for i := range keys {
		keys[i], _ = driver.Key("bench", []byte(fmt.Sprint("row-", i)))
	}
	row := []driver.Row{{Spans: []driver.Span{r.Slot(0)}}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		row[0].Key = keys[i%len(keys)]
		op, err := d.Put(context.Background(), row)
		if err != nil {
			b.Fatal(err)
		}
		if res, _ := op.Poll(); res[0].Status != driver.Ready {
			b.Fatal(res[0])
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/row")
}

func BenchmarkSafetySweep(b *testing.B) {
	root := benchRoot(b)
	d, err := fs.Open(fs.Options{Root: root, SweepBudget: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	// 512 keys' objects in 4 fan-out directories: bench/v1/<dd>+/<name>.
	var temps []string
	for f := range 4 {
		dir := fmt.Sprintf("%s/bench/v1/%02x+", root, f)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		for i := range 128 {
			name := fmt.Sprintf("%s/%064x", dir, i)
			if err := os.WriteFile(name, nil, 0o600); err != nil {
				b.Fatal(err)
			}
			temps = append(temps, name+".tmp-0123456789abcdef")
		}
	}
	// bench, v1, the fan-out directories, the objects and the one dead file.
	const entries = 1 + 1 + 4 + 4*128 + 1
	deadAt := time.Now().Add(-time.Hour)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		t := temps[i%len(temps)] // one dead file a sweep, planted anew
		if err := os.WriteFile(t, nil, 0o600); err != nil {
			b.Fatal(err)
		}
		if err := os.Chtimes(t, deadAt, deadAt); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if n, err := d.Sweep(1 << 20); err != nil || n != 1 {
			b.Fatalf("the sweep removed %d files (want the 1 dead one): %v", n, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*entries), "ns/entry")
}

package rules

import (
	"fmt"
	"testing"

	"github.com/kvblob/kvblob/runtime/driver"
)

// BenchmarkAdmitBatch admits a 256-row batch of 4 KiB rows in one region,
// as the generated AdmitGet does (keys, then spans).
func BenchmarkAdmitBatch(b *testing.B) {
	r := &driver.Region{Name: "r", Kind: driver.Host, Layout: driver.Layout{SlotBytes: 4096, Slots: 256}, Mem: make([]byte, 4096*256)}
	rows := make([]driver.Row, 256)
	for i := range rows {
		rows[i] = driver.Row{Key: fmt.Sprintf("kv/v1/%08x", i), Spans: []driver.Span{r.Slot(i)}}
	}
	live := func(x *driver.Region) bool { return x == r }
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := AdmitKeys(rows); err != nil {
			b.Fatal(err)
		}
		if err := AdmitSpans(rows, false, 1<<31, live); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
}

// BenchmarkAdmitKeysViewThenBatches admits a 4,096-row view's keys, then
// its sixteen 256-row batches', as the backend and then the driver do,
// and reports ns per row admitted: the pooled sets must not make each
// small batch pay for the large one's capacity.
func BenchmarkAdmitKeysViewThenBatches(b *testing.B) {
	rows := make([]driver.Row, 4096)
	for i := range rows {
		rows[i] = driver.Row{Key: fmt.Sprintf("kvblob/v1/%016x", i)}
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := AdmitKeys(rows); err != nil {
			b.Fatal(err)
		}
		for k := 0; k < len(rows); k += 256 {
			if err := AdmitKeys(rows[k : k+256]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*2*len(rows)), "ns/row")
}

// BenchmarkAdmissionPut admits a 256-row batch of 4 KiB rows through a
// whole Admission, as a generated AdmitPut does: "any" as a store whose
// spec refuses no key (memory, redis, s3, mooncake), "fs" as one whose
// keys must be well formed. It reports ns per row: the key-length bound
// every store holds (driver.MaxKeyBytes) is on both.
func BenchmarkAdmissionPut(b *testing.B) {
	r := &driver.Region{Name: "r", Kind: driver.Host, Layout: driver.Layout{SlotBytes: 4096, Slots: 256}, Mem: make([]byte, 4096*256)}
	rows := make([]driver.Row, 256)
	for i := range rows {
		rows[i] = driver.Row{Key: fmt.Sprintf("kv/model-a/v1/%064x", i), Spans: []driver.Span{r.Slot(i)}}
	}
	live := func(x *driver.Region) bool { return x == r }
	for _, tc := range []struct {
		name string
		a    Admission
	}{{"any", Admission{}}, {"fs", Admission{Keys: KeyRule{WellFormed: true}}}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if err := tc.a.Put(rows, live); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
		})
	}
}

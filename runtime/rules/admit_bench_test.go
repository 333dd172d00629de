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

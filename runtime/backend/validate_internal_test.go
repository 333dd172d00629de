package backend

import (
	"fmt"
	"testing"

	"github.com/kvblob/kvblob/runtime/driver"
)

// BenchmarkValidate4096 times validate and cut alone, as a fetch of a
// 4,096-row view of 4 KiB rows (one slot each, ascending in one region)
// runs them, with no driver and no worker: the submission's serial work
// without the queue's lock and wake-ups, to profile. It reports ns per
// row.
func BenchmarkValidate4096(b *testing.B) {
	const rows, rowBytes = 4096, 4 << 10
	r := &driver.Region{Name: "r", Kind: driver.Host, Layout: driver.Layout{SlotBytes: rowBytes, Slots: rows}}
	stem, err := driver.KeyStem("kvblob")
	if err != nil {
		b.Fatal(err)
	}
	be := &Backend{
		cfg:     Config{Workers: 2, BytesPerBatch: DefaultBytesPerBatch},
		binding: &RegionBinding{regs: map[*driver.Region]driver.Registration{r: nil}},
		caps:    driver.Capabilities{},
		stem:    stem,
	}
	v := make(View, rows)
	for i := range v {
		v[i] = ViewRow{Name: []byte(fmt.Sprint("set0-row-", i)), Spans: []driver.Span{r.Slot(i)}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a := &Attempt{b: be, fetch: true}
		var room [16]batchEnd
		rs, ends, err := be.validate(v, driver.Hint{}, true, &a.in, room[:0])
		if err != nil {
			b.Fatal(err)
		}
		a.batches = cut(rs, ends, a)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}

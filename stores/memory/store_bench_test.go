package memory

import (
	"fmt"
	"strings"
	"testing"
	"time"

	memorygen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/trailer"
)

// BenchmarkStoreKeys4096 is the store's share of BenchmarkRowOps4KiB in
// runtime/backend, without the copies: each round reserves 4,096 fresh
// keys as a put does (a chunk at a time), commits them, looks them up as
// a get does (through keys of their own, as a fetch's are) and deletes
// them, two sets of names in turn, so every put inserts its keys afresh
// into a table churned by the last round's deletes. It reports ns per
// key of each step (a put's reservation and commit together). In cold,
// each chunk's rows are followed, untimed, by a read of as many 4 KiB
// rows' worth of other memory, as their copies are, which evicts much of
// what the chunk's lookups brought into the cache.
func BenchmarkStoreKeys4096(b *testing.B) {
	for _, cold := range []bool{false, true} {
		b.Run(fmt.Sprint("cold=", cold), func(b *testing.B) { benchmarkStoreKeys(b, cold) })
	}
}

func benchmarkStoreKeys(b *testing.B, cold bool) {
	const rows = 4096
	s := NewStore(0)
	// Keys as the backend's: a stem and the hex of a row's name, each
	// string its own allocation. gets holds the same keys built again.
	var ins, gets [2][]driver.Row
	for k := range ins {
		for i := range rows {
			key := func() string {
				return strings.Clone(fmt.Sprintf("kvblob/v1/%x", fmt.Sprint("set", k, "-row-", i)))
			}
			spans := []driver.Span{{Length: 4 << 10}}
			ins[k] = append(ins[k], driver.Row{Key: key(), Spans: spans})
			gets[k] = append(gets[k], driver.Row{Key: key(), Spans: spans})
		}
	}
	scratch := make([]byte, putChunk*4<<10)
	var sink byte
	evict := func() {
		if cold {
			for i := 0; i < len(scratch); i += 64 {
				sink += scratch[i]
			}
		}
	}
	ws := make([]write, rows)
	var put, get, del time.Duration
	for i := 0; b.Loop(); i++ {
		rs, gs := ins[i%2], gets[i%2]
		var p puts
		for j := 0; j < rows; j += putChunk {
			t := time.Now()
			for k := j; k < j+putChunk; k++ {
				var code memorygen.Code
				if ws[k], code = s.reserved(&p, rs, k); code != memorygen.OK {
					b.Fatalf("put %s: %v", rs[k].Key, code)
				}
			}
			put += time.Since(t)
			evict()
		}
		t := time.Now()
		s.mu.Lock()
		for j, w := range ws {
			s.commitLocked(rs[j].Key, w)
		}
		s.mu.Unlock()
		put += time.Since(t)
		evict()
		var rd reads
		for j := 0; j < rows; j += readChunk {
			t := time.Now()
			for k := j; k < j+readChunk; k++ {
				if o, _ := s.at(&rd, gs, k); o == nil || len(o.b) != 4<<10+trailer.Size {
					b.Fatalf("get %s: no object", gs[k].Key)
				}
			}
			get += time.Since(t)
			evict()
		}
		s.letGo(&rd)
		t = time.Now()
		for _, r := range rs {
			s.Delete(r.Key)
		}
		del += time.Since(t)
	}
	_ = sink
	n := float64(rows * b.N)
	b.ReportMetric(float64(put.Nanoseconds())/n, "ns/put-key")
	b.ReportMetric(float64(get.Nanoseconds())/n, "ns/get-key")
	b.ReportMetric(float64(del.Nanoseconds())/n, "ns/delete-key")
}

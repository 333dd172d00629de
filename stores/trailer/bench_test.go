package trailer

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkTrailer measures what the keyed integrity tag costs: writing
// and checking one row's object, unkeyed and keyed, per row size. The ratio
// keyed/unkeyed is the integrity cost:
//
//	go test ./stores/trailer -run '^$' -bench Trailer -count 7
func BenchmarkTrailer(b *testing.B) {
	in, err := NewIntegrity(bytes.Repeat([]byte{0x5a}, 32), nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{64 << 10, 1 << 20, 8 << 20} {
		payload := bytes.Repeat([]byte{7}, size)
		obj := make([]byte, 0, size+TagSize+Size)
		for _, w := range []struct {
			name string
			in   *Integrity
		}{{"unkeyed", nil}, {"keyed", in}} {
			b.Run(fmt.Sprintf("%s/%dKiB", w.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					o := w.in.Append(append(obj[:0], payload...), "bench/v1/00", payload)
					if _, err := w.in.Check(o, "bench/v1/00"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

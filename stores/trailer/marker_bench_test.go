package trailer

import (
	"bytes"
	"fmt"
	"testing"
)

// BenchmarkFraming measures what telling a marker from an object costs a
// reader per value read, for a marker and for objects of 4 KiB and 1 MiB
// payloads: "exact" checks the object's trailer first, then the marker's
// exact form (IsMarker), as stores/redis does; "prefix" is the rule it
// replaced (a value beginning with the magic was a marker, taken before
// the trailer was checked), kept here only as the baseline. The ratio
// exact/prefix is the framing's cost:
//
//	go test ./stores/trailer -run '^$' -bench Framing -count 7
func BenchmarkFraming(b *testing.B) {
	const key = "bench/v1/00"
	values := []struct {
		name string
		v    []byte
	}{
		{"marker", []byte(NewMarker())},
		{"object-4KiB", Encode(key, bytes.Repeat([]byte{7}, 4<<10))},
		{"object-1024KiB", Encode(key, bytes.Repeat([]byte{7}, 1<<20))},
	}
	rules := []struct {
		name string
		kind func(v []byte) (marker bool, payload []byte, err error)
	}{
		{"prefix", func(v []byte) (bool, []byte, error) {
			if bytes.HasPrefix(v, []byte(MarkerMagic)) {
				return true, nil, nil
			}
			p, err := Check(v, key)
			return false, p, err
		}},
		{"exact", func(v []byte) (bool, []byte, error) {
			p, err := Check(v, key)
			if err != nil && IsMarker(v) {
				return true, nil, nil
			}
			return false, p, err
		}},
	}
	for _, v := range values {
		for _, r := range rules {
			b.Run(fmt.Sprintf("%s/%s", v.name, r.name), func(b *testing.B) {
				b.SetBytes(int64(len(v.v)))
				for b.Loop() {
					marker, _, err := r.kind(v.v)
					if marker != (v.name == "marker") || !marker && err != nil {
						b.Fatalf("%s read as marker=%v, %v", v.name, marker, err)
					}
				}
			})
		}
	}
}

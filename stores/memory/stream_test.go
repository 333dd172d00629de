package memory

import (
	"bytes"
	"testing"
)

// stream copies what copy copies, byte for byte, whatever the size
// (below, in and above its non-temporal range, with a tail short of a
// line) and the alignment of its source and destination, and writes
// nothing past the bytes it copies.
func TestStreamCopiesAsCopyDoes(t *testing.T) {
	src := make([]byte, streamMax+256)
	for i := range src {
		src[i] = byte(i*7 + i>>8)
	}
	sizes := []int{0, 1, 63, streamMin - 1, streamMin, streamMin + 17, 3*streamMin + 64 + 5, streamMax - 1, streamMax, streamMax + 3}
	for _, n := range sizes {
		for _, from := range []int{0, 1, 8, 63} {
			for _, to := range []int{0, 8, 16, 64} { // 8: not aligned to 16
				dst := bytes.Repeat([]byte{0xEE}, to+n+64)
				want := bytes.Clone(dst)
				copy(want[to:to+n], src[from:from+n])
				if got := stream(dst[to:to+n], src[from:from+n]); got != n {
					t.Fatalf("n %d from %d to %d: copied %d", n, from, to, got)
				}
				if !bytes.Equal(dst, want) {
					t.Fatalf("n %d from %d to %d: bytes differ from copy's", n, from, to)
				}
			}
		}
	}
	short := make([]byte, streamMin)
	if got := stream(short, src); got != len(short) {
		t.Fatalf("a shorter destination: copied %d, want %d", got, len(short))
	}
	if !bytes.Equal(short, src[:len(short)]) {
		t.Fatal("a shorter destination: bytes differ")
	}
}

// prefetch is a hint: whatever the length and alignment, up to past
// prefetchMax, it changes no byte.
func TestPrefetchChangesNothing(t *testing.T) {
	b := make([]byte, prefetchMax+200)
	for i := range b {
		b[i] = byte(i)
	}
	want := bytes.Clone(b)
	for _, n := range []int{0, 1, 63, 64, 65, 4096 + 48, prefetchMax, prefetchMax + 100} {
		for _, from := range []int{0, 1, 63} {
			prefetch(b[from : from+n])
		}
	}
	if !bytes.Equal(b, want) {
		t.Fatal("prefetch changed bytes")
	}
}

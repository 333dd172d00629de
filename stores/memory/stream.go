package memory

import "unsafe"

// A put copies each row into an arena block that no core will read soon:
// the next reader is a get, after the put is published, by then long out
// of this core's cache for rows of kilobytes. An ordinary copy first reads
// every destination line into the cache (to write part of it) and later
// writes it back: three lines of memory traffic per line copied, where a
// real store's put (a NIC's or a DMA engine's write) takes two and leaves
// the host's caches alone. stream copies with non-temporal stores, which
// write whole lines straight to memory: in a paired A/B of
// BenchmarkRowOps4KiB, a put row of 4 KiB took a median 0.80x the time
// of an ordinary copy. Go's own copy streams from 1 MiB on, so stream
// leaves those to it; below streamMin a row is too small to be worth it
// and may well stay cached.
const (
	streamMin = 4 << 10
	streamMax = 1 << 20
)

// stream copies src into dst as copy does, returning the bytes copied,
// with non-temporal stores where the platform has them (canStream), for
// copies of streamMin to streamMax bytes into a destination aligned to
// 16 bytes (an arena block is aligned to 64).
func stream(dst, src []byte) int {
	n := min(len(dst), len(src))
	if !canStream || n < streamMin || n >= streamMax || uintptr(unsafe.Pointer(unsafe.SliceData(dst)))%16 != 0 {
		return copy(dst, src)
	}
	m := n &^ 63
	raceStreamed(unsafe.SliceData(dst), unsafe.SliceData(src), m)
	streamLines(unsafe.SliceData(dst), unsafe.SliceData(src), m)
	copy(dst[m:n], src[m:n])
	return n
}

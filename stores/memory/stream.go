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

// prefetch asks for b's first prefetchMax bytes into the cache, without
// waiting for them. A chunked put asks for its next row's spans, and a
// chunked get for its next row's object, before it copies the row at hand.
// Either's bytes are out of the cache: a put's source is the engine's
// memory, written long before; a get's object was streamed to memory by
// its put. A copy of a row whose bytes nothing asked for first waits a
// miss at a time, until the hardware's prefetcher (which does not follow
// a copy from one row's block to the next) catches up; asked for a row
// ahead, the bytes come while the row before is copied. In two paired
// A/Bs of BenchmarkRowOps4KiB (8 alternations each), a get row of 4 KiB
// took a median 0.83x and 0.89x the time, and a put row 0.93x and 0.97x.
// Past prefetchMax, the prefetcher, trained by then, keeps ahead of the
// copy.
func prefetch(b []byte) {
	if len(b) > 0 {
		prefetchLines(&b[0], min(len(b), prefetchMax))
	}
}

const prefetchMax = 16 << 10

package main

import (
	"runtime/debug"
	"sync"

	"github.com/kvblob/kvblob/stores/trailer"
)

// The memcpy baselines run at the parallelism of what they are compared
// with: a backend of N workers moves rows on N goroutines at once, so its
// ceiling is N goroutines copying, not one (on two cores, one goroutine
// copying is about half the machine, and a ratio against it flatters the
// store by up to twice). Every baseline runs its shares the same way
// (onGoroutines): n goroutines of their own, each a contiguous run of
// whole rows copied a row at a time, as a worker copies a call's rows,
// while the caller only waits, as a backend's caller waits on its
// workers. (Before, one baseline ran its first share on the caller and
// copied a share in one call, and the others ran every share on a new
// goroutine a row at a time: the same bytes at the same parallelism,
// timed two ways.)

// onGoroutines runs do(g) for g in [0, n) (at least one), each on a
// goroutine of its own, and returns when all are done.
func onGoroutines(n int, do func(g int)) {
	n = max(1, n)
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do(g)
		}()
	}
	wg.Wait()
}

// share is the rows [lo, hi) of rows that goroutine g of n takes: a
// contiguous run, the runs as even as whole rows allow.
func share(rows int64, g, n int) (lo, hi int64) {
	n = max(1, n)
	return rows * int64(g) / int64(n), rows * int64(g+1) / int64(n)
}

// parallelCopy copies src into dst (of equal length, rows of rowBytes) a
// row at a time on n goroutines, each a share of the rows, and returns
// when all are done: the memcpy the store's rows move, call for call.
func parallelCopy(dst, src []byte, rowBytes int64, n int) {
	rows := int64(len(src)) / rowBytes
	onGoroutines(n, func(g int) {
		lo, hi := share(rows, g, n)
		for off := lo * rowBytes; off < hi*rowBytes; off += rowBytes {
			copy(dst[off:off+rowBytes], src[off:off+rowBytes])
		}
	})
}

// tagPass is what parallelTag does to each row.
type tagPass int

const (
	// sealCopy copies the row and takes its CRC32 and tag a chunk at a
	// time while in cache (trailer.Sealer.Copy): a writer's one pass.
	sealCopy tagPass = iota
	// verifyCopy copies the row and feeds each chunk to a reader's
	// Verifier while in cache (the tag, no CRC32: trailer.Verifier.Write):
	// a reader's one pass.
	verifyCopy
	// sealOnly takes the CRC32 and tag alone, nothing copied.
	sealOnly
)

// parallelTag runs the integrity code of a row with the row key on over
// each row of src (rows of rowBytes) on n goroutines, each a share of the
// rows, as parallelCopy copies them: pass says which (dst is unused by
// sealOnly). sealCopy and verifyCopy are the least a publish and a fetch
// that move a row and tag or verify it can do: the bounds a store with
// the key on is judged against.
func parallelTag(in *trailer.Integrity, dst, src []byte, rowBytes int64, n int, pass tagPass) {
	rows := int64(len(src)) / rowBytes
	onGoroutines(n, func(g int) {
		lo, hi := share(rows, g, n)
		var tail [trailer.TailSize]byte
		for off := lo * rowBytes; off < hi*rowBytes; off += rowBytes {
			row := src[off : off+rowBytes]
			switch pass {
			case sealCopy:
				s := in.Sealer(rowBytes)
				s.Copy(dst[off:off+rowBytes], row)
				s.Finish(tail[:0], "blobbench/v1/00")
			case sealOnly:
				s := in.Sealer(rowBytes)
				s.Write(row)
				s.Finish(tail[:0], "blobbench/v1/00")
			case verifyCopy:
				v := in.Verifier(trailer.Head{Len: rowBytes})
				to := dst[off : off+rowBytes]
				for k := 0; k < len(row); k += trailer.ChunkSize {
					end := min(k+trailer.ChunkSize, len(row))
					copy(to[k:end], row[k:end])
					v.Write(to[k:end])
				}
				_ = v.Check(to) // fails (the zero Head's tag), after the same work as a pass
			}
		}
	})
}

// coldCaches evicts the caches before each timed step of a bandwidth rep
// (the store's publish, its fetch, and each memcpy), so that every one
// starts with none of its bytes cached, whatever ran before it. Without
// it the publish's memcpy ran right after the fetch's, over the same
// bytes, and found as much of them cached as the cache holds (for rows
// copied with ordinary stores, the destination's lines too), while the
// store's publish read slots last touched a whole step before: a baseline
// that starts warm flatters itself against the store. It reads every line
// of evictBytes of memory of its own, which pushes out what a step left
// (writing back what it left dirty, untimed), and returns a sum of what it
// read, lest the compiler drop the reads. A variable, so that a test sees
// where it runs.
var coldCaches = func() byte {
	evictOnce.Do(func() { evictBuf = fillEvict(make([]byte, evictBytes)) })
	return readEvict(evictBuf)
}

// fillEvict writes every byte of buf, so its pages are faulted in now, not
// in a timed step, and returns it. readEvict reads every cache line of
// buf and returns a sum of what it read, lest the compiler drop the reads.
//
// Neither is instrumented by the race detector (go:norace): buf is
// coldCaches' own, written once under evictOnce before any read and never
// again, so no access to it can race; instrumented, the 64 MiB write and
// each 1 Mi-line read cost about 1.6 s and 25 ms of CPU under go test
// -race, most of what cmd/blobbench's tests spent outside the stores.
//
//go:norace
func fillEvict(buf []byte) []byte {
	for i := range buf {
		buf[i] = byte(i)
	}
	return buf
}

//go:norace
func readEvict(buf []byte) byte {
	var x byte
	for i := 0; i < len(buf); i += 64 {
		x += buf[i]
	}
	return x
}

// evictBytes is twice the last-level cache of one CCD of the EPYCs this
// runs on (32 MiB): a read of it leaves nothing of what ran before cached.
const evictBytes = 64 << 20

var (
	evictOnce sync.Once
	evictBuf  []byte
)

// coldHeap returns the free heap to the operating system, so that an
// allocate-then-copy baseline timed next starts from fresh pages whatever
// ran before it: without it, the same copy ran at 0.55 or 14 GB/s
// depending on whether the store measured before had left free, faulted
// pages on the heap. It runs only after the store's last step of a
// bandwidth measurement (see measureBandwidth). A variable, so that a test
// sees where it runs.
var coldHeap = func() { debug.FreeOSMemory() }

// allocCopy copies each row of src into a fresh heap allocation, on n
// goroutines as parallelCopy shares them, and returns the copies (the
// caller drops them).
func allocCopy(src []byte, rowBytes int64, n int) [][]byte {
	rows := int64(len(src)) / rowBytes
	objs := make([][]byte, rows)
	onGoroutines(n, func(g int) {
		lo, hi := share(rows, g, n)
		for k := lo; k < hi; k++ {
			objs[k] = make([]byte, rowBytes)
			copy(objs[k], src[k*rowBytes:])
		}
	})
	return objs
}

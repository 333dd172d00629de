package main

import (
	"runtime/debug"
	"sync"
)

// The memcpy baselines run at the parallelism of what they are compared
// with: a backend of N workers moves rows on N goroutines at once, so its
// ceiling is N goroutines copying, not one (on two cores, one goroutine
// copying is about half the machine, and a ratio against it flatters the
// store by up to twice). Each goroutine copies a contiguous run of whole
// rows, as a worker copies a call's rows.

// parallelCopy copies src into dst (of equal length, rows of rowBytes)
// on n goroutines, each a contiguous share of the rows, and returns when
// all are done.
func parallelCopy(dst, src []byte, rowBytes int64, n int) {
	rows := int64(len(src)) / rowBytes
	each := func(g int64, do func(lo, hi int64)) {
		lo, hi := rows*g/int64(n), rows*(g+1)/int64(n)
		do(lo*rowBytes, hi*rowBytes)
	}
	if n <= 1 || rows < 2 {
		copy(dst, src)
		return
	}
	var wg sync.WaitGroup
	for g := 1; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			each(int64(g), func(lo, hi int64) { copy(dst[lo:hi], src[lo:hi]) })
		}()
	}
	each(0, func(lo, hi int64) { copy(dst[lo:hi], src[lo:hi]) })
	wg.Wait()
}

// parallelRowCopy is parallelCopy cut into copies of rowBytes each, on n
// goroutines: the memcpy a row-op moves, call for call.
func parallelRowCopy(dst, src []byte, rowBytes int64, n int) {
	rows := int64(len(src)) / rowBytes
	n = max(1, n)
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := rows*int64(g)/int64(n), rows*int64(g+1)/int64(n)
			for off := lo * rowBytes; off < hi*rowBytes; off += rowBytes {
				copy(dst[off:off+rowBytes], src[off:off+rowBytes])
			}
		}()
	}
	wg.Wait()
}

// coldHeap returns the free heap to the operating system, so that an
// allocate-then-copy baseline timed next starts from fresh pages whatever
// ran before it: without it, the same copy ran at 0.55 or 14 GB/s
// depending on whether the store measured before had left free, faulted
// pages on the heap.
func coldHeap() { debug.FreeOSMemory() }

// allocCopy copies each row of src into a fresh heap allocation, on n
// goroutines, and returns the copies (the caller drops them).
func allocCopy(src []byte, rowBytes int64, n int) [][]byte {
	rows := int64(len(src)) / rowBytes
	objs := make([][]byte, rows)
	n = max(1, n)
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := rows * int64(g) / int64(n); k < rows*int64(g+1)/int64(n); k++ {
				objs[k] = make([]byte, rowBytes)
				copy(objs[k], src[k*rowBytes:])
			}
		}()
	}
	wg.Wait()
	return objs
}

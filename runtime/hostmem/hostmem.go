// Package hostmem allocates host memory off the Go heap, lends regions of it
// under a hold, and guards memory in tests.
//
// Regions that a C SDK keeps must not live on the Go heap: cgo forbids C from
// holding Go pointers past a call, and the collector may move or free them.
// Alloc maps anonymous memory with mmap; Free unmaps it.
//
// Lender, Hold, Mapping and Guarded are safe for concurrent use by multiple
// goroutines, except that the bytes they hand out are the caller's to
// synchronise, and nothing may touch a region's bytes once it is closed.
package hostmem

import (
	"fmt"
	"sync"
	"syscall"
	"unsafe"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Alloc maps n bytes of zeroed memory off the Go heap.
func Alloc(n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("hostmem: cannot allocate %d bytes; want a positive size", n)
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("hostmem: mmap of %d bytes: %w", n, err)
	}
	return b, nil
}

// Free unmaps memory from Alloc. The slice must not be used afterwards.
func Free(b []byte) error {
	if err := syscall.Munmap(b); err != nil {
		return fmt.Errorf("hostmem: munmap: %w", err)
	}
	return nil
}

// Mapping is host memory mapped off the Go heap, holding the one
// driver.Region a driver registers: the region says what the memory is
// (its name, kind, layout and bytes), the mapping owns it and unmaps it
// on Close. Lender and Guarded hand out the same driver.Region.
type Mapping struct {
	*driver.Region
	mem    []byte // the whole mapping (Region.Mem is a window of it)
	mu     sync.Mutex
	closed bool
}

// Map maps host memory for a region named name with layout.
func Map(name string, layout driver.Layout) (*Mapping, error) {
	if err := layout.Validate(); err != nil {
		return nil, err
	}
	mem, err := Alloc(int(layout.Bytes()))
	if err != nil {
		return nil, err
	}
	return &Mapping{Region: newDriverRegion(name, layout, mem), mem: mem}, nil
}

func newDriverRegion(name string, layout driver.Layout, mem []byte) *driver.Region {
	return &driver.Region{Name: name, Kind: driver.Host, Layout: layout, Mem: mem, Addr: uintptr(unsafe.Pointer(&mem[0]))}
}

// Close unmaps the memory; a second Close does nothing. The caller must
// know no store can touch it any more: a lender's hold (Lender.Close) is
// how kvblob knows.
func (r *Mapping) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return Free(r.mem)
}

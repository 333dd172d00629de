package fakesdk

import (
	"runtime"
	"syscall"
)

// reserveBytes is the address space a master reserves for its segment:
// pages are backed only once touched, so it costs nothing until used.
const reserveBytes = 32 << 30

// reserve maps a segment of n bytes of anonymous memory that never moves
// and that the kernel zero-fills on first touch, outside any lock; the
// mapping is released when owner is collected. It returns nil when the
// system refuses the reservation (the master then grows a heap slice).
func reserve(owner *Master, n int64) []byte {
	mem, err := syscall.Mmap(-1, 0, int(n), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON|syscall.MAP_NORESERVE)
	if err != nil {
		return nil
	}
	runtime.AddCleanup(owner, func(mem []byte) { _ = syscall.Munmap(mem) }, mem)
	return mem
}

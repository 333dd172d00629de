//go:build race

package memory

import (
	"runtime"
	"unsafe"
)

// raceStreamed tells the race detector what streamLines, which it cannot
// see, read and wrote, as it sees copy's reads and writes.
func raceStreamed(dst, src *byte, n int) {
	runtime.RaceReadRange(unsafe.Pointer(src), n)
	runtime.RaceWriteRange(unsafe.Pointer(dst), n)
}

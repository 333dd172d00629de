// Package mooncake is kvblob's driver for the Mooncake store, SDK 0.3.13.
//
// The driver moves rows zero-copy from and into registered host slots: a
// put starts one put session per key, writes every started row in one
// scatter (batch_put_from_multi_buffer_ranges), ends the sessions of rows
// written whole and revokes the rest; a get is one batch_get_into.
//
// Every code-to-result decision, and every call's access-end rule, comes
// from generated/mooncake (spec/mooncake-0.3.13.yaml); this package holds no
// numeric code and no code name of its own. What it adds is bookkeeping the
// spec's follow-ups ask for: sessions it must never start twice, sessions
// left open for drain to revoke, and sessions it must never revoke.
//
// The SDK is an interface: fakesdk implements 0.3.13's semantics over real
// bytes; cgosdk (build tag mooncake) calls the real client.
package mooncake

import "unsafe"

// Buffer is a window of registered host memory, by address, as the SDK
// takes it.
type Buffer struct {
	Addr uintptr
	Len  int64
}

// BufferOf is the Buffer over b's memory. b must not move while the SDK may
// use it: memory off the Go heap (runtime/hostmem), not a Go slice the
// garbage collector may relocate or free.
func BufferOf(b []byte) Buffer {
	return Buffer{Addr: uintptr(unsafe.Pointer(unsafe.SliceData(b))), Len: int64(len(b))}
}

// SDK is the part of the Mooncake 0.3.13 client the driver uses. Each batch
// call answers one value per key: a byte count, 1/0 (BatchIsExist) or a
// negative ErrorCode. An error return models a raise inside the SDK: the
// call's effect on each key is unknown.
//
// The driver reuses the slices it passes (keys, sizes, buffers) once a call
// returned, so an SDK keeps none of them past its call: what it acts on
// later (a request a frozen master applies when it thaws) it copies. The
// driver keeps nothing of an answer past the call either.
type SDK interface {
	// Version is the SDK build as it reports itself, e.g.
	// "0.3.12.post1 (git: 3b5a59413)" (rules.ParseBuild).
	Version() string
	RegisterBuffer(b Buffer) (code int64, err error)
	UnregisterBuffer(b Buffer) (code int64, err error)
	BatchPutSessionStart(keys []string, sizes []int64) ([]int64, error)
	// BatchPutFromMultiBufferRanges writes each key's buffers, in order,
	// into its session's space.
	BatchPutFromMultiBufferRanges(keys []string, buffers [][]Buffer) ([]int64, error)
	BatchPutSessionEnd(keys []string) ([]int64, error)
	BatchPutSessionRevoke(keys []string) ([]int64, error)
	// BatchGetInto reads each key's object into the head of its buffer.
	BatchGetInto(keys []string, buffers []Buffer) ([]int64, error)
	// BatchIsExist answers 1 for a key with a complete object, 0 otherwise.
	BatchIsExist(keys []string) ([]int64, error)
	Close() error
}

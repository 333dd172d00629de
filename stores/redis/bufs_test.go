package redis

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBufClassHoldsNAndWastesLittle(t *testing.T) {
	for _, n := range []int{0, 1, 4 << 10, 4<<10 + 1, 64<<10 + 70, 1<<20 - 50, 1 << 20, 1<<20 + 72, 3<<20 + 5, 64 << 20} {
		c := bufClass(n)
		assert.GreaterOrEqual(t, c, n, "n=%d", n)
		assert.Equal(t, c, bufClass(c), "n=%d: a class is its own class", n)
		assert.LessOrEqual(t, c-n, max(n/32, 4<<10), "n=%d: class %d", n, c)
	}
	// The put and the get of a 1 MiB row (object plus trailer, and object
	// plus tag, trailer and CRLF) share a class.
	assert.Equal(t, bufClass(1<<20+36), bufClass(1<<20+32+36+2))
}

// TestBufPoolKeepsBuffersThroughCollections: a buffer put back is handed
// out again after collections (a sync.Pool's would be gone), up to
// idleMax bytes; past it, and for a buffer of no class, the pool still
// works (its spill is a sync.Pool).
func TestBufPoolKeepsBuffersThroughCollections(t *testing.T) {
	var p bufPool
	b := p.get(1<<20 + 36)
	require.Equal(t, bufClass(1<<20+36), cap(b))
	require.Empty(t, b)
	b = append(b, 1, 2, 3)
	p.put(b)
	runtime.GC()
	runtime.GC()
	again := p.get(1<<20 + 100)
	assert.Equal(t, &b[:1][0], &again[:1][0], "the kept buffer is handed out again")
	assert.Empty(t, again)
	p.put(again)

	// Past idleMax, buffers spill.
	var held [][]byte
	for i := 0; i < idleMax/(1<<20)+4; i++ {
		held = append(held, p.get(1<<20))
	}
	for _, h := range held {
		p.put(h)
	}
	assert.LessOrEqual(t, p.bytes, idleMax)
	assert.Greater(t, p.bytes, idleMax-(2<<20))

	p.put(make([]byte, 10, 12345)) // no class: spills
	p.put(nil)
	p.put(make([]byte, 0, bufMax+1)) // too big: dropped
	assert.LessOrEqual(t, p.bytes, idleMax)

	// Close drops what is kept; the pool still works after.
	p.drop()
	assert.Zero(t, p.bytes)
	assert.Empty(t, p.idle)
	p.put(p.get(1 << 20))
	assert.Equal(t, bufClass(1<<20), p.bytes)
}

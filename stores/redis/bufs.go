package redis

import (
	"math/bits"
	"sync"
)

// bufPool holds a driver's object buffers between calls, so that a call
// of large rows neither allocates nor zeroes (nor faults in) a fresh
// buffer per row: a put builds each object in one, a get reads each reply
// into one.
//
// Up to idleMax bytes of idle buffers are kept whatever the collector
// does, the rest in a sync.Pool. A sync.Pool alone is emptied by any two
// collections, and a process moving gigabytes a second of large rows
// through a small heap collects every few calls: blobbench's 64 MiB views
// of 1 MiB rows found it empty every time (5 of a 4 MiB put's buffers and
// all 8 of two 4 MiB gets' were allocated afresh per view), and the fresh
// megabytes made the next collection come sooner. Close drops the kept
// buffers.
//
// Buffers are kept by capacity class (bufClass), so that the put of a row
// and the get of it, whose buffers differ by a few bytes, share them, and
// a lookup is one map access whatever the number of idle buffers.
type bufPool struct {
	mu    sync.Mutex
	idle  map[int][][]byte // by capacity, each a bufClass
	bytes int              // the idle buffers' capacities, summed
	spill sync.Pool        // of *[]byte: the buffers past idleMax
}

// idleMax bounds the bytes of idle buffers a driver keeps through
// collections: one call's worth at the specs' bytes_per_batch (64 MiB).
const idleMax = 64 << 20

// bufMax is the largest buffer kept at all.
const bufMax = 64 << 20

// bufClass is the capacity of the buffer that holds n bytes: n rounded up
// to a multiple of a 64th of the power of two at or above it, or of 4 KiB
// if that is more, so a buffer wastes at most 4 KiB or 3% of n.
func bufClass(n int) int {
	if n <= 4<<10 {
		return 4 << 10
	}
	g := max(4<<10, 1<<(bits.Len(uint(n-1))-6))
	return (n + g - 1) / g * g
}

// get returns an empty buffer of capacity at least n.
func (p *bufPool) get(n int64) []byte {
	c := bufClass(int(n))
	p.mu.Lock()
	if l := p.idle[c]; len(l) > 0 {
		b := l[len(l)-1]
		p.idle[c] = l[:len(l)-1]
		p.bytes -= c
		p.mu.Unlock()
		return b[:0]
	}
	p.mu.Unlock()
	if b, ok := p.spill.Get().(*[]byte); ok && cap(*b) >= c {
		return (*b)[:0]
	}
	return make([]byte, 0, c)[:0:c]
}

// put takes b back once nothing reads or writes it any more.
func (p *bufPool) put(b []byte) {
	c := cap(b)
	if b == nil || c > bufMax {
		return
	}
	if bufClass(c) == c {
		p.mu.Lock()
		if p.bytes+c <= idleMax {
			if p.idle == nil {
				p.idle = map[int][][]byte{}
			}
			p.idle[c] = append(p.idle[c], b)
			p.bytes += c
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
	}
	p.spill.Put(&b)
}

// drop lets the collector have the idle buffers (Close: no call is in
// progress).
func (p *bufPool) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.idle, p.bytes = nil, 0
}

package hostmem

import (
	"fmt"
	"sort"
	"sync"

	"github.com/kvblob/kvblob/runtime/driver"
)

// guardBytes of canary stand before and after a guarded region's memory.
const guardBytes = 4096

// Guarded is test memory: a host region whose every byte outside the
// windows a test opens holds a canary, and with canary pages before and
// after it. Check finds any write outside a window, including one past
// either end of the region. Its methods are safe for concurrent use;
// Check reads bytes a store may be writing, so call it when none is.
type Guarded struct {
	*driver.Region
	mem     []byte // guard + region + guard
	mu      sync.Mutex
	windows [][2]int64
	closed  bool
}

// canary is the byte a guarded byte at offset i (from the mapping's start)
// must hold. It varies with i, so a shifted copy of canaries is caught too.
func canary(i int) byte { return byte(i*31 ^ i>>8) }

// NewGuarded maps a guarded host region and fills it with canaries.
func NewGuarded(name string, layout driver.Layout) (*Guarded, error) {
	if err := layout.Validate(); err != nil {
		return nil, err
	}
	n := int(layout.Bytes())
	mem, err := Alloc(n + 2*guardBytes)
	if err != nil {
		return nil, err
	}
	for i := range mem {
		mem[i] = canary(i)
	}
	g := &Guarded{Region: newDriverRegion(name, layout, mem[guardBytes:guardBytes+n:guardBytes+n]), mem: mem}
	return g, nil
}

// Open marks a span as a window the store may write. Its bytes are the
// caller's, and are not checked.
func (g *Guarded) Open(s driver.Span) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.windows = append(g.windows, [2]int64{s.Offset, s.Offset + s.Length})
}

// Reset closes every window and refills the whole region with canaries.
func (g *Guarded) Reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.windows = nil
	for i := range g.mem {
		g.mem[i] = canary(i)
	}
}

// Check reports the first byte outside every window that no longer holds
// its canary, naming its offset relative to the region. It reads only the
// bytes outside the windows.
func (g *Guarded) Check() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	ws := append([][2]int64(nil), g.windows...)
	sort.Slice(ws, func(i, j int) bool { return ws[i][0] < ws[j][0] })
	// Walk the mapping in gaps between windows (offsets in mapping terms).
	pos := 0
	check := func(from, to int) error {
		for i := from; i < to; i++ {
			if g.mem[i] != canary(i) {
				off := int64(i - guardBytes)
				where := "inside region"
				if off < 0 || off >= g.Layout.Bytes() {
					where = "outside region"
				}
				return fmt.Errorf("hostmem: guarded region %q: byte at offset %d (%s) was written outside every window", g.Name, off, where)
			}
		}
		return nil
	}
	for _, w := range ws {
		start, end := int(w[0])+guardBytes, int(w[1])+guardBytes
		if start > pos {
			if err := check(pos, start); err != nil {
				return err
			}
		}
		pos = max(pos, end)
	}
	return check(pos, len(g.mem))
}

// Mapping returns the whole mapping, guards included, for tests that
// simulate a stray write past an end.
func (g *Guarded) Mapping() []byte { return g.mem }

// Mapped reports whether the memory is still mapped.
func (g *Guarded) Mapped() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return !g.closed
}

// Close unmaps the memory.
func (g *Guarded) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	return Free(g.mem)
}

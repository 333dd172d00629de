package hostmem

import (
	"errors"
	"fmt"
	"sync"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Lender owns regions and lends them to a backend under a hold: while any
// hold is outstanding, the lender refuses to free its regions, so memory a
// store may still touch is never unmapped. It also hands out single slots
// from a free list.
//
// Every method of Lender and Hold is safe for concurrent use by multiple
// goroutines.
type Lender struct {
	mu      sync.Mutex
	regions []*Mapping
	free    []driver.Span
	inUse   map[slotID]bool
	holds   int
	closed  bool
}

type slotID struct {
	region *driver.Region
	offset int64
}

// NewLender maps one host region per layout, named prefix-0, prefix-1, ...
func NewLender(prefix string, layouts ...driver.Layout) (*Lender, error) {
	if len(layouts) == 0 {
		return nil, errors.New("hostmem: a lender needs at least one region layout")
	}
	l := &Lender{inUse: map[slotID]bool{}}
	for i, lay := range layouts {
		r, err := Map(fmt.Sprintf("%s-%d", prefix, i), lay)
		if err != nil {
			for _, prev := range l.regions {
				_ = prev.Close()
			}
			return nil, err
		}
		l.regions = append(l.regions, r)
		for s := 0; s < lay.Slots; s++ {
			l.free = append(l.free, r.Slot(s))
		}
	}
	return l, nil
}

// Regions returns the lender's regions, fixed at NewLender.
func (l *Lender) Regions() []*driver.Region {
	out := make([]*driver.Region, len(l.regions))
	for i, r := range l.regions {
		out[i] = r.Region
	}
	return out
}

// Hold is a claim on a lender's regions: while it is outstanding, the
// lender does not free them. Release it exactly once: a backend.Bind
// binding releases the hold it was given, and only once no store can touch
// the regions. While a backend's Shutdown returns an error, the hold stays
// out and Lender.Close refuses: keep the lender.
type Hold struct {
	l        *Lender
	mu       sync.Mutex
	released bool
}

// Hold takes a hold on every region. It fails once the lender is closed.
func (l *Lender) Hold() (*Hold, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errors.New("hostmem: lender is closed; no new holds")
	}
	l.holds++
	return &Hold{l: l}, nil
}

// Regions returns the held regions.
func (h *Hold) Regions() []*driver.Region { return h.l.Regions() }

// Release gives the hold back. A second release is an error.
func (h *Hold) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return errors.New("hostmem: hold released twice")
	}
	h.released = true
	h.l.mu.Lock()
	h.l.holds--
	h.l.mu.Unlock()
	return nil
}

// Released reports whether the hold was given back.
func (h *Hold) Released() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.released
}

// Holds returns the number of outstanding holds.
func (l *Lender) Holds() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holds
}

// Acquire takes a free slot, or reports false when none is free.
func (l *Lender) Acquire() (driver.Span, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.free) == 0 {
		return driver.Span{}, false
	}
	s := l.free[len(l.free)-1]
	l.free = l.free[:len(l.free)-1]
	l.inUse[slotID{s.Region, s.Offset}] = true
	return s, true
}

// Return gives a slot back. Returning a slot that is not out is an error.
func (l *Lender) Return(s driver.Span) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	id := slotID{s.Region, s.Offset}
	if !l.inUse[id] {
		return fmt.Errorf("hostmem: slot at %d of region %q is not out", s.Offset, s.Region.Name)
	}
	delete(l.inUse, id)
	l.free = append(l.free, s)
	return nil
}

// Close frees every region. It refuses while a hold is outstanding, since a
// store may still touch the memory.
func (l *Lender) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.holds > 0 {
		return fmt.Errorf("hostmem: %d holds outstanding; a store may still touch the regions", l.holds)
	}
	if l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	for _, r := range l.regions {
		errs = append(errs, r.Close())
	}
	return errors.Join(errs...)
}

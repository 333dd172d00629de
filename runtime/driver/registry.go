package driver

import (
	"sync"
	"time"
)

// Registry is a driver's set of live registrations, for driver authors: it
// hands out Registrations, answers whether a region is live (the liveness
// the generated admission checks take), and refuses an unknown or repeated
// Unregister.
type Registry struct {
	mu   sync.Mutex
	regs map[*Reg]bool
}

// Reg is one registration of a Registry. Data holds whatever the driver
// needs to revoke it (an SDK buffer, say).
type Reg struct {
	region *Region
	Data   any
}

// Region returns the registered region.
func (g *Reg) Region() *Region { return g.region }

// Add records a registration of r.
func (y *Registry) Add(r *Region, data any) *Reg {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.regs == nil {
		y.regs = map[*Reg]bool{}
	}
	g := &Reg{region: r, Data: data}
	y.regs[g] = true
	return g
}

// Lookup returns reg as one of this registry's live registrations, or a
// RejectedError.
func (y *Registry) Lookup(reg Registration) (*Reg, error) {
	g, ok := reg.(*Reg)
	y.mu.Lock()
	defer y.mu.Unlock()
	if !ok || !y.regs[g] {
		return nil, Reject(RuleUnknownRegistration, "not a live registration of this driver")
	}
	return g, nil
}

// Remove drops a registration found by Lookup.
func (y *Registry) Remove(g *Reg) {
	y.mu.Lock()
	defer y.mu.Unlock()
	delete(y.regs, g)
}

// Live reports whether r has a live registration.
func (y *Registry) Live(r *Region) bool {
	y.mu.Lock()
	defer y.mu.Unlock()
	for g := range y.regs {
		if g.region == r {
			return true
		}
	}
	return false
}

// Len returns the number of live registrations.
func (y *Registry) Len() int {
	y.mu.Lock()
	defer y.mu.Unlock()
	return len(y.regs)
}

// Calls counts a driver's calls in progress, so that Drain can wait for
// them without polling.
type Calls struct {
	mu   sync.Mutex
	n    int
	idle chan struct{}
}

// Enter counts a call in.
func (c *Calls) Enter() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
}

// Leave counts a call out.
func (c *Calls) Leave() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n--
	if c.n == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// InProgress returns the number of calls in progress.
func (c *Calls) InProgress() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Wait waits up to timeout until no call is in progress, and reports
// whether none is.
func (c *Calls) Wait(timeout time.Duration) bool {
	c.mu.Lock()
	if c.n == 0 {
		c.mu.Unlock()
		return true
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	idle := c.idle
	c.mu.Unlock()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C:
		return false
	}
}

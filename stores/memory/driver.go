// Package memory is kvblob's reference store: an in-process byte store and
// its driver.
//
// The driver runs in one of three modes:
//
//   - Blocking: Put and Get return a finished operation.
//   - Background: Put and Get return at once; a goroutine moves the rows.
//   - Controlled: Put and Get admit the rows and return; nothing more
//     happens until the test releases each stage through the operation's
//     Controller (moving data, publishing results, ending access), so a
//     row's result and the operation's access end can be observed apart.
//
// Every code-to-result decision comes from generated/memory (spec/memory.yaml).
// Objects carry the trailer of trailer.go; a trailer that does not match is a
// FAULT naming what was wrong, and leaves the destination untouched.
package memory

import (
	"sync"
	"time"

	gen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
)

// Mode selects when the driver does its work.
type Mode uint8

const (
	Blocking Mode = iota
	Background
	Controlled
)

func (m Mode) String() string {
	return [...]string{"blocking", "background", "controlled"}[m]
}

// Options configure a Driver. The zero value is a blocking driver over a
// store of its own.
type Options struct {
	Mode Mode
	// Store is shared with other drivers; nil gives the driver its own.
	Store *Store
	// NoHints makes the driver declare no hints (and refuse them).
	NoHints bool
	// MaxRowsPerOp bounds the rows of one call (0: no bound).
	MaxRowsPerOp int
}

// Driver is the memory store's driver.driver.
type Driver struct {
	opt   Options
	store *Store
	caps  driver.Capabilities

	regs driver.Registry

	mu         sync.Mutex
	open       map[*op]bool
	closed     bool
	drained    bool
	loseNext   bool
	holdNext   chan struct{}
	background sync.WaitGroup
}

var _ driver.Driver = (*Driver)(nil)

// New returns a driver.
func New(opt Options) *Driver {
	caps := gen.Capabilities
	if opt.NoHints {
		caps.Hints = false
	}
	caps.MaxRowsPerOp = opt.MaxRowsPerOp
	st := opt.Store
	if st == nil {
		st = NewStore(0)
	}
	return &Driver{opt: opt, store: st, caps: caps, open: map[*op]bool{}}
}

// Store returns the driver's store.
func (d *Driver) Store() *Store { return d.store }

// Capabilities reports spec/memory.yaml's capabilities, narrowed by Options.
func (d *Driver) Capabilities() driver.Capabilities { return d.caps }

// Register admits a host region. A device region is refused.
func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	if err := gen.AdmitRegister(r); err != nil {
		return nil, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, driver.Reject(driver.RuleClosed, "the driver is closed")
	}
	return d.regs.Add(r, nil), nil
}

// Unregister revokes a registration; it is refused while an operation that
// may touch the region is open or unprovable.
func (d *Driver) Unregister(reg driver.Registration) error {
	g, err := d.regs.Lookup(reg)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for o := range d.open {
		if !o.accessSettled() && o.touches(g.Region()) {
			return driver.Reject(driver.RuleAccessOpen, "an operation that may touch region %q is still open; drain first", g.Region().Name)
		}
	}
	d.regs.Remove(g)
	return nil
}

// LoseEvidenceNext makes the next operation lose the evidence of its access
// end: its results are published, but its access is never proven to end.
func (d *Driver) LoseEvidenceNext() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.loseNext = true
}

// HoldAccessNext makes the next operation publish its results but keep its
// access open until release is called.
func (d *Driver) HoldAccessNext() (release func()) {
	ch := make(chan struct{})
	d.mu.Lock()
	d.holdNext = ch
	d.mu.Unlock()
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}

// Put stores each row's spans under its key.
func (d *Driver) Put(rows []driver.Row) (driver.Operation, error) {
	return d.submit(rows, true, driver.Hint{})
}

// Get reads each row's object into its spans.
func (d *Driver) Get(rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	return d.submit(rows, false, hint)
}

func (d *Driver) submit(rows []driver.Row, put bool, hint driver.Hint) (driver.Operation, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, driver.Reject(driver.RuleClosed, "the driver is closed")
	}
	var err error
	if put {
		err = gen.AdmitPut(rows, d.regs.Live)
	} else {
		err = gen.AdmitGet(rows, hint, d.regs.Live)
	}
	if err == nil {
		err = rules.AdmitHint(hint, d.caps.Hints)
	}
	if err == nil {
		err = rules.AdmitRows(rows, d.caps.MaxRowsPerOp)
	}
	if err != nil {
		return nil, err
	}
	o := &op{d: d, put: put, rows: append([]driver.Row(nil), rows...), staged: make([]driver.Result, len(rows)), writes: make([]*write, len(rows)),
		settled: make(chan struct{}), lose: d.loseNext, holdAccess: d.holdNext}
	d.loseNext, d.holdNext = false, nil
	d.open[o] = true
	d.drained = false
	switch d.opt.Mode {
	case Blocking:
		d.mu.Unlock()
		o.run()
		d.mu.Lock()
	case Background:
		d.background.Add(1)
		go func() {
			defer d.background.Done()
			o.run()
		}()
	}
	return o, nil
}

// settle drops o from the open set once its results are published and its
// access ended. An unprovable operation stays open for good.
func (d *Driver) settle(o *op) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.open, o)
}

// Drain waits up to timeout for every operation to finish. It answers false
// at once while an operation is unprovable.
func (d *Driver) Drain(timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		d.mu.Lock()
		var wait chan struct{}
		for o := range d.open {
			if o.Unprovable() {
				d.mu.Unlock()
				return false
			}
			wait = o.settled
		}
		if wait == nil {
			d.drained = true
			d.mu.Unlock()
			d.background.Wait() // goroutines past their last settle
			return true
		}
		d.mu.Unlock()
		select {
		case <-wait:
		case <-deadline.C:
			return false
		}
	}
}

// Close releases the driver. It is refused unless a drain returned true
// since the last operation and every region is unregistered.
func (d *Driver) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil
	}
	if !d.drained || len(d.open) > 0 {
		return driver.Reject(driver.RuleAccessOpen, "close needs a drain that returned true first")
	}
	if n := d.regs.Len(); n > 0 {
		return driver.Reject(driver.RuleAccessOpen, "%d regions are still registered; unregister them first", n)
	}
	d.closed = true
	return nil
}

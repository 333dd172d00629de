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
// Objects carry the trailer of stores/trailer (keyed when Options.Integrity
// is set); a trailer or tag that does not match is a FAULT naming what was
// wrong, and leaves the destination untouched.
//
// The store behaves like a store: objects live in a preallocated arena of
// 64 MiB segments carved into size-class blocks (as Mooncake's segments are),
// so once warm a put allocates no object memory on the Go heap. Without
// Integrity, a put copies each row into its block and nothing more: the
// trailer (name digest, length, CRC32) is written only where a reader sees
// the object whole, for an object that leaves the store (Store.Object) or
// is read with Integrity on. A get of an object the store wrote itself
// compares only its length before writing a byte. The store's own objects
// are copied into blocks nothing else writes, under a key no reader sees
// until the copy is done, and found again by that key in the store's map:
// no read can find one torn or under another name, so a digest (a SHA-256
// of the key) and a checksum at each put would be work no read ever
// compares. An object the store did not write itself (planted with
// SetObject) is kept as planted, and its every read checks its trailer
// whole, checksum included. With Integrity, a put and a get go through
// Integrity.Append and Integrity.Check whole.
// Operations are driver.Notifiers: the backend need not poll them.
package memory

import (
	"context"
	"sync"

	memorygen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/runtime/rules"
	"github.com/kvblob/kvblob/stores/trailer"
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
	// Integrity, when set, tags every object the driver writes with the
	// current row key and refuses, as a FAULT with the destination
	// untouched, every object whose tag does not verify under the current
	// or previous key, an unkeyed one included (see trailer.Integrity).
	Integrity *trailer.Integrity
}

// Driver is the memory store's driver.driver.
type Driver struct {
	opt   Options
	store *Store
	caps  driver.Capabilities

	life driverkit.Lifecycle

	mu         sync.Mutex
	loseNext   bool
	holdNext   chan struct{}
	background sync.WaitGroup
}

var _ driver.Driver = (*Driver)(nil)

// New returns a driver.
func New(opt Options) *Driver {
	caps := memorygen.Memory().Capabilities
	if opt.NoHints {
		caps.Hints = false
	}
	caps.MaxRowsPerOp = opt.MaxRowsPerOp
	st := opt.Store
	if st == nil {
		st = NewStore(0)
	}
	return &Driver{opt: opt, store: st, caps: caps}
}

// Store returns the driver's store.
func (d *Driver) Store() *Store { return d.store }

// Capabilities reports spec/memory.yaml's capabilities, narrowed by Options.
func (d *Driver) Capabilities() driver.Capabilities { return d.caps }

// Register admits a host region. A device region is refused.
func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	return d.life.Register(r, memorygen.Memory().Admission.Register, nil)
}

// Unregister revokes a registration; it is refused while an operation that
// may touch the region is open or unprovable.
func (d *Driver) Unregister(reg driver.Registration) error { return d.life.Unregister(reg, nil) }

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
func (d *Driver) Put(_ context.Context, rows []driver.Row) (driver.Operation, error) {
	return d.submit(rows, true, driver.Hint{})
}

// Get reads each row's object into its spans.
func (d *Driver) Get(_ context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	return d.submit(rows, false, hint)
}

func (d *Driver) submit(rows []driver.Row, put bool, hint driver.Hint) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error {
		var err error
		if put {
			err = memorygen.Memory().Admission.Put(rows, live)
		} else {
			err = memorygen.Memory().Admission.Get(rows, hint, live)
		}
		if err == nil {
			err = rules.AdmitHint(hint, d.caps.Hints)
		}
		if err == nil {
			err = rules.AdmitRows(rows, d.caps.MaxRowsPerOp)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	o := newOp(d, call, put, rows)
	d.mu.Lock()
	o.lose, o.holdAccess = d.loseNext, d.holdNext
	d.loseNext, d.holdNext = false, nil
	d.mu.Unlock()
	switch d.opt.Mode {
	case Blocking:
		o.run()
		o.rows = nil // the caller's: it may reuse them once Put returns
	case Background:
		d.background.Add(1)
		go func() {
			defer d.background.Done()
			o.run()
		}()
	}
	return o, nil
}

// Drain waits until every operation published its results and ended its
// access, or ctx is done. It answers false at once while an operation is
// unprovable.
func (d *Driver) Drain(ctx context.Context) bool {
	return d.life.Drain(ctx, func(context.Context) bool {
		d.background.Wait() // goroutines past their last stage
		return true
	})
}

// Close releases the driver once every operation ended and every region
// is unregistered (no Drain is needed first), after its background
// goroutines, each past its last stage by then, returned.
func (d *Driver) Close() error {
	return d.life.Close(func() error { d.background.Wait(); return nil })
}

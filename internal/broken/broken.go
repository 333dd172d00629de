// Package broken holds drivers that each break exactly one rule of the
// driver contract. Each wraps a sound driver and changes one behaviour; the
// pairing test runs every conformance check against a sound driver (it must
// pass) and against its twin here (it must fail), so a weakened check is
// caught before a real driver meets it.
package broken

import (
	"context"
	"errors"
	"sync"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Driver decorates Inner; each nil hook passes through.
type Driver struct {
	Inner      driver.Driver
	caps       func(driver.Capabilities) driver.Capabilities
	register   func(r *driver.Region) (driver.Registration, error)
	unregister func(reg driver.Registration) error
	put        func(ctx context.Context, rows []driver.Row) (driver.Operation, error)
	get        func(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error)
	drain      func(ctx context.Context) bool
	close      func() error
	op         func(o *Op) // adjusts every operation the driver returns

	mu  sync.Mutex
	ops []*Op
}

// As reaches the sound driver underneath (see driver.As).
func (d *Driver) As(target any) bool { return driver.As(d.Inner, target) }

func (d *Driver) Capabilities() driver.Capabilities {
	c := d.Inner.Capabilities()
	if d.caps != nil {
		c = d.caps(c)
	}
	return c
}

func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	if d.register != nil {
		return d.register(r)
	}
	return d.Inner.Register(r)
}

func (d *Driver) Unregister(reg driver.Registration) error {
	if d.unregister != nil {
		return d.unregister(reg)
	}
	return d.Inner.Unregister(reg)
}

func (d *Driver) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	if d.put != nil {
		return d.put(ctx, rows)
	}
	return d.wrap(d.Inner.Put(ctx, rows))(rows, true)
}

func (d *Driver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	if d.get != nil {
		return d.get(ctx, rows, hint)
	}
	return d.wrap(d.Inner.Get(ctx, rows, hint))(rows, false)
}

func (d *Driver) Drain(ctx context.Context) bool {
	if d.drain != nil {
		return d.drain(ctx)
	}
	return d.Inner.Drain(ctx)
}

func (d *Driver) Close() error {
	if d.close != nil {
		return d.close()
	}
	return d.Inner.Close()
}

// wrap decorates an inner operation with the driver's op hook.
func (d *Driver) wrap(inner driver.Operation, err error) func(rows []driver.Row, put bool) (driver.Operation, error) {
	return func(rows []driver.Row, put bool) (driver.Operation, error) {
		if err != nil {
			return nil, err
		}
		o := &Op{Inner: inner, Rows: rows, Put: put}
		if d.op != nil {
			d.op(o)
		}
		d.mu.Lock()
		d.ops = append(d.ops, o)
		d.mu.Unlock()
		return o, nil
	}
}

func (d *Driver) anyUnprovable() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, o := range d.ops {
		if o.Inner.AccessUnprovable() {
			return true
		}
	}
	return false
}

// firstRegionOfAnOpenOp reports whether r is the region of the first span
// of the first row of an operation whose access has not ended.
func (d *Driver) firstRegionOfAnOpenOp(r *driver.Region) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, o := range d.ops {
		if !o.Inner.AccessEnded() && len(o.Rows) > 0 && len(o.Rows[0].Spans) > 0 && o.Rows[0].Spans[0].Region == r {
			return true
		}
	}
	return false
}

// Op decorates an inner operation.
type Op struct {
	Inner driver.Operation
	Rows  []driver.Row
	Put   bool

	poll        func() ([]driver.Result, bool)
	accessEnded func() bool
	cancel      func()
	once        sync.Once
	after       func(res []driver.Result) // runs once, when results first arrive
}

func (o *Op) Poll() ([]driver.Result, bool) {
	var res []driver.Result
	var done bool
	if o.poll != nil {
		res, done = o.poll()
	} else {
		res, done = o.Inner.Poll()
	}
	if done && o.after != nil {
		o.once.Do(func() { o.after(res) })
	}
	return res, done
}

func (o *Op) AccessEnded() bool {
	if o.accessEnded != nil {
		return o.accessEnded()
	}
	return o.Inner.AccessEnded()
}

func (o *Op) AccessUnprovable() bool { return o.Inner.AccessUnprovable() }

func (o *Op) Cancel() {
	if o.cancel != nil {
		o.cancel()
		return
	}
	o.Inner.Cancel()
}

// mapResults returns a poll that rewrites each finished result with f.
func mapResults(o *Op, f func(i int, r driver.Result) driver.Result) func() ([]driver.Result, bool) {
	return func() ([]driver.Result, bool) {
		res, done := o.Inner.Poll()
		if !done {
			return nil, false
		}
		out := append([]driver.Result(nil), res...)
		for i := range out {
			out[i] = f(i, out[i])
		}
		return out, true
	}
}

// doneOp is an operation that finished with results and ended its access
// without touching anything.
type doneOp struct{ res []driver.Result }

func (o doneOp) Poll() ([]driver.Result, bool) { return o.res, true }
func (doneOp) AccessEnded() bool               { return true }
func (doneOp) AccessUnprovable() bool          { return false }
func (doneOp) Cancel()                         {}

type fakeRegistration struct{ r *driver.Region }

func (f fakeRegistration) Region() *driver.Region { return f.r }

var errStore = errors.New("broken: the store failed")

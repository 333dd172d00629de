package storekit

import (
	"context"
	"testing"
	"time"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
)

// Dest is the seed of a destination row: Untouched checks that no byte of
// such a row was written.
const Dest = 0xEE

// Fx is a unit-test fixture for a driver whose operations finish before
// Put and Get return (the fs and S3 drivers): a driver with a registered
// region (NewFx: 8 slots of 64 KiB), rows filled from a seed, and a put or
// get, bounded in time, that requires its results and its access end at
// once.
type Fx struct {
	Driver driver.Driver
	Region *hostmem.Mapping
	t      *testing.T
}

// NewFx registers a region with d. The test's cleanup drains d within drain,
// then unregisters the region and closes d and the region; a driver that
// does not drain keeps the memory, since a store may still touch it.
func NewFx(t *testing.T, d driver.Driver, drain time.Duration) *Fx {
	t.Helper()
	return NewFxSized(t, d, drain, driver.Layout{SlotBytes: 64 << 10, Slots: 8})
}

// NewFxSized is NewFx over a region of the given layout (rows longer than
// 64 KiB: S3's large rows).
func NewFxSized(t *testing.T, d driver.Driver, drain time.Duration, layout driver.Layout) *Fx {
	t.Helper()
	r, err := hostmem.Map("slots", layout)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := d.Register(r.Region)
	if err != nil {
		_ = r.Close()
		t.Fatalf("registering the fixture's region: %v", err)
	}
	t.Cleanup(func() {
		if d.Drain(conformance.Within(drain)) && d.Unregister(reg) == nil {
			_ = d.Close()
			_ = r.Close()
		}
	})
	return &Fx{Driver: d, Region: r, t: t}
}

// Row is key in slot i, filled with seed (Dest marks a destination).
func (f *Fx) Row(key string, i int, seed byte) driver.Row {
	s := f.Region.Slot(i)
	b := s.Bytes()
	for j := range b {
		b[j] = seed ^ byte(j*7)
	}
	return driver.Row{Key: key, Spans: []driver.Span{s}}
}

// Put puts rows and requires the operation to have finished, results and
// access end both, by the time Put returned.
func (f *Fx) Put(rows ...driver.Row) []driver.Result {
	f.t.Helper()
	op, err := fxCall(f.t, "Put", func() (driver.Operation, error) { return f.Driver.Put(context.Background(), rows) })
	if err != nil {
		f.t.Fatalf("Put: %v", err)
	}
	return f.finished("put", op)
}

// Get is Put's twin for a get.
func (f *Fx) Get(rows ...driver.Row) []driver.Result {
	f.t.Helper()
	op, err := fxCall(f.t, "Get", func() (driver.Operation, error) { return f.Driver.Get(context.Background(), rows, driver.Hint{}) })
	if err != nil {
		f.t.Fatalf("Get: %v", err)
	}
	return f.finished("get", op)
}

// fxCallBound bounds each Put and Get: a driver whose call never returns (a
// lock never released, no worker to run it) fails the test naming the
// call, in well under the test binary's -timeout. It is far above any
// request deadline the stores' tests set.
const fxCallBound = 30 * time.Second

func fxCall(t *testing.T, what string, f func() (driver.Operation, error)) (driver.Operation, error) {
	t.Helper()
	type answer struct {
		op  driver.Operation
		err error
	}
	a := bound.Value(t, fxCallBound, what, func() answer { op, err := f(); return answer{op, err} })
	return a.op, a.err
}

func (f *Fx) finished(what string, op driver.Operation) []driver.Result {
	f.t.Helper()
	res, done := op.Poll()
	if !done {
		f.t.Fatalf("the %s had no results when it returned", what)
	}
	if !op.AccessEnded() {
		f.t.Fatalf("the %s's access had not ended when it returned", what)
	}
	return res
}

// Untouched fails unless every byte of row is still its Dest fill.
func Untouched(t *testing.T, row driver.Row) {
	t.Helper()
	b := row.Spans[0].Bytes()
	for j := range b {
		if b[j] != Dest^byte(j*7) {
			t.Fatalf("the destination was written at byte %d", j)
		}
	}
}

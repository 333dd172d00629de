package conformance

import (
	"context"
	"fmt"
	"time"

	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/driver"
)

// boundedDriver is the driver a check drives: each call that can block on
// the driver's own locks runs on a goroutine of its own, and the check
// waits for it at most its Deadline (a Drain: its context's wait on top).
// A call that has not returned fails the check naming the call, so a lock
// the driver never releases, or a loop of it that never ends, fails in
// seconds as an assertion rather than at the test binary's -timeout.
// driver.As reaches the driver inside.
type boundedDriver struct {
	d driver.Driver
	t T
	// bound is how long a call may take.
	bound time.Duration
}

// within runs f, a call named what, bounded: past the bound the check
// fails; the call then gets the bound again (a check that blocks a call
// on purpose releases it at its own deadline and wants it back), and only
// then is the check ended.
func (b *boundedDriver) within(what string, f func(), extra ...time.Duration) {
	b.t.Helper()
	d := b.bound
	for _, e := range extra {
		d += e
	}
	wait := bound.Go(f)
	if wait(d) {
		return
	}
	b.t.Errorf("%s did not return within %v: a lock never released, or a loop that never ends", what, d)
	if !wait(b.bound) {
		b.t.Fatalf("%s still had not returned after %v", what, d+b.bound)
	}
}

func (b *boundedDriver) As(target any) bool { return driver.As(b.d, target) }

func (b *boundedDriver) Capabilities() driver.Capabilities { return b.d.Capabilities() }

func (b *boundedDriver) Register(r *driver.Region) (reg driver.Registration, err error) {
	b.within("Register", func() { reg, err = b.d.Register(r) })
	return reg, err
}

func (b *boundedDriver) Unregister(reg driver.Registration) (err error) {
	b.within("Unregister", func() { err = b.d.Unregister(reg) })
	return err
}

func (b *boundedDriver) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	var op driver.Operation
	var err error
	b.within("Put", func() { op, err = b.d.Put(ctx, rows) })
	return b.op(op, "put"), err
}

func (b *boundedDriver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	var op driver.Operation
	var err error
	b.within("Get", func() { op, err = b.d.Get(ctx, rows, hint) })
	return b.op(op, "get"), err
}

func (b *boundedDriver) Drain(ctx context.Context) (ok bool) {
	what := "Drain"
	if dl, has := ctx.Deadline(); has {
		what = fmt.Sprintf("Drain (its context ending in %v)", time.Until(dl).Round(time.Millisecond))
		b.within(what, func() { ok = b.d.Drain(ctx) }, time.Until(dl))
		return ok
	}
	b.within(what, func() { ok = b.d.Drain(ctx) })
	return ok
}

func (b *boundedDriver) Close() (err error) {
	b.within("Close", func() { err = b.d.Close() })
	return err
}

func (b *boundedDriver) op(op driver.Operation, call string) driver.Operation {
	if op == nil {
		return nil
	}
	return &boundedOp{op: op, b: b, call: call}
}

// boundedOp bounds each call of an operation as boundedDriver bounds the
// driver's.
type boundedOp struct {
	op   driver.Operation
	b    *boundedDriver
	call string // "put" or "get"
}

func (o *boundedOp) Poll() (res []driver.Result, done bool) {
	o.b.within("Poll of a "+o.call, func() { res, done = o.op.Poll() })
	return res, done
}

func (o *boundedOp) AccessEnded() (ended bool) {
	o.b.within("AccessEnded of a "+o.call, func() { ended = o.op.AccessEnded() })
	return ended
}

func (o *boundedOp) AccessUnprovable() (unprovable bool) {
	o.b.within("AccessUnprovable of a "+o.call, func() { unprovable = o.op.AccessUnprovable() })
	return unprovable
}

func (o *boundedOp) Cancel() {
	o.b.within("Cancel of a "+o.call, o.op.Cancel)
}

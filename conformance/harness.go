// Package conformance is the suite every kvblob driver passes, in the spirit
// of testing/fstest.TestFS and gocloud.dev/blob's drivertest: a driver's own
// test calls Run with a Factory and the Scenarios its store can stage.
//
// The suite observes drivers through the driver contract alone. It never
// frees or reuses memory a driver has not proven it stopped touching: when a
// driver does not drain, the harness keeps the region mapped and says so.
//
// Every check has a broken driver in conformance/broken that breaks exactly
// that rule; the pairing test runs each check against a sound driver (it
// must pass) and its broken twin (it must fail).
package conformance

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
)

// T is the part of *testing.T the suite uses, so that Check can run a check
// outside go test and the pairing test can watch a check fail.
type T interface {
	Helper()
	Name() string
	Cleanup(func())
	Logf(format string, args ...any)
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

var _ T = (*testing.T)(nil)

// Factory makes a fresh driver for one check. It registers its own cleanup
// with t if it needs one; the harness drains, unregisters and closes the
// driver first.
type Factory func(t T) driver.Driver

// Scenarios are what a store can stage. A nil hook skips the checks that
// need it, with the hook's name as the reason.
type Scenarios struct {
	// HoldGet holds the next get of key inside the SDK until release is
	// called; entered is closed once the call is held.
	HoldGet func(d driver.Driver, key string) (entered <-chan struct{}, release func())
	// Writing makes key look as if another client were still writing it,
	// until finish is called.
	Writing func(d driver.Driver, key string) (finish func())
	// Full makes the store refuse the next put of key as full.
	Full func(d driver.Driver, key string)
	// FailPut makes the next put of key fail inside the SDK (a raise).
	FailPut func(d driver.Driver, key string)
	// FailRead makes the next get of key fail inside the SDK.
	FailRead func(d driver.Driver, key string)
	// Unprovable makes the next put of key lose the evidence of its access
	// end for good.
	Unprovable func(d driver.Driver, key string)
	// HoldAccess makes the next operation publish its results but keep its
	// access open until release is called.
	HoldAccess func(d driver.Driver) (release func())
}

// Geometry of the harness's guarded region. Each row's span is the middle
// of a slot, so a write that strays past a span lands on canaries.
const (
	SlotBytes = 4096
	Slots     = 16
	margin    = 256
	// RowBytes is the length of one harness row.
	RowBytes = SlotBytes - 2*margin
)

// Deadline bounds every wait of the harness, so a hung driver fails its
// check instead of hanging CI.
var Deadline = 10 * time.Second

// Within returns a context that is done after d, to bound a Drain.
func Within(d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	time.AfterFunc(d, cancel) // releases the timer's resources once it fired
	return ctx
}

// Harness is one check's driver and memory.
type Harness struct {
	T T
	// Ctx is the context of the check's Put and Get calls.
	Ctx  context.Context
	D    driver.Driver
	Caps driver.Capabilities
	Mem  *hostmem.Guarded
	Reg  driver.Registration
}

// NewHarness makes a driver with f, maps a guarded region and registers it.
// Cleanup drains the driver; only if the drain returns true does it
// unregister, close the driver and unmap the memory.
func NewHarness(t T, f Factory) *Harness {
	t.Helper()
	mem, err := hostmem.NewGuarded("conformance", driver.Layout{SlotBytes: SlotBytes, Slots: Slots})
	if err != nil {
		t.Fatal(err)
	}
	d := f(t)
	h := &Harness{T: t, Ctx: context.Background(), D: d, Caps: d.Capabilities(), Mem: mem}
	h.Reg, err = d.Register(mem.Region)
	if err != nil {
		t.Fatalf("Register of a host region failed: %v", err)
	}
	t.Cleanup(h.cleanup)
	return h
}

func (h *Harness) cleanup() {
	if !h.D.Drain(Within(Deadline)) {
		h.T.Logf("harness: the driver did not drain; keeping region %q mapped, since the store may still touch it", h.Mem.Name)
		return
	}
	if h.Reg != nil {
		if err := h.D.Unregister(h.Reg); err != nil {
			h.T.Logf("harness: unregister after a drain failed (%v); keeping the region mapped", err)
			return
		}
	}
	_ = h.D.Close()
	_ = h.Mem.Close()
}

// Key returns a key unique to this check and name.
func (h *Harness) Key(name string) string {
	k, err := driver.Key("conformance", []byte(h.T.Name()+"/"+name))
	if err != nil {
		h.T.Fatal(err)
	}
	return k
}

// Span returns the row span of slot i: the slot less a margin on each side.
func (h *Harness) Span(i int) driver.Span {
	return driver.Span{Region: h.Mem.Region, Offset: int64(i)*SlotBytes + margin, Length: RowBytes}
}

// Row returns a one-span row for key in slot i.
func (h *Harness) Row(key string, i int) driver.Row {
	return driver.Row{Key: key, Spans: []driver.Span{h.Span(i)}}
}

// Fill writes a pattern derived from seed into s.
func Fill(s driver.Span, seed byte) {
	b := s.Bytes()
	for i := range b {
		b[i] = seed ^ byte(i*7) ^ byte(i>>8)
	}
}

// Dest opens the rows' spans as windows the store may write, and fills them
// with a marker so an untouched destination can be recognised.
func (h *Harness) Dest(rows ...driver.Row) {
	for _, r := range rows {
		for _, s := range r.Spans {
			h.Mem.Open(s)
			Fill(s, 0xEE)
		}
	}
}

// Snapshot copies the rows' bytes.
func Snapshot(rows ...driver.Row) []byte {
	var out []byte
	for _, r := range rows {
		for _, s := range r.Spans {
			out = append(out, s.Bytes()...)
		}
	}
	return out
}

// Put submits rows and waits for their results; it fails the check on an
// error.
func (h *Harness) Put(rows ...driver.Row) ([]driver.Result, driver.Operation) {
	h.T.Helper()
	op, err := h.D.Put(h.Ctx, rows)
	if err != nil {
		h.T.Fatalf("Put(%s) = %v", keys(rows), err)
	}
	return h.Wait(op, len(rows)), op
}

// Get submits rows and waits for their results.
func (h *Harness) Get(hint driver.Hint, rows ...driver.Row) ([]driver.Result, driver.Operation) {
	h.T.Helper()
	h.Dest(rows...)
	op, err := h.D.Get(h.Ctx, rows, hint)
	if err != nil {
		h.T.Fatalf("Get(%s) = %v", keys(rows), err)
	}
	return h.Wait(op, len(rows)), op
}

// Wait polls op until it is done, and checks it answers one valid result
// per row.
func (h *Harness) Wait(op driver.Operation, rows int) []driver.Result {
	h.T.Helper()
	res, ok := WaitResults(op, Deadline)
	if !ok {
		h.T.Fatalf("test timed out: no results within %v", Deadline)
	}
	if len(res) != rows {
		h.T.Fatalf("Poll answered %d results for %d rows", len(res), rows)
	}
	for i, r := range res {
		if err := r.Validate(); err != nil {
			h.T.Fatalf("row %d: %v", i, err)
		}
	}
	return res
}

// WaitResults polls op until it is done or d passes.
func WaitResults(op driver.Operation, d time.Duration) ([]driver.Result, bool) {
	return poll(d, func() ([]driver.Result, bool) { return op.Poll() })
}

// WaitAccess polls op until its access ended or d passes.
func WaitAccess(op driver.Operation, d time.Duration) bool {
	_, ok := poll(d, func() (struct{}, bool) { return struct{}{}, op.AccessEnded() })
	return ok
}

// poll calls f until it answers true or d passes. Operations are observed
// by polling, as the contract says; the short sleep paces the poll and
// synchronises nothing.
func poll[T any](d time.Duration, f func() (T, bool)) (T, bool) {
	deadline := time.Now().Add(d)
	for {
		if v, ok := f(); ok {
			return v, true
		}
		if time.Now().After(deadline) {
			var zero T
			return zero, false
		}
		time.Sleep(200 * time.Microsecond)
	}
}

func keys(rows []driver.Row) string {
	ks := make([]string, len(rows))
	for i, r := range rows {
		ks[i] = r.Key
	}
	return strings.Join(ks, ",")
}

// differs says where two snapshots first differ.
func differs(a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			return fmt.Sprintf("first difference at byte %d", i)
		}
	}
	return "lengths differ"
}

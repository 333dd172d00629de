// Package conformance is the suite every kvblob driver passes, in the spirit
// of testing/fstest.TestFS and gocloud.dev/blob's drivertest. Each store has
// one test that calls Run with a Suite: the store's name and SDK, a Factory
// of drivers, the Setup that readies its server, the Scenarios its store
// can stage, its spec's generated Cases and the Stager that stages them,
// the checks of its SDK:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Suite{
//			Name: "mystore", SDK: "mysdk 1.2 (loopback)",
//			Factory:   mystorekit.Factory(env),
//			Scenarios: mystorekit.Scenarios(),
//			Cases:     storecases.All(),
//			Stage:     mystorekit.Stage,
//		})
//	}
//
// The gate (cmd/gate) runs every store's TestConformance through go test.
// A store whose SDK calls are not written yet runs Suite{Only: Lifecycle};
// conformance/storekit holds what a store's test kit is built from.
//
// The suite observes drivers through the driver contract alone. It never
// frees or reuses memory a driver has not proven it stopped touching: when a
// driver does not drain, the harness keeps the region mapped and says so.
//
// The hostile checks (HostileChecks) attack a store as a neighbour with
// write access to its medium would, through the Suite's Neighbour: raw
// objects under a row's key, values shaped like a marker, values of the
// wrong type, nested tenant prefixes, and a tree of folders too wide and
// deep to walk whole.
//
// Every check has a broken driver in internal/broken that breaks exactly
// that rule; the pairing tests run each check against a sound driver (it
// must pass) and its broken twin (it must fail).
package conformance

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
)

// T is the part of *testing.T the suite uses, so that the suite can run a
// known failure on a recorder, and the pairing test watch a check fail.
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

// Geometry of the harness's guarded region. Each row's span is the middle
// of a slot, so a write that strays past a span lands on canaries.
const (
	SlotBytes = 4096
	Slots     = 16
	margin    = 256
	// RowBytes is the length of one harness row.
	RowBytes = SlotBytes - 2*margin
)

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
	// Deadline bounds every wait of the check (Suite.Deadline).
	Deadline time.Duration

	names map[string]string // key -> the name Key made it from
	// hooked says how a stager staged the current case through a hook or
	// seam ("" when it staged nothing that way); see StagedThrough.
	hooked string
}

// StagedThrough is how a stager reports that it staged the case in hand
// through something no real server offers: a hook between the adapter's
// calls, a seam's raised answer, a fault wrapper. how says which ("the
// seam's answer to claim"). A case the spec marks stageable must be staged
// without one (spec/README.md: a stageable answer is one a real server
// gives on cue), and the suite fails it when its stager reports one.
func (h *Harness) StagedThrough(how string) {
	if h.hooked != "" {
		h.hooked += "; "
	}
	h.hooked += how
}

// newHarness makes a driver with f, maps a guarded region and registers it.
// Cleanup drains the driver; only if the drain returns true does it
// unregister, close the driver and unmap the memory.
func newHarness(t T, f Factory, deadline time.Duration) *Harness {
	t.Helper()
	mem, err := hostmem.NewGuarded("conformance", driver.Layout{SlotBytes: SlotBytes, Slots: Slots})
	if err != nil {
		t.Fatal(err)
	}
	d := driver.Driver(&boundedDriver{d: f(t), t: t, bound: deadline})
	h := &Harness{T: t, Ctx: context.Background(), D: d, Caps: d.Capabilities(), Mem: mem, Deadline: deadline, names: map[string]string{}}
	h.Reg, err = d.Register(mem.Region)
	if err != nil {
		t.Fatalf("Register of a host region: %v", err)
	}
	t.Cleanup(h.cleanup)
	return h
}

func (h *Harness) cleanup() {
	if !h.D.Drain(Within(h.Deadline)) {
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

// secondRegion maps and registers one more host region of one slot, for a
// check whose call spans two regions. Cleanup (before the harness's own)
// drains the driver, then unregisters and unmaps it only if both succeed.
func (h *Harness) secondRegion() (*driver.Region, driver.Registration) {
	h.T.Helper()
	mem, err := hostmem.Map("conformance-second", driver.Layout{SlotBytes: SlotBytes, Slots: 1})
	if err != nil {
		h.T.Fatal(err)
	}
	reg, err := h.D.Register(mem.Region)
	if err != nil {
		_ = mem.Close()
		h.T.Fatalf("Register of a second host region: %v", err)
	}
	h.T.Cleanup(func() {
		if h.D.Drain(Within(h.Deadline)) && h.D.Unregister(reg) == nil {
			_ = mem.Close()
		}
	})
	return mem.Region, reg
}

// Key returns a key unique to this check and name. Failures name the row
// by name, not by its key. Its name part is a digest (rowName), so every
// key the suite makes is short (MaxSuiteKeyBytes) however long the
// check's test name: a store that bounds its keys (memcached's 250 bytes)
// runs every check.
func (h *Harness) Key(name string) string {
	k, err := driver.Key(keyPrefix, rowName(h.T, name))
	if err != nil {
		h.T.Fatal(err)
	}
	h.names[k] = name
	return k
}

// MaxSuiteKeyBytes bounds the keys the suite's checks make (Harness.Key's
// and the tenant check's: a prefix no longer than keyPrefix, "/v1/" and
// rowName in hex), the generated key cases aside: a store whose keys
// cannot be this long cannot run the suite.
const MaxSuiteKeyBytes = len(keyPrefix) + len("/v1/") + 2*rowNameBytes

// keyPrefix is the prefix of Harness.Key's keys, the longest the suite
// uses (the tenant check's are TenantOuter and TenantInner).
const keyPrefix = "conformance"

// rowNameBytes is the length of rowName's digest.
const rowNameBytes = 16

// rowName is the name of the row name makes in t's check: the first
// rowNameBytes of SHA-256 of t's name and name, unique to the two, and
// of one length whatever theirs.
func rowName(t T, name string) []byte {
	sum := sha256.Sum256([]byte(t.Name() + "/" + name))
	return sum[:rowNameBytes]
}

// RowName names the row of key in failures: the name Key made it from,
// quoted, or the key itself when Key did not make it.
func (h *Harness) RowName(key string) string {
	if n, ok := h.names[key]; ok {
		return fmt.Sprintf("row %q", n)
	}
	if key == "" {
		return "the row with an empty key"
	}
	return fmt.Sprintf("row with key %q", key)
}

// Rows names rows in failures: row "a", row "b".
func (h *Harness) Rows(rows []driver.Row) string {
	ns := make([]string, len(rows))
	for i, r := range rows {
		ns[i] = h.RowName(r.Key)
	}
	return strings.Join(ns, ", ")
}

// Span returns the row span of slot i: the slot less a margin on each side.
func (h *Harness) Span(i int) driver.Span {
	return driver.Span{Region: h.Mem.Region, Offset: int64(i)*SlotBytes + margin, Length: RowBytes}
}

// Row returns a one-span row for key in slot i.
func (h *Harness) Row(key string, i int) driver.Row {
	return driver.Row{Key: key, Spans: []driver.Span{h.Span(i)}}
}

// RowOf returns a one-span row for key of n bytes (at most RowBytes) at
// the start of slot i's span.
func (h *Harness) RowOf(key string, i, n int) driver.Row {
	s := h.Span(i)
	s.Length = int64(n)
	return driver.Row{Key: key, Spans: []driver.Span{s}}
}

// Fill writes a pattern derived from seed into s.
func Fill(s driver.Span, seed byte) { fill(s.Bytes(), seed) }

func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = seed ^ byte(i*7) ^ byte(i>>8)
	}
}

// Filled returns n bytes as Fill writes them with seed.
func Filled(n int, seed byte) []byte {
	b := make([]byte, n)
	fill(b, seed)
	return b
}

// CaseSeed seeds the bytes a generated case's put writes, so that a stager
// can place the row's own whole object under the key when a case says it
// exists: Filled(RowBytes, CaseSeed).
const CaseSeed = 0x42

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

// Put submits rows and waits for their results. It fails the check when
// the put is refused or answers other than one valid result per row.
func (h *Harness) Put(rows ...driver.Row) ([]driver.Result, driver.Operation) {
	h.T.Helper()
	what := "put of " + h.Rows(rows)
	op, err := h.D.Put(h.Ctx, rows)
	if err != nil {
		h.T.Fatalf("%s: %s", what, CallError("Put", err))
	}
	return h.Wait(op, what, len(rows)), op
}

// Get opens rows as destinations (see Dest), submits them and waits for
// their results.
func (h *Harness) Get(hint driver.Hint, rows ...driver.Row) ([]driver.Result, driver.Operation) {
	h.T.Helper()
	h.Dest(rows...)
	what := "get of " + h.Rows(rows)
	op, err := h.D.Get(h.Ctx, rows, hint)
	if err != nil {
		h.T.Fatalf("%s: %s", what, CallError("Get", err))
	}
	return h.Wait(op, what, len(rows)), op
}

// CallError says what an error from a Put or Get (call) that the check
// needed admitted means: a refusal names its rule; any other error breaks
// the rule that a store's failure is a row FAULT.
func CallError(call string, err error) string {
	var re *driver.RejectedError
	if errors.As(err, &re) {
		return fmt.Sprintf("%s refused it (rule %s: %s), but the check needs it admitted", call, re.Rule, re.Reason)
	}
	return fmt.Sprintf("%s returned error %q: a store's failure must be a row FAULT, and the only error a call may return is a driver.RejectedError that certifies nothing was recorded", call, err.Error())
}

// Wait polls op, the operation of what ("put of row a"), until it is done,
// and checks it answers one valid result per row.
func (h *Harness) Wait(op driver.Operation, what string, rows int) []driver.Result {
	h.T.Helper()
	res, ok := WaitResults(op, h.Deadline)
	if !ok {
		h.T.Fatalf("%s: test timed out: no results within %v", what, h.Deadline)
	}
	if len(res) != rows {
		h.T.Fatalf("%s: Poll answered %d results for %d rows; the rule is one result per row, in row order", what, len(res), rows)
	}
	for i, r := range res {
		if err := r.Validate(); err != nil {
			h.T.Fatalf("%s: result %d of %d: %v", what, i+1, rows, err)
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

// waitAccessSettled polls op until its access ended or became unprovable,
// or d passes.
func waitAccessSettled(op driver.Operation, d time.Duration) bool {
	_, ok := poll(d, func() (struct{}, bool) { return struct{}{}, op.AccessEnded() || op.AccessUnprovable() })
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

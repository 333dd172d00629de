package mooncake

import (
	"fmt"
	"sync"
	"time"

	gen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/driver"
)

// hold is why the driver holds a key.
type hold uint8

const (
	heldPut  hold = iota + 1 // one of this driver's puts is writing it
	heldOpen                 // its session was left open; drain revokes it
	heldKeep                 // its scatter answered TRANSFER_FAIL: never revoke (the space may still be written)
)

// Driver is a driver.Driver over a Mooncake 0.3.13 SDK client.
//
// Put and Get return only after every SDK call they make has returned, so
// an operation that did not prove its access ended by then never will: it
// is unprovable, keeps its regions from being unregistered and makes Drain
// answer false at once. Shared state sits behind one lock never held across
// an SDK call.
type Driver struct {
	sdk SDK

	regs  driver.Registry // Data: the registered Buffer
	calls driver.Calls

	mu         sync.Mutex
	held       map[string]hold
	inflight   map[*driver.Region]int // regions of calls in progress
	unprovable map[*op]bool
	drained    bool
	closed     bool
}

var _ driver.Driver = (*Driver)(nil)

// New returns a driver over sdk. It refuses an SDK version the repository
// has no spec for, since the code mapping and access-end rules were read
// from those versions alone.
func New(sdk SDK) (*Driver, error) {
	if v := sdk.Version(); !gen.SupportsVersion(v) {
		return nil, fmt.Errorf("mooncake: SDK version %q has no spec; kvblob holds specs for %v (spec/mooncake-*.yaml). Install a supported build, or add a spec for %s and run 'make generate'", v, gen.SDKVersions, v)
	}
	return &Driver{sdk: sdk, held: map[string]hold{}, inflight: map[*driver.Region]int{}, unprovable: map[*op]bool{}}, nil
}

// SDK returns the client the driver calls.
func (d *Driver) SDK() SDK { return d.sdk }

// Capabilities are spec/mooncake-0.3.13.yaml's: absent is MISS, host memory
// only, one span per row.
func (d *Driver) Capabilities() driver.Capabilities { return gen.Capabilities }

func regionBuffer(r *driver.Region) Buffer { return Buffer{Addr: r.Addr, Len: r.Layout.Bytes()} }

func spanBuffer(s driver.Span) Buffer {
	return Buffer{Addr: s.Region.Addr + uintptr(s.Offset), Len: s.Length}
}

// Register registers a host region's memory with the SDK. A device region is
// refused before the SDK is asked. A raise inside the SDK is returned as a
// plain error: the registration may be live.
func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	if err := gen.AdmitRegister(r); err != nil {
		return nil, err
	}
	if r.Addr == 0 {
		return nil, driver.Reject(driver.RuleInvalidSpan, "region %q has no address; the SDK registers memory by address (use runtime/hostmem)", r.Name)
	}
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	if closed {
		return nil, driver.Reject(driver.RuleClosed, "the driver is closed")
	}
	buf := regionBuffer(r)
	code, err := d.sdk.RegisterBuffer(buf)
	if err != nil {
		return nil, fmt.Errorf("mooncake: register_buffer of region %q raised; the registration may be live: %w", r.Name, err)
	}
	if gen.Code(code) != gen.OK {
		return nil, driver.Reject("register_buffer", "register_buffer of region %q answered %s", r.Name, gen.Code(code))
	}
	return d.regs.Add(r, buf), nil
}

// Unregister refuses while a call in progress or an unprovable operation may
// touch the region.
func (d *Driver) Unregister(reg driver.Registration) error {
	g, err := d.regs.Lookup(reg)
	if err != nil {
		return err
	}
	r := g.Region()
	d.mu.Lock()
	if d.inflight[r] > 0 {
		d.mu.Unlock()
		return driver.Reject(driver.RuleAccessOpen, "a call in progress may touch region %q", r.Name)
	}
	for o := range d.unprovable {
		if o.touches(r) {
			d.mu.Unlock()
			return driver.Reject(driver.RuleAccessOpen, "an operation that never proved its access ended may touch region %q", r.Name)
		}
	}
	d.mu.Unlock()
	buf := g.Data.(Buffer)
	code, err := d.sdk.UnregisterBuffer(buf)
	if err != nil || gen.Code(code) != gen.OK {
		return driver.Reject("unregister_buffer", "unregister_buffer of region %q answered %s (%v); it is still registered", r.Name, gen.Code(code), err)
	}
	d.regs.Remove(g)
	return nil
}

// admit runs the generated admission under the lock and, once admitted,
// counts the call as in progress.
func (d *Driver) admit(rows []driver.Row, check func(live func(*driver.Region) bool) error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return driver.Reject(driver.RuleClosed, "the driver is closed")
	}
	if err := check(d.fastLive(rows)); err != nil {
		return err
	}
	d.calls.Enter()
	d.drained = false
	for _, r := range rows {
		d.inflight[r.Spans[0].Region]++
	}
	return nil
}

// fastLive answers liveness for the common case, every row in one region,
// with one lookup.
func (d *Driver) fastLive(rows []driver.Row) func(*driver.Region) bool {
	if len(rows) == 0 || len(rows[0].Spans) == 0 {
		return d.regs.Live
	}
	first := rows[0].Spans[0].Region
	firstLive := d.regs.Live(first)
	return func(r *driver.Region) bool {
		if r == first {
			return firstLive
		}
		return d.regs.Live(r)
	}
}

func (d *Driver) done(rows []driver.Row, o *op) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range rows {
		reg := r.Spans[0].Region
		if d.inflight[reg]--; d.inflight[reg] == 0 {
			delete(d.inflight, reg)
		}
	}
	if o.unprovable {
		d.unprovable[o] = true
	}
	d.calls.Leave()
}

// Drain waits up to timeout for the calls in progress, then revokes the
// sessions left open. It answers false at once while an operation is
// unprovable, and false while a left-open session could not be revoked.
func (d *Driver) Drain(timeout time.Duration) bool {
	if d.anyUnprovable() || !d.calls.Wait(timeout) || d.anyUnprovable() {
		return false
	}
	d.mu.Lock()
	var open []string
	for k, h := range d.held {
		if h == heldOpen {
			open = append(open, k)
		}
	}
	d.mu.Unlock()
	if len(open) > 0 {
		codes, err := d.sdk.BatchPutSessionRevoke(open)
		d.mu.Lock()
		if err == nil && len(codes) == len(open) {
			for i, k := range open {
				if gen.MapBatchPutSessionRevoke(codes[i]).Result.Status == driver.Ready {
					delete(d.held, k)
				}
			}
		}
		d.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, h := range d.held {
		if h == heldOpen {
			return false
		}
	}
	d.drained = d.calls.InProgress() == 0
	return d.drained
}

func (d *Driver) anyUnprovable() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.unprovable) > 0
}

// Close closes the SDK client once a drain returned true and every region
// is unregistered.
func (d *Driver) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	if !d.drained || d.calls.InProgress() > 0 {
		d.mu.Unlock()
		return driver.Reject(driver.RuleAccessOpen, "close needs a drain that returned true first")
	}
	if n := d.regs.Len(); n > 0 {
		d.mu.Unlock()
		return driver.Reject(driver.RuleAccessOpen, "%d regions are still registered; unregister them first", n)
	}
	d.closed = true
	d.mu.Unlock()
	return d.sdk.Close()
}

// Held reports why the driver holds key ("" when it does not): for tests
// and diagnostics.
func (d *Driver) Held(key string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch d.held[key] {
	case heldPut:
		return "put"
	case heldOpen:
		return "open"
	case heldKeep:
		return "keep"
	}
	return ""
}

// op is a finished operation: Put and Get return only after their SDK
// calls returned.
type op struct {
	rows       []driver.Row
	results    []driver.Result
	ended      bool
	unprovable bool
}

func (o *op) Poll() ([]driver.Result, bool) { return append([]driver.Result(nil), o.results...), true }
func (o *op) AccessEnded() bool             { return o.ended }
func (o *op) AccessUnprovable() bool        { return o.unprovable }

// Cancel does nothing: every row started before Put or Get returned.
func (o *op) Cancel() {}

func (o *op) touches(r *driver.Region) bool {
	for _, row := range o.rows {
		if row.Spans[0].Region == r {
			return true
		}
	}
	return false
}

func keysOf(rows []driver.Row, idx []int) []string {
	ks := make([]string, len(idx))
	for k, i := range idx {
		ks[k] = rows[i].Key
	}
	return ks
}

// raised is the fault of a row whose call raised or miscounted.
func raised(call string, err error, got, want int) driver.Result {
	if err != nil {
		return driver.FaultResult(0, "%s raised: %v", call, err)
	}
	return driver.FaultResult(0, "%s answered %d values for %d keys", call, got, want)
}

package mooncake

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/internal/reuse"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/runtime/rules"
)

// hold is why the driver holds a key.
type hold uint8

const (
	heldPut  hold = iota + 1 // one of this driver's puts is writing it
	heldOpen                 // its session was left open; drain revokes it
	heldKeep                 // never revoke or end it: its scatter answered TRANSFER_FAIL (the space may still be written), or another client took it over (ILLEGAL_CLIENT); the client keeps its session until it is torn down
)

// holding is how the driver holds a key, and for heldKeep the answer that
// made it keep the key: a later put of the key that finds no object says
// it, so the caller learns the key is lost to this client, not that
// another writer is still at work.
type holding struct {
	how  hold
	code int64
}

// Driver is a driver.Driver over a Mooncake SDK client, with the rules of
// the spec that holds for the version the client reports.
//
// Put and Get return only after every SDK call they make has returned, so
// an operation that did not prove its access ended by then never will: it
// is unprovable, keeps its regions from being unregistered and makes Drain
// answer false at once. Shared state sits behind one lock never held across
// an SDK call.
type Driver struct {
	sdk SDK
	opt Options
	// spec is the picked spec: its typed Calls map every answer, its
	// Admission admits every row.
	spec *mooncakegen.Spec
	// verified: the spec was verified on the client's build (see
	// Options.AllowUnverified).
	verified bool

	life driverkit.Lifecycle // registration handles: the registered Buffer

	closing   sync.Mutex  // serialises closing the SDK client (held across that call; never with mu)
	sdkClosed atomic.Bool // the SDK client was closed (by a drain's teardown, or Close)

	mu         sync.Mutex
	atTeardown []*op // gets whose access ends when the SDK client is closed
	held       map[string]holding
	spare      reuse.Stack[scratch] // Put's and Get's working space, while no call uses it
}

var _ driver.Driver = (*Driver)(nil)

// SDKName is the SDK a Mooncake client is, as every Mooncake spec names it
// (sdk.name).
const SDKName = "mooncake-store"

// Specs are the specs of every Mooncake version the driver serves
// (spec/mooncake-*.yaml, generated/mooncake), in the order it tries them.
func Specs() []*rules.Spec {
	all := mooncakegen.Specs()
	specs := make([]*rules.Spec, len(all))
	for i, s := range all {
		specs[i] = s.Spec
	}
	return specs
}

// New returns a driver over sdk. It picks the spec that holds for the
// release the SDK reports (rules.Pick) and refuses a release no spec
// holds for, naming the command that starts its spec: the code mapping
// and access-end rules were read from those releases alone. It refuses a
// build whose commit its spec was not verified on (see
// Options.AllowUnverified).
func New(sdk SDK) (*Driver, error) { return NewWith(sdk, Options{}) }

// NewWith is New with options. The object trailer is off by default:
// Mooncake has no authentication, so any peer that reaches it can write any
// key whatever the driver checks, and a get moves the row zero-copy into
// its slot. With Options.Trailer (or Integrity) every object carries the
// trailer (and tag), and a get reads it into memory of the driver's own,
// checks it, and only then copies the payload into the slot: a flipped bit,
// a torn object, another key's object or (keyed) a peer's row without the
// key is a FAULT with the slot untouched, at a cost per row stated in
// docs/security.md.
func NewWith(sdk SDK, opt Options) (*Driver, error) {
	v := sdk.Version()
	spec, err := mooncakegen.Pick(SDKName, v)
	if err != nil {
		return nil, err
	}
	verified, why := spec.Verified(v)
	if !verified && !opt.AllowUnverified {
		return nil, fmt.Errorf("mooncake: %s; refusing an unverified build. Run a verified build, or set Options.AllowUnverified to run it anyway (the gate does, and reports it), and once 'gate --sdk real' passes on it, add its commit to sdk.verified", why)
	}
	if !verified {
		opt.Logger.Warn().Str("sdk", v).Str("spec", spec.Source).Msgf("mooncake: running an unverified SDK build because Options.AllowUnverified is set: %s", why)
	}
	if opt.Integrity.On() {
		opt.Trailer = true
	}
	return &Driver{sdk: sdk, opt: opt, spec: spec, verified: verified, held: map[string]holding{}}, nil
}

// Spec returns the spec the driver picked for its SDK's version.
func (d *Driver) Spec() *rules.Spec { return d.spec.Spec }

// Verified reports whether the spec was verified on the SDK's build.
func (d *Driver) Verified() bool { return d.verified }

// codeName names code as the spec's code table does.
func (d *Driver) codeName(code int64) string { return d.spec.CodeName(code) }

// SDK returns the client the driver calls.
func (d *Driver) SDK() SDK { return d.sdk }

// Capabilities are the picked spec's (spec/mooncake-0.3.13.yaml: absent is
// MISS, host memory only, one span per row).
func (d *Driver) Capabilities() driver.Capabilities { return d.spec.Capabilities }

func regionBuffer(r *driver.Region) Buffer { return Buffer{Addr: r.Addr, Len: r.Layout.Bytes()} }

func spanBuffer(s driver.Span) Buffer {
	return Buffer{Addr: s.Region.Addr + uintptr(s.Offset), Len: s.Length}
}

// Register registers a host region's memory with the SDK. A device region is
// refused before the SDK is asked. A raise inside the SDK is returned as a
// plain error: the registration may be live.
func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	admit := func(r *driver.Region) error {
		if err := d.spec.Admission.Register(r); err != nil {
			return err
		}
		if r.Addr == 0 {
			return driver.Reject(driver.RuleInvalidSpan, "region %q has no address; the SDK registers memory by address (use runtime/hostmem)", r.Name)
		}
		return nil
	}
	return d.life.Register(r, admit, func() (any, error) {
		buf := regionBuffer(r)
		code, err := d.sdk.RegisterBuffer(buf)
		if err != nil {
			return nil, fmt.Errorf("mooncake: register_buffer of region %q raised; the registration may be live: %w", r.Name, err)
		}
		if code != int64(mooncakegen.OK) {
			return nil, driver.Reject("register_buffer", "register_buffer of region %q answered %s", r.Name, d.codeName(code))
		}
		return buf, nil
	})
}

// Unregister refuses while a call in progress or an unprovable operation may
// touch the region.
func (d *Driver) Unregister(reg driver.Registration) error {
	return d.life.Unregister(reg, func(handle any) error {
		buf := handle.(Buffer)
		code, err := d.sdk.UnregisterBuffer(buf)
		if err != nil || code != int64(mooncakegen.OK) {
			return driver.Reject("unregister_buffer", "unregister_buffer of region %q answered %s (%v); it is still registered", reg.Region().Name, d.codeName(code), err)
		}
		return nil
	})
}

// Drain waits for the calls in progress, then revokes the sessions left
// open. It answers false at once while an operation is unprovable, and
// true once no call is in progress otherwise: a session left open is
// metadata only (its scatter's return ended its access, or no scatter was
// posted), so no revoke answer can pin memory. A session whose revoke failed
// (the master down or frozen) stays held, and the next drain tries again;
// the master discards it after put_start_discard_timeout_sec. The SDK's
// calls take no deadline: ctx bounds only the wait for calls in progress.
//
// A get whose transfer failed (TRANSFER_FAIL) keeps access that only the
// client's teardown ends (the spec's ends_at_teardown): Drain does not wait
// for it, and once such gets are all that is left it revokes what it must,
// then tears the SDK client down (Close), which ends their access. The
// driver takes no call after that (RuleClosed): Unregister answers without
// asking the SDK, whose registrations went with its client, and Close
// finishes.
func (d *Driver) Drain(ctx context.Context) bool {
	return d.life.DrainTearingDown(ctx, d.revokeLeftOpen, d.teardown)
}

// teardown closes the SDK client to end the access of the gets that wait
// on it, and then says so on their operations.
func (d *Driver) teardown() error {
	if err := d.closeSDK(); err != nil {
		return err
	}
	d.mu.Lock()
	ops := d.atTeardown
	d.atTeardown = nil
	d.mu.Unlock()
	for _, o := range ops {
		o.ended.Store(true)
		if f := o.notify.Load(); f != nil {
			(*f)() // the observer's signal: no one polls such a get while it waits
		}
	}
	return nil
}

// closeSDK closes the SDK client once.
func (d *Driver) closeSDK() error {
	d.closing.Lock()
	defer d.closing.Unlock()
	if d.sdkClosed.Load() {
		return nil
	}
	if err := d.sdk.Close(); err != nil {
		return err
	}
	d.sdkClosed.Store(true)
	return nil
}

// revokeLeftOpen revokes the sessions this driver left open. It reports
// true: what is left is metadata only.
func (d *Driver) revokeLeftOpen(context.Context) bool {
	if d.sdkClosed.Load() {
		return true // the sessions went with the client
	}
	d.mu.Lock()
	var open []string
	for k, h := range d.held {
		if h.how == heldOpen {
			open = append(open, k)
		}
	}
	d.mu.Unlock()
	if len(open) == 0 {
		return true
	}
	codes, err := d.sdk.BatchPutSessionRevoke(open)
	if err != nil || len(codes) != len(open) {
		return true // still held open: the next drain tries again
	}
	holds := make([]holding, len(open))
	for i := range open {
		holds[i] = d.afterRevoke(codes[i])
	}
	d.endAgain(open, holds)
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, k := range open {
		d.holdLocked(k, holds[i])
	}
	return true
}

// holdLocked records how the driver holds key (not at all for the zero
// holding).
func (d *Driver) holdLocked(key string, h holding) {
	if h.how == 0 {
		delete(d.held, key)
	} else {
		d.held[key] = h
	}
}

// heldEnd marks, between a revoke and endAgain, a key whose revoke said to
// end its session again; it is never stored.
const heldEnd hold = 255

// afterRevoke is how the driver holds a key after its revoke answered code:
// not at all (the zero holding), never to be revoked again (heldKeep, with
// the code), still to be revoked (heldOpen), or to be ended again at once
// (heldEnd, which endAgain settles).
func (d *Driver) afterRevoke(code int64) holding {
	m := d.spec.Calls.BatchPutSessionRevoke.Map(code)
	switch {
	case m.Result.Status == driver.Ready:
		return holding{}
	case m.FollowUp == rules.FollowKeepOpen:
		return holding{heldKeep, code}
	case m.FollowUp == rules.FollowEndAgain:
		return holding{heldEnd, code}
	}
	return holding{how: heldOpen}
}

// endAgain ends once more the sessions whose revoke said an end had been
// applied late (heldEnd): the object is complete, and the client drops its
// session only when an end answers OK. An end that answers otherwise leaves
// the key kept, under the revoke's code.
func (d *Driver) endAgain(keys []string, holds []holding) {
	var again []string
	var at []int
	for i, h := range holds {
		if h.how == heldEnd {
			again, at = append(again, keys[i]), append(at, i)
		}
	}
	if len(again) == 0 {
		return
	}
	codes, err := d.sdk.BatchPutSessionEnd(again)
	for j, i := range at {
		if err == nil && len(codes) == len(again) && d.spec.Calls.BatchPutSessionEnd.Map(codes[j]).Result.Status == driver.Ready {
			holds[i] = holding{}
		} else {
			holds[i].how = heldKeep
		}
	}
}

// Close closes the SDK client once every call ended and every region is
// unregistered (no Drain is needed first), after revoking the sessions
// left open, as Drain does (metadata only: a failed revoke leaves a
// session for the master to discard after put_start_discard_timeout_sec).
func (d *Driver) Close() error {
	return d.life.Close(func() error {
		d.revokeLeftOpen(context.Background())
		err := d.closeSDK()
		d.mu.Lock()
		defer d.mu.Unlock()
		for d.spare.Len() > 0 {
			sc := d.spare.Get()
			// The client is closed: no transfer can reach its buffers.
			for _, st := range []*stage{sc.tailStage, sc.getStage} {
				if st != nil {
					_ = hostmem.Free(st.mem)
				}
			}
		}
		return err
	})
}

// Held reports why the driver holds key ("" when it does not): for tests
// and diagnostics.
func (d *Driver) Held(key string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch d.held[key].how {
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
	results    []driver.Result
	ended      atomic.Bool // set later only by a drain's teardown (atTeardown)
	unprovable bool
	atTeardown bool                   // its access ends when the SDK client is closed
	notify     atomic.Pointer[func()] // the observer's (Notify): called once the teardown ended its access
	one        [1]driver.Result       // a one-row call's result, in the same allocation
}

var (
	_ driver.Notifier      = (*op)(nil)
	_ driver.TeardownEnder = (*op)(nil)
)

// newOp returns an operation with room for the results of n rows.
func newOp(n int, ended bool) *op {
	o := &op{}
	o.ended.Store(ended)
	if n == 1 {
		o.results = o.one[:]
	} else {
		o.results = make([]driver.Result, n)
	}
	return o
}

// Poll hands out the operation's own results, not a copy: they are final
// once Put or Get returned, and the caller never writes them
// (driver.Operation).
func (o *op) Poll() ([]driver.Result, bool) { return o.results, true }
func (o *op) AccessEnded() bool             { return o.ended.Load() }
func (o *op) AccessUnprovable() bool        { return o.unprovable }

// AccessEndsAtTeardown reports a get whose transfer failed while its
// access is still open: only the client's teardown, in a drain that finds
// such gets all that is left, ends it (driver.TeardownEnder).
func (o *op) AccessEndsAtTeardown() bool { return o.atTeardown && !o.ended.Load() }

// Notify takes the observer's signal. The only change after Put or Get
// returned is a teardown ending a get's access (atTeardown), and the
// teardown calls f then: an observer waits on it instead of polling the
// get for as long as the teardown takes to come.
func (o *op) Notify(f func()) { o.notify.Store(&f) }

// Cancel does nothing: every row started before Put or Get returned.
func (o *op) Cancel() {}

// raised is the fault of a row whose call raised or miscounted.
func raised(call string, err error, got, want int) driver.Result {
	if err != nil {
		return driver.FaultResult(0, "%s raised: %v", call, err)
	}
	return driver.FaultResult(0, "%s answered %d values for %d keys", call, got, want)
}

// settle ends the call of a finished operation: its access ended on return,
// or it never will.
func (o *op) settle(call *driverkit.Call) {
	switch {
	case o.unprovable:
		call.Unprovable()
	case o.atTeardown:
		call.EndsAtTeardown()
	default:
		call.End()
	}
}

package mooncake

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
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
	// overhead is the bytes each object carries past its row
	// (objectOverhead).
	overhead int64

	life driverkit.Lifecycle // registration handles: the registered Buffer

	closing   sync.Mutex  // serialises closing the SDK client (held across that call; never with mu)
	sdkClosed atomic.Bool // the SDK client was closed (by a drain's teardown, or Close)

	mu         sync.Mutex
	atTeardown []*op // gets whose access ends when the SDK client is closed
	held       map[string]holding
	spare      driverkit.Stack[scratch] // Put's and Get's working space, while no call uses it
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
	return &Driver{sdk: sdk, opt: opt, spec: spec, verified: verified, overhead: objectOverhead(opt), held: map[string]holding{}}, nil
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

// scratch is one Put's or Get's working space: the rows of each stage, the
// keys, sizes and buffers it hands the SDK. It is the driver's spare while
// no call uses it, so a call allocates what it returns (the operation) and
// little else. The SDK keeps none of it past its call (SDK).
type scratch struct {
	start, held, kept, scatter, toEnd, toRevoke, endRevoke, ask []int     // a put's rows, by stage
	holds                                                       []holding // a put's revoked rows' holdings
	all                                                         []int     // a get's
	keys                                                        []string
	sizes                                                       []int64
	flat                                                        []Buffer   // a scatter's buffers, back to back
	bufs                                                        [][]Buffer // a scatter's buffers, per row
	into                                                        []Buffer   // a get's buffers
	// With the object trailer on: the tags and trailers a put scatters,
	// and the memory a get reads objects into (see stage).
	tailStage, getStage *stage
}

// takeScratch takes a spare scratch, or a new one.
func (d *Driver) takeScratch() *scratch {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.spare.Get()
}

// release gives sc back to the driver's spares, holding no key.
func (d *Driver) release(sc *scratch) {
	clear(sc.keys[:cap(sc.keys)])
	d.mu.Lock()
	d.spare.Put(sc)
	d.mu.Unlock()
}

// keysOf are rows idx's keys, in sc's space: good until the next keysOf.
func (sc *scratch) keysOf(rows []driver.Row, idx []int) []string {
	ks := driverkit.Resize(sc.keys, len(idx))
	for k, i := range idx {
		ks[k] = rows[i].Key
	}
	sc.keys = ks
	return ks
}

// put is one Put in progress.
type put struct {
	d      *Driver
	rows   []driver.Row
	o      *op
	sc     *scratch
	exists map[int]rules.Mapping // rows whose result waits on batch_is_exist; nil for none
}

// Put starts a session per key, writes the started rows in one scatter,
// ends the sessions of rows written whole and revokes the rest, then asks
// batch_is_exist about the rows whose result waits on it. Each step returns
// the rows the next one takes.
//
// A key this driver's own put is writing is NOT_READY at once; a key whose
// session it left open is READY when batch_is_exist shows its object
// complete, NOT_READY otherwise. It never starts a session for a key it
// holds. With the trailer on, a row READY because its key's object is
// complete is read back first, and is READY only if that object is the
// row's own (confirm).
func (d *Driver) Put(_ context.Context, rows []driver.Row) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return d.spec.Admission.Put(rows, live) })
	if err != nil {
		return nil, err
	}
	o := newOp(len(rows), true)
	defer o.settle(call)
	p := put{d: d, rows: rows, o: o, sc: d.takeScratch()}
	defer d.release(p.sc)

	start := p.claimKeys()
	toScatter, toRevoke := p.startSessions(start)
	if len(toScatter) > 0 {
		var toEnd []int
		toEnd, toRevoke = p.scatter(toScatter)
		toRevoke = append(toRevoke, p.endSessions(toEnd)...)
		p.sc.toRevoke = toRevoke
	}
	p.revoke(toRevoke)
	p.askExistence()
	return o, nil
}

// claimKeys holds for this put the key of every row the driver does not
// hold already, and returns those rows, to start. A row whose key it holds
// gets no session: NOT_READY when its own put is writing the key; a wait
// on batch_is_exist when it left the key's session open, or keeps it.
func (p *put) claimKeys() (start []int) {
	d := p.d
	start, askHeld, askKept := p.sc.start[:0], p.sc.held[:0], p.sc.kept[:0]
	var keptCode []int64 // the code each kept key was kept under, by askKept's order
	d.mu.Lock()
	for i, r := range p.rows {
		switch h := d.held[r.Key]; h.how {
		case heldPut:
			p.o.results[i] = driver.Result{Status: driver.NotReady}
		case heldOpen:
			askHeld = append(askHeld, i)
		case heldKeep:
			askKept, keptCode = append(askKept, i), append(keptCode, h.code)
		default:
			d.held[r.Key] = holding{how: heldPut}
			start = append(start, i)
		}
	}
	d.mu.Unlock()
	p.sc.start, p.sc.held, p.sc.kept = start, askHeld, askKept

	for _, i := range askHeld {
		p.waitExistence(i, rules.Mapping{Result: driver.FaultResult(0, "batch_is_exist failed for a key whose session this driver left open"),
			FollowUp: rules.FollowAskExistence, IfExists: driver.Ready, IfAbsent: driver.NotReady})
	}
	for k, i := range askKept {
		// The client keeps a session for the key that nothing may end or
		// revoke, and refuses a new start of it until it is torn down: a
		// stored object (another writer's) is READY; otherwise the key is
		// lost to this client, which is no writer still at work.
		why := "after " + d.codeName(keptCode[k])
		if keptCode[k] == 0 {
			why = "after a scatter that raised"
		}
		lost := driver.FaultResult(keptCode[k], "the key is lost to this client: its SDK client keeps a session for it that nothing may end or revoke (%s), and refuses to start it again until the client is torn down; reopen the driver over a new client to write it", why)
		p.waitExistence(i, rules.Mapping{Result: lost, FollowUp: rules.FollowAskExistence, IfExists: driver.Ready, IfAbsent: driver.Fault})
	}
	return start
}

// waitExistence makes row i's result wait on batch_is_exist, mapped by m.
func (p *put) waitExistence(i int, m rules.Mapping) {
	if p.exists == nil {
		p.exists = map[int]rules.Mapping{}
	}
	p.exists[i] = m
}

// set settles how the driver holds row i's key.
func (p *put) set(i int, h hold) { p.setHolding(i, holding{how: h}) }

// keep holds row i's key for good, kept under code.
func (p *put) keep(i int, code int64) { p.setHolding(i, holding{heldKeep, code}) }

func (p *put) setHolding(i int, h holding) {
	p.d.mu.Lock()
	p.d.holdLocked(p.rows[i].Key, h)
	p.d.mu.Unlock()
}

// startSessions starts a session per key; it returns the rows to scatter,
// or, when the call raised or miscounted, every row, to revoke.
func (p *put) startSessions(start []int) (toScatter, toRevoke []int) {
	if len(start) == 0 {
		return nil, nil
	}
	rows, o := p.rows, p.o
	sizes := driverkit.Resize(p.sc.sizes, len(start))
	p.sc.sizes = sizes
	ov := p.d.overhead
	for k, i := range start {
		sizes[k] = rows[i].Bytes() + ov
	}
	codes, err := p.d.sdk.BatchPutSessionStart(p.sc.keysOf(rows, start), sizes)
	if err != nil || len(codes) != len(start) {
		// Which sessions started is unknown. Nothing was written into any,
		// so revoke them all at once: a key whose revoke answers is free
		// again (a failed put leaves its key writable); one whose revoke
		// fails too is left for drain.
		for _, i := range start {
			o.results[i] = raised("batch_put_session_start", err, len(codes), len(start))
		}
		return nil, start
	}
	scatter := p.sc.scatter[:0]
	for k, i := range start {
		m := p.d.spec.Calls.BatchPutSessionStart.Map(codes[k])
		switch {
		case m.Continue:
			scatter = append(scatter, i)
			continue
		case m.FollowUp == rules.FollowAskExistence:
			p.waitExistence(i, m)
		default:
			o.results[i] = m.Result
		}
		p.set(i, 0) // no session of ours was started
	}
	p.sc.scatter = scatter
	return scatter, nil
}

// scatter writes every started row in one call; it returns the rows
// written whole, to end, and the rest whose session is to be revoked. Its
// return ends its access whatever it answers; a raise or a wrong count
// leaves access unproven.
func (p *put) scatter(idx []int) (toEnd, toRevoke []int) {
	if len(idx) == 0 {
		return nil, nil
	}
	rows, o := p.rows, p.o
	var tails []Buffer // each row's tag and trailer, with the trailer on
	if p.d.opt.Trailer {
		var err error
		if tails, err = p.d.tails(p.sc, rows, idx); err != nil {
			for _, i := range idx {
				o.results[i] = driver.FaultResult(0, "mooncake: no memory for the rows' trailers: %v", err)
			}
			return nil, append(p.sc.toRevoke[:0], idx...) // not idx itself: p.sc.scatter's
		}
	}
	n := len(tails)
	for _, i := range idx {
		n += len(rows[i].Spans)
	}
	flat := driverkit.Resize(p.sc.flat, n)[:0] // every row's buffers in one array
	bufs := driverkit.Resize(p.sc.bufs, len(idx))
	for k, i := range idx {
		at := len(flat)
		for _, s := range rows[i].Spans {
			flat = append(flat, spanBuffer(s))
		}
		if tails != nil {
			flat = append(flat, tails[k])
		}
		bufs[k] = flat[at:len(flat):len(flat)]
	}
	p.sc.flat, p.sc.bufs = flat, bufs
	answers, err := p.d.sdk.BatchPutFromMultiBufferRanges(p.sc.keysOf(rows, idx), bufs)
	if err != nil || len(answers) != len(idx) {
		for _, i := range idx {
			o.results[i] = raised("batch_put_from_multi_buffer_ranges", err, len(answers), len(idx))
			// The scatter may still be writing, as after TRANSFER_FAIL: never
			// revoke (a drain's sweep could run beside this call and free
			// space a stale transfer then lands in).
			p.keep(i, 0)
		}
		p.sc.tailStage = nil // the scatter may still read it: never reused
		o.ended.Store(false)
		o.unprovable = true
		return nil, nil
	}
	kept := false
	toEnd, toRevoke = p.sc.toEnd[:0], p.sc.toRevoke[:0]
	for k, i := range idx {
		m := p.d.spec.Calls.BatchPutFromMultiBufferRanges.Map(answers[k], rows[i].Bytes()+p.d.overhead)
		kept = kept || m.KeepsAccess
		switch {
		case m.Continue:
			toEnd = append(toEnd, i)
		case m.FollowUp == rules.FollowKeepOpen:
			o.results[i] = m.Result
			p.keep(i, answers[k])
		default:
			o.results[i] = m.Result
			toRevoke = append(toRevoke, i)
		}
	}
	p.sc.toEnd, p.sc.toRevoke = toEnd, toRevoke
	if kept {
		p.sc.tailStage = nil // a transfer may still read it: never reused
	}
	if !p.d.spec.Calls.BatchPutFromMultiBufferRanges.Access().Ended(kept) {
		o.ended.Store(false)
		o.unprovable = true
	}
	return toEnd, toRevoke
}

// endSessions marks rows written whole complete; it returns the rows whose
// end failed in a way that needs a revoke.
func (p *put) endSessions(idx []int) (toRevoke []int) {
	if len(idx) == 0 {
		return nil
	}
	rows, o := p.rows, p.o
	codes, err := p.d.sdk.BatchPutSessionEnd(p.sc.keysOf(rows, idx))
	if err != nil || len(codes) != len(idx) {
		for _, i := range idx {
			o.results[i] = raised("batch_put_session_end", err, len(codes), len(idx))
			p.set(i, heldOpen)
		}
		return nil
	}
	toRevoke = p.sc.endRevoke[:0]
	for k, i := range idx {
		m := p.d.spec.Calls.BatchPutSessionEnd.Map(codes[k])
		o.results[i] = m.Result
		switch {
		case m.Result.Status == driver.Ready:
			p.set(i, 0)
		case m.FollowUp == rules.FollowRevokeInDrain:
			p.set(i, heldOpen) // an unanswered end may still complete
		default:
			toRevoke = append(toRevoke, i)
		}
	}
	p.sc.endRevoke = toRevoke
	return toRevoke
}

// revoke revokes the sessions of rows not written whole; a session whose
// revoke fails is left open for drain, and one whose revoke answered that it
// outlives any revoke is kept (afterRevoke).
func (p *put) revoke(idx []int) {
	if len(idx) == 0 {
		return
	}
	keys := p.sc.keysOf(p.rows, idx)
	codes, err := p.d.sdk.BatchPutSessionRevoke(keys)
	if err != nil || len(codes) != len(idx) {
		for _, i := range idx {
			p.set(i, heldOpen)
		}
		return
	}
	holds := driverkit.Resize(p.sc.holds, len(idx))
	p.sc.holds = holds
	again := false
	for k := range idx {
		holds[k] = p.d.afterRevoke(codes[k])
		again = again || holds[k].how == heldEnd
	}
	if again {
		p.d.endAgain(keys, holds)
	}
	for k, i := range idx {
		p.setHolding(i, holds[k])
	}
}

// askExistence settles the rows that wait on batch_is_exist.
func (p *put) askExistence() {
	if len(p.exists) == 0 {
		return
	}
	rows, o, exists := p.rows, p.o, p.exists
	idx := p.sc.ask[:0]
	for i := range rows {
		if _, ok := exists[i]; ok {
			idx = append(idx, i)
		}
	}
	p.sc.ask = idx
	answers, err := p.d.sdk.BatchIsExist(p.sc.keysOf(rows, idx))
	var confirm []int // rows READY by presence alone, to read back (the trailer on)
	for k, i := range idx {
		m := exists[i]
		switch {
		case err != nil || len(answers) != len(idx) || answers[k] < 0:
			o.results[i] = m.Result
		case answers[k] == 1:
			o.results[i] = existence(m, m.IfExists)
			if p.d.opt.Trailer && o.results[i].Status == driver.Ready {
				confirm = append(confirm, i) // a rare path: the list is the call's own
			}
		default:
			o.results[i] = existence(m, m.IfAbsent)
		}
	}
	p.confirm(confirm)
}

// confirm reads back, with the trailer on, the object of each row that
// batch_is_exist found complete, and leaves READY only a row whose object
// is its own: an object whose trailer (or, keyed, tag) fails under the
// row's key, or whose payload is not the row's bytes, is a FAULT. The
// pool never overwrites an object, so READY over another (a peer's, or a
// row of another length) would promise a row no get reads back. It reads
// into the driver's own stage, never the row's slot, which a put only
// reads.
func (p *put) confirm(idx []int) {
	if len(idx) == 0 {
		return
	}
	d, rows, o, sc := p.d, p.rows, p.o, p.sc
	bufs := driverkit.Resize(sc.into, len(idx))
	sc.into = bufs
	offs, err := d.stageObjects(sc, rows, idx, bufs)
	if err != nil {
		for _, i := range idx {
			o.results[i] = driver.FaultResult(0, "mooncake: no memory to read back the object the key holds: %v", err)
		}
		return
	}
	stage := sc.getStage
	answers, err := d.sdk.BatchGetInto(sc.keysOf(rows, idx), bufs)
	if err != nil || len(answers) != len(idx) {
		for _, i := range idx {
			o.results[i] = raised("batch_get_into, reading back the object the key holds,", err, len(answers), len(idx))
		}
		sc.getStage = nil // the SDK may still write it: never reused
		return
	}
	for k, i := range idx {
		row := rows[i]
		if answers[k] < 0 {
			if d.spec.Calls.BatchGetInto.Map(answers[k], row.Bytes()).KeepsAccess {
				sc.getStage = nil // a transfer may still write it: never reused (its other rows' objects are read below)
			}
			o.results[i] = driver.FaultResult(answers[k], "mooncake: the key holds a complete object, but reading it back to check it answered %s", d.codeName(answers[k]))
			continue
		}
		staged := stage.mem[offs[k]:offs[k+1]]
		payload, err := d.opt.Integrity.Check(staged[:min(answers[k], int64(len(staged)))], row.Key)
		switch {
		case err != nil:
			o.results[i] = driver.FaultResult(0, "mooncake: the key holds an object that is no row for it (%v), and the pool never overwrites one: the row cannot be stored under the key until that object is removed", err)
		case !bytes.Equal(payload, row.Spans[0].Bytes()):
			o.results[i] = driver.FaultResult(0, "mooncake: the key holds another %d-byte row's object, not this row's %d bytes, and the pool never overwrites one", len(payload), row.Bytes())
		}
	}
}

// existence is a row's result once batch_is_exist answered: status, or,
// when that is FAULT, the mapping's own fault (its code and reason: every
// mapping a row waits with is a FAULT that says why, the spec's as
// rules.CallRule.Map makes it and the driver's own).
func existence(m rules.Mapping, status driver.Status) driver.Result {
	if status == driver.Fault {
		return m.Result
	}
	return driver.Result{Status: status}
}

// Get reads each row's object into its span with one batch_get_into, and
// rereads once the rows whose read lease expired. Access ends only when no

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

// row's answer keeps it (TRANSFER_FAIL).
func (d *Driver) Get(_ context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return d.spec.Admission.Get(rows, hint, live) })
	if err != nil {
		return nil, err
	}
	o := newOp(len(rows), false)
	defer o.settle(call)
	sc := d.takeScratch()
	defer d.release(sc)
	all := driverkit.Resize(sc.all, len(rows))
	sc.all = all
	for i := range all {
		all[i] = i
	}
	kept, ok, reread := d.getInto(rows, all, o, false, sc)
	if ok && len(reread) > 0 {
		var k keeps
		k, ok, _ = d.getInto(rows, reread, o, true, sc)
		kept = kept.or(k)
	}
	switch {
	case ok && d.spec.Calls.BatchGetInto.Access().Ended(kept.any()):
		o.ended.Store(true)
	case ok && !kept.untilOther:
		// Every kept transfer ends when the client is torn down: a drain
		// whose only leftovers are such gets does so (Drain).
		o.atTeardown = true
		d.mu.Lock()
		d.atTeardown = append(d.atTeardown, o)
		d.mu.Unlock()
	default:
		o.unprovable = true
	}
	return o, nil
}

// keeps is what a get's answers say about its access: some answer keeps it
// until the client is torn down (ends_at_teardown), or until nothing the
// driver can do (any other kept access).
type keeps struct{ untilTeardown, untilOther bool }

func (k keeps) any() bool { return k.untilTeardown || k.untilOther }
func (k keeps) or(o keeps) keeps {
	return keeps{k.untilTeardown || o.untilTeardown, k.untilOther || o.untilOther}
}
func (k *keeps) add(m rules.Mapping) {
	switch {
	case !m.KeepsAccess:
	case m.FollowUp == rules.FollowEndsAtTeardown:
		k.untilTeardown = true
	default:
		k.untilOther = true
	}
}

// stageObjects lays the objects of rows idx out back to back in sc's get
// stage, each with room for the most a trailer and tag add (stageMax),
// and points bufs[k] at the k-th: it returns where each lies (offs[k] to
// offs[k+1]), or an error with nothing staged.
func (d *Driver) stageObjects(sc *scratch, rows []driver.Row, idx []int, bufs []Buffer) (offs []int64, err error) {
	offs = make([]int64, len(idx)+1)
	for k, i := range idx {
		offs[k+1] = offs[k] + rows[i].Bytes() + stageMax
	}
	if err := d.room(&sc.getStage, offs[len(idx)]); err != nil {
		return nil, err
	}
	for k := range idx {
		bufs[k] = sc.getStage.at(offs[k], offs[k+1]-offs[k])
	}
	return offs, nil
}

// getInto runs one batch_get_into over rows idx and maps the answers. It
// reports whether an answer kept access, whether the call answered at all
// (no raise, right count), and, unless rereading, the rows to reread.
func (d *Driver) getInto(rows []driver.Row, idx []int, o *op, rereading bool, sc *scratch) (kept keeps, ok bool, reread []int) {
	bufs := driverkit.Resize(sc.into, len(idx))
	sc.into = bufs
	var offs []int64 // with the trailer on: where each row's object is staged
	if d.opt.Trailer {
		var err error
		if offs, err = d.stageObjects(sc, rows, idx, bufs); err != nil {
			for _, i := range idx {
				o.results[i] = driver.FaultResult(0, "mooncake: no memory to stage the rows' objects in: %v", err)
			}
			return keeps{}, true, nil
		}
	} else {
		for k, i := range idx {
			bufs[k] = spanBuffer(rows[i].Spans[0])
		}
	}
	answers, err := d.sdk.BatchGetInto(sc.keysOf(rows, idx), bufs)
	if err != nil || len(answers) != len(idx) {
		for _, i := range idx {
			o.results[i] = raised("batch_get_into", err, len(answers), len(idx))
		}
		sc.getStage = nil // the SDK may still write it: never reused
		return keeps{}, false, nil
	}
	var unverified map[int]error // rows whose object failed its trailer check
	if offs != nil {
		for k, i := range idx {
			a, err := d.unstage(rows[i], answers[k], sc.getStage.mem[offs[k]:offs[k+1]])
			answers[k] = a
			if err != nil {
				if unverified == nil {
					unverified = map[int]error{}
				}
				unverified[i] = err
			}
		}
	}
	if !rereading && allWhole(answers, rows, idx) { // the common case, batch-wise
		for _, i := range idx {
			o.results[i] = driver.Result{Status: driver.Ready}
		}
		return keeps{}, true, nil
	}
	for k, i := range idx {
		m := d.spec.Calls.BatchGetInto.Map(answers[k], rows[i].Bytes())
		if rereading {
			m = rules.AfterReread(m)
		}
		kept.add(m)
		o.results[i] = m.Result
		if err, bad := unverified[i]; bad {
			o.results[i] = driver.FaultResult(0, "mooncake: the object under the key is no whole row for it (%v); the slot is untouched", err)
			continue
		}
		if !rereading && m.FollowUp == rules.FollowRereadOnce {
			reread = append(reread, i) // a lease expired mid-transfer: rare, so the list is the call's own
		}
	}
	if kept.any() {
		sc.getStage = nil // a transfer may still write it: never reused
	}
	return kept, true, reread
}

func allWhole(answers []int64, rows []driver.Row, idx []int) bool {
	for k, i := range idx {
		if answers[k] != rows[i].Spans[0].Length {
			return false
		}
	}
	return true
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

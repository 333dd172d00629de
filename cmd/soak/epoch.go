package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
	"github.com/kvblob/kvblob/stores/trailer"
)

const (
	slotBytes = 4096
	margin    = 64
	slots     = 48
	names     = 64
	prefix    = "soak"
	// shutdownSlack is how far past its budget Shutdown may return on a
	// loaded two-core machine before it counts as a violation.
	shutdownSlack = time.Second
)

// content is what every row named n holds, so any READY row can be checked
// wherever it came from.
func content(n int, b []byte) {
	for j := range b {
		b[j] = byte(n*37 + j*11 + j>>7)
	}
}

func nameOf(n int) []byte { return []byte(fmt.Sprintf("n%02d", n)) }

// epoch is one backend over one chaotic driver and one guarded region.
type epoch struct {
	store   string
	rng     *rand.Rand
	t       *tally
	mem     *hostmem.Guarded
	chk     *checker
	hold    *checkHold
	be      *backend.Backend
	wake    chan struct{}
	free    []int
	open    []*attempt
	master  *fakesdk.Master
	client  *fakesdk.Client // mooncake: what the SDK holds registered
	sdk     *chaosSDK
	mstore  *memory.Store
	chaosMC *chaosMemory
	stem    driver.Stem
}

type attempt struct {
	a       attemptAPI
	fetch   bool
	slots   []int
	names   []int
	counted bool
}

// attemptAPI is what the soak uses of a *backend.Attempt (a fake in the
// tests that prove the checks bite).
type attemptAPI interface {
	Poll() (backend.Outcome, bool)
	Quiesced() <-chan struct{}
	Cancel()
}

// quiesced asks, without waiting, whether a quiesced.
func quiesced(a attemptAPI) bool {
	select {
	case <-a.Quiesced():
		return true
	default:
		return false
	}
}

func span(r *driver.Region, i int) driver.Span {
	return driver.Span{Region: r, Offset: int64(i)*slotBytes + margin, Length: slotBytes - 2*margin}
}

func newEpoch(store string, rng *rand.Rand, t *tally) (*epoch, error) {
	// A register the chaos SDK failed fails Bind: that epoch never starts.
	// Its memory goes back only if the SDK holds none of it (a register
	// that raised after taking effect keeps it mapped for good), and
	// Bind's error may be a rejection only if the SDK holds none of it.
	for {
		e, err := tryEpoch(store, rng, t)
		if err == nil || e == nil || e.sdk == nil || e.sdk.registerFaults.Load() == 0 {
			return e, err
		}
		var rej *driver.RejectedError
		held := !e.client.Closed() && len(e.client.Registered()) > 0
		if held && errors.As(err, &rej) {
			t.violation("%s: Bind reported a rejection (%v) while the SDK holds the region registered", store, err)
		}
		if !held {
			_ = e.mem.Close()
		}
		t.fault("bind_failed")
	}
}

// tryEpoch sets up an epoch; when Bind fails it returns the epoch as far
// as it got with the error.
func tryEpoch(store string, rng *rand.Rand, t *tally) (*epoch, error) {
	mem, err := hostmem.NewGuarded("soak", driver.Layout{SlotBytes: slotBytes, Slots: slots})
	if err != nil {
		return nil, err
	}
	for i := 0; i < slots; i++ {
		mem.Open(span(mem.Region, i)) // the store may write spans; margins stay canaries
	}
	e := &epoch{store: store, rng: rng, t: t, mem: mem, wake: make(chan struct{}, 1)}
	e.stem, _ = driver.KeyStem(prefix)
	d := &dice{rng: rand.New(rand.NewSource(rng.Int63()))}
	var inner driver.Driver
	switch store {
	case "mooncake":
		e.master = fakesdk.NewMaster(0)
		if rng.Intn(4) == 0 {
			e.master.SetCapacity(int64(8+rng.Intn(32)) * slotBytes) // a pool that fills up
		}
		e.client = fakesdk.NewClient(e.master, fakesdk.Version)
		e.sdk = &chaosSDK{inner: e.client, m: e.master, d: d, t: t}
		md, err := mooncake.New(e.sdk)
		if err != nil {
			return nil, err
		}
		inner = md
	case "memory":
		e.mstore = memory.NewStore(0)
		e.chaosMC = &chaosMemory{Driver: memory.New(memory.Options{Mode: memory.Background, Store: e.mstore}), d: d, t: t}
		inner = e.chaosMC
	default:
		return nil, fmt.Errorf("unknown store %q; want mooncake or memory", store)
	}
	e.chk = &checker{Driver: inner, t: t}
	e.hold = &checkHold{chk: e.chk}
	bind, err := backend.Bind(context.Background(), []*driver.Region{mem.Region}, e.chk, e.hold)
	if err != nil {
		return e, err
	}
	// The soak drives every attempt from one loop, as a runtime with an
	// event loop of its own does: Config.Wake nudges it.
	e.be, err = backend.New(bind, backend.Config{Workers: 1 + rng.Intn(3), RowsPerBatch: 1 + rng.Intn(4), Prefix: prefix,
		Wake: func() {
			select {
			case e.wake <- struct{}{}:
			default:
			}
		}})
	if err != nil {
		return nil, err
	}
	for i := 0; i < slots; i++ {
		e.free = append(e.free, i)
	}
	return e, nil
}

func (e *epoch) key(n int) string {
	k, _ := e.stem.Key(nameOf(n))
	return k
}

// run submits up to a random number of attempts (at most left, when left
// is positive), cancels some, and shuts down at a random point.
func (e *epoch) run(deadline time.Time, left int, rep *Report) {
	n := 10 + e.rng.Intn(60)
	if left > 0 && left < n {
		n = left
	}
	progress := time.Now()
	for submitted := 0; submitted < n && time.Now().Before(deadline); {
		if e.reap(rep) {
			progress = time.Now()
		}
		e.checkGuard("step")
		e.maybeCancel()
		k := 1 + e.rng.Intn(6)
		if len(e.free) < k {
			if time.Since(progress) > 100*time.Millisecond {
				break // the slots left are pinned by attempts that will never quiesce
			}
			e.waitForWork()
			continue
		}
		err := e.submit(k, e.rng.Intn(2) == 0)
		var rej *backend.SubmissionRejectedError
		if errors.As(err, &rej) {
			break // the driver broke its protocol: this backend takes no more work
		}
		if err != nil {
			e.t.violation("%s: a valid view was refused: %v", e.store, err)
			break
		}
		submitted++
		rep.Attempts++
		progress = time.Now()
	}
	if e.rng.Intn(2) == 0 { // sometimes let the work settle, sometimes shut down mid-flight
		until := time.Now().Add(50 * time.Millisecond)
		for len(e.open) > 0 && time.Now().Before(until) {
			e.reap(rep)
			e.waitForWork()
		}
	}
	e.shutdown(rep)
}

// cancelRate is how often a step of an epoch cancels an open attempt:
// rarely, so that most attempts run to their end and their READY rows
// are checked, yet every epoch of some length sees a cancel.
const cancelRate = 0.08

// maybeCancel cancels one open attempt, picked at random, with
// probability cancelRate (one draw, and none while no attempt is open).
func (e *epoch) maybeCancel() {
	if len(e.open) > 0 && e.rng.Float64() < cancelRate {
		e.t.fault("cancel")
		e.open[e.rng.Intn(len(e.open))].a.Cancel()
	}
}

func (e *epoch) waitForWork() {
	select {
	case <-e.wake:
	case <-time.After(5 * time.Millisecond): // a runtime's poll tick
	}
}

func (e *epoch) submit(k int, fetch bool) error {
	at := &attempt{fetch: fetch}
	var view backend.View
	perm := e.rng.Perm(names)[:k]
	for i := 0; i < k; i++ {
		slot := e.free[len(e.free)-1]
		e.free = e.free[:len(e.free)-1]
		s := span(e.mem.Region, slot)
		if !fetch {
			content(perm[i], s.Bytes())
		}
		at.slots = append(at.slots, slot)
		at.names = append(at.names, perm[i])
		view = append(view, backend.ViewRow{Name: nameOf(perm[i]), Spans: []driver.Span{s}})
	}
	var err error
	var a *backend.Attempt
	if fetch {
		a, err = e.be.Fetch(context.Background(), view)
	} else {
		a, err = e.be.Publish(context.Background(), view)
	}
	at.a = a
	if err != nil {
		e.free = append(e.free, at.slots...)
		return err
	}
	e.open = append(e.open, at)
	return nil
}

// reap checks every attempt that quiesced and gives its slots back, and
// reports whether any did. An attempt that never quiesces keeps its slots
// for good.
func (e *epoch) reap(rep *Report) bool {
	reaped := false
	keep := e.open[:0]
	for _, at := range e.open {
		o, done := at.a.Poll()
		if done && !at.counted {
			at.counted = true
			for _, d := range o.Delivered {
				if d {
					rep.RowsReady++
				}
			}
			e.checkFinal(o)
		}
		if !done || !quiesced(at.a) {
			keep = append(keep, at)
			continue
		}
		e.checkQuiesced(at)
		for i, r := range o.Results {
			if r.Status != driver.Ready {
				continue
			}
			if e.checkRow(at, i, "") {
				rep.RowsGone++
				continue
			}
			rep.RowsChecked++
		}
		e.free = append(e.free, at.slots...)
		reaped = true
	}
	e.open = keep
	return reaped
}

// checkFinal: a finished outcome holds no PENDING row.
func (e *epoch) checkFinal(o backend.Outcome) {
	for i, r := range o.Results {
		if r.Status == driver.Pending {
			e.t.violation("%s: a finished outcome still holds a PENDING row (row %d of %d)", e.store, i, len(o.Results))
			return
		}
	}
}

// checkQuiesced: no operation may still touch the slots of an attempt
// that says it quiesced (the soak is about to reuse them).
func (e *epoch) checkQuiesced(at *attempt) {
	for _, slot := range at.slots {
		if e.chk.touches(span(e.mem.Region, slot)) {
			e.t.violation("%s: an attempt quiesced while an operation may still touch its slot %d", e.store, slot)
			return
		}
	}
}

// checkUnquiesced checks, once nothing runs any more, the READY rows of the
// attempts that never quiesced (their memory stays mapped).
func (e *epoch) checkUnquiesced(rep *Report) {
	for _, at := range e.open {
		o, done := at.a.Poll()
		if !done {
			continue
		}
		e.checkFinal(o)
		for i, r := range o.Results {
			if r.Status != driver.Ready {
				continue
			}
			if e.checkRow(at, i, " at the end of its epoch") {
				rep.RowsGone++
				continue
			}
			rep.RowsCheckedUnquiesced++
		}
	}
}

// object is the payload the store holds for name n (nil: none).
func (e *epoch) object(n int) []byte {
	if e.master != nil {
		got, _ := e.master.Object(e.key(n))
		return got
	}
	obj, ok := e.mstore.Object(e.key(n))
	if !ok {
		return nil
	}
	got, _ := trailer.Check(obj, e.key(n))
	return got
}

// checkRow checks READY row i of at byte for byte. It reports gone, and
// checks nothing, for a published row whose object the store no longer
// holds (evicted or expired since: a store may drop an object).
func (e *epoch) checkRow(at *attempt, i int, when string) (gone bool) {
	want := make([]byte, slotBytes-2*margin)
	content(at.names[i], want)
	var got []byte
	if at.fetch {
		got = span(e.mem.Region, at.slots[i]).Bytes()
	} else if got = e.object(at.names[i]); got == nil {
		return true
	}
	if !bytes.Equal(got, want) {
		what := "published object"
		if at.fetch {
			what = "fetched slot"
		}
		diff := 0
		for diff < len(got) && diff < len(want) && got[diff] == want[diff] {
			diff++
		}
		e.t.violation("%s: READY row %q does not read back byte for byte (%s)%s: %d bytes, want %d, first difference at %d",
			e.store, nameOf(at.names[i]), what, when, len(got), len(want), diff)
	}
	return false
}

func (e *epoch) checkGuard(when string) {
	if err := e.mem.Check(); err != nil {
		e.t.violation("%s (%s): %v", e.store, when, err)
	}
}

// shutdown shuts the backend down with a random budget, checks it kept
// it, lets the background work finish, and frees the region only if the
// hold came back.
func (e *epoch) shutdown(rep *Report) {
	budget := time.Duration(e.rng.Intn(30)) * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	t0 := time.Now()
	err := e.be.Shutdown(ctx)
	cancel()
	e.checkShutdownTime(budget, time.Since(t0))
	var se *backend.ShutdownError
	if err != nil && !errors.As(err, &se) {
		e.t.violation("%s: Shutdown returned %v, not a *backend.ShutdownError", e.store, err)
	}
	e.t.fault("shutdown")
	rep.Shutdowns++
	// Let the progress goroutine finish: drain and unregister, or give up
	// pinned by an unprovable call.
	select {
	case <-e.be.Done():
	case <-time.After(30 * time.Second):
		e.t.violation("%s: the backend's progress goroutine did not exit within 30s of Shutdown", e.store)
	}
	if e.master != nil {
		e.master.Wait() // transfers still writing
	}
	if e.chaosMC != nil {
		e.chaosMC.wg.Wait()
	}
	// Once the backend stopped for good, Shutdown's answer is final: nil
	// exactly when the hold came back.
	if err := e.be.Shutdown(context.Background()); (err == nil) != e.hold.isReleased() {
		e.t.violation("%s: after the backend stopped, Shutdown returned %v while the hold released is %v", e.store, err, e.hold.isReleased())
	}
	e.reap(rep)
	e.checkUnquiesced(rep)
	e.checkGuard("after shutdown")
	pinned := 0
	for _, at := range e.open {
		pinned += len(at.slots)
	}
	rep.SlotsPinned += pinned
	if e.be.Stats().BatchesUnprovable > 0 {
		rep.ShutdownsPinned++
	}
	if e.hold.isReleased() {
		if e.client != nil && !e.client.Closed() && len(e.client.Registered()) > 0 {
			e.t.violation("%s: the hold came back while the SDK still has the region registered", e.store)
			return
		}
		if pinned > 0 {
			e.t.violation("%s: the hold came back while %d slots of unquiesced attempts were out", e.store, pinned)
			return
		}
		_ = e.mem.Close()
	}
	// Otherwise the region stays mapped: a store may still touch it.
}

// checkShutdownTime: Shutdown returns within its budget, give or take
// shutdownSlack (took is how long it took).
func (e *epoch) checkShutdownTime(budget, took time.Duration) {
	if took > budget+shutdownSlack {
		e.t.violation("%s: Shutdown(%v) took %v", e.store, budget, took)
	}
}

// checker wraps the driver the backend drives and watches the rules that
// protect memory: no region unregistered, and no hold released, while an
// operation on it may still touch it.
type checker struct {
	driver.Driver
	t     *tally
	mu    sync.Mutex
	ops   []driver.Operation
	rs    [][]*driver.Region
	spans [][]driver.Span
}

func (c *checker) track(rows []driver.Row, op driver.Operation, err error) (driver.Operation, error) {
	if err == nil {
		var rs []*driver.Region
		var spans []driver.Span
		for _, r := range rows {
			for _, s := range r.Spans {
				rs = append(rs, s.Region)
				spans = append(spans, s)
			}
		}
		c.mu.Lock()
		c.ops, c.rs, c.spans = append(c.ops, op), append(c.rs, rs), append(c.spans, spans)
		c.mu.Unlock()
	}
	return op, err
}

func (c *checker) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	op, err := c.Driver.Put(ctx, rows)
	return c.track(rows, op, err)
}

func (c *checker) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	op, err := c.Driver.Get(ctx, rows, hint)
	return c.track(rows, op, err)
}

// openOn reports whether an operation that may touch r (nil: any region)
// has not proven its access ended.
func (c *checker) openOn(r *driver.Region) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, op := range c.ops {
		if op.AccessEnded() {
			continue
		}
		for _, x := range c.rs[i] {
			if r == nil || x == r {
				return true
			}
		}
	}
	return false
}

// touches reports whether an operation that has not proven its access
// ended names memory that overlaps sp.
func (c *checker) touches(sp driver.Span) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, op := range c.ops {
		if op.AccessEnded() {
			continue
		}
		for _, x := range c.spans[i] {
			if x.Region == sp.Region && x.Offset < sp.Offset+sp.Length && sp.Offset < x.Offset+x.Length {
				return true
			}
		}
	}
	return false
}

func (c *checker) Unregister(reg driver.Registration) error {
	open := c.openOn(reg.Region())
	err := c.Driver.Unregister(reg)
	if err == nil && open {
		c.t.violation("region %q was unregistered while an operation may still touch it", reg.Region().Name)
	}
	return err
}

// checkHold is the lender's hold: releasing it while an operation may still
// touch the region is a violation.
type checkHold struct {
	chk      *checker
	mu       sync.Mutex
	released bool
}

func (h *checkHold) Release() error {
	if h.chk.openOn(nil) {
		h.chk.t.violation("the hold was released while an operation may still touch the region")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		h.chk.t.violation("the hold was released twice")
	}
	h.released = true
	return nil
}

func (h *checkHold) isReleased() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.released
}

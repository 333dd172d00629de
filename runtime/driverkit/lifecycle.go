// Package driverkit is what a driver author builds a driver.Driver on.
//
// Lifecycle is the one state machine every driver shares: its live
// registrations, its calls in progress and the regions they may touch, the
// calls that lost the evidence that their access ended, and the rule that a
// driver closes only once none of its calls can touch memory any more. A driver holds one
// Lifecycle and forwards Register, Unregister, Drain and Close to it, adding
// only its SDK calls; Put and Get begin a Call and end it when the store can
// no longer touch the call's memory. The rules are written and tested once
// here, as gocloud.dev/blob enforces "closed" once for every driver.
//
// Seam is the fault seam a driver's SDK calls pass through, keyed by the
// spec's call names, so that a kit stages any answer. Stack and Resize
// keep a driver's (or its store's) working memory from call to call, so
// that a warm call makes no garbage.
package driverkit

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Lifecycle is a driver's shared state. The zero value is an open driver
// with no registrations. All methods are safe for concurrent use.
//
// One mutex guards registrations and calls together, so admission and
// Unregister can never interleave: a call is admitted only over regions that
// are live at that instant, and from then on its regions are pinned; an
// Unregister either sees the pin and is refused, or takes the region out of
// the live set before any later call can be admitted over it.
type Lifecycle struct {
	mu         sync.Mutex
	regs       map[*Registration]bool
	pinned     map[*driver.Region]int // calls whose access may touch the region
	inProgress int                    // calls admitted and not yet ended
	idle       chan struct{}          // closed when inProgress drops to 0
	unprovable int                    // calls that lost the evidence of their access end
	atTeardown []*Call                // calls whose access ends only when the store client is torn down
	tornDown   bool                   // the store client was torn down (or is being): no call is admitted
	closed     bool
	// Begin's liveness answer for its admission: the first row's region,
	// looked up once per call, and live, a method value made once, so
	// that admitting a call allocates no closure. Both are used under mu.
	first     *driver.Region
	firstLive bool
	live      func(*driver.Region) bool
}

// Registration is one live registration. Handle holds whatever the driver
// needs to revoke it (an SDK buffer, say).
type Registration struct {
	region   *driver.Region
	Handle   any
	detached bool // being unregistered: no call may be admitted over it
}

// Region returns the registered region.
func (g *Registration) Region() *driver.Region { return g.region }

func closedError() error { return driver.Reject(driver.RuleClosed, "the driver is closed") }

func tornDownError() error {
	return driver.Reject(driver.RuleClosed, "the driver tore its store client down to end the access of calls that only a teardown ends; open a new driver")
}

// Register admits r with admit (the generated AdmitRegister), then calls
// attach, which registers the memory with the store and returns the handle
// Unregister will need. attach runs outside the lock, counted as a call in
// progress so that Close cannot run beside it. An attach error is returned
// as it is: a driver returns a RejectedError when nothing was registered,
// and any other error when the registration may be live.
func (l *Lifecycle) Register(r *driver.Region, admit func(*driver.Region) error, attach func() (any, error)) (driver.Registration, error) {
	if err := admit(r); err != nil {
		return nil, err
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, closedError()
	}
	if l.tornDown {
		l.mu.Unlock()
		return nil, tornDownError()
	}
	l.inProgress++
	l.mu.Unlock()
	var handle any
	var err error
	if attach != nil {
		handle, err = attach()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaveLocked()
	if err != nil {
		return nil, err
	}
	if l.regs == nil {
		l.regs = map[*Registration]bool{}
	}
	g := &Registration{region: r, Handle: handle}
	l.regs[g] = true
	return g, nil
}

// Unregister revokes reg. It is refused (RejectedError) when reg is not a
// live registration of this lifecycle, and while a call that may touch its
// region is in progress or unprovable. Otherwise the region leaves the live
// set at once (no call can be admitted over it any more), and detach, which
// revokes the store's registration, runs outside the lock. When detach fails
// the registration stays live and its error is returned.
func (l *Lifecycle) Unregister(reg driver.Registration, detach func(handle any) error) error {
	g, ok := reg.(*Registration)
	l.mu.Lock()
	if !ok || !l.regs[g] || g.detached {
		l.mu.Unlock()
		return driver.Reject(driver.RuleUnknownRegistration, "not a live registration of this driver")
	}
	if l.pinned[g.region] > 0 {
		l.mu.Unlock()
		return driver.Reject(driver.RuleAccessOpen, "a call that may touch region %q is in progress or never proved its access ended; drain first", g.region.Name)
	}
	g.detached = true
	gone := l.tornDown // the store's registration went with its client
	l.mu.Unlock()
	var err error
	if detach != nil && !gone {
		err = detach(g.Handle)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		g.detached = false
		return err
	}
	delete(l.regs, g)
	return nil
}

// liveLocked reports whether r has a live registration.
func (l *Lifecycle) liveLocked(r *driver.Region) bool {
	for g := range l.regs {
		if g.region == r && !g.detached {
			return true
		}
	}
	return false
}

// Registered returns the number of live registrations.
func (l *Lifecycle) Registered() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.regs)
}

// Begin admits a Put or Get over rows: it is refused when the driver is
// closed, or when admit (the generated AdmitPut or AdmitGet, given whether a
// region is live) refuses. Admitted, the call pins every region its rows'
// spans lie in and counts as in progress until the driver ends it. Nothing
// is recorded on a refusal.
func (l *Lifecycle) Begin(rows []driver.Row, admit func(live func(*driver.Region) bool) error) (*Call, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, closedError()
	}
	if l.tornDown {
		return nil, tornDownError()
	}
	err := admit(l.liveFor(rows))
	l.first = nil // holds no region past the call
	if err != nil {
		return nil, err
	}
	c := &Call{l: l, accessOpen: true, open: true}
	c.regions = c.region1[:0]
	for _, row := range rows {
		for _, s := range row.Spans {
			if !containsRegion(c.regions, s.Region) {
				c.regions = append(c.regions, s.Region)
			}
		}
	}
	if l.pinned == nil {
		l.pinned = map[*driver.Region]int{}
	}
	for _, r := range c.regions {
		l.pinned[r]++
	}
	l.inProgress++
	return c, nil
}

// liveFor answers liveness for one admission under the lock, with one
// lookup for the common batch of rows in one region.
func (l *Lifecycle) liveFor(rows []driver.Row) func(*driver.Region) bool {
	l.first, l.firstLive = nil, false
	if len(rows) > 0 && len(rows[0].Spans) > 0 {
		l.first = rows[0].Spans[0].Region
		l.firstLive = l.liveLocked(l.first)
	}
	if l.live == nil {
		l.live = l.liveOrFirst
	}
	return l.live
}

// liveOrFirst is liveFor's answer: the first region's cached liveness, or
// a lookup. l.mu is held.
func (l *Lifecycle) liveOrFirst(r *driver.Region) bool {
	if r == l.first {
		return l.firstLive
	}
	return l.liveLocked(r)
}

func containsRegion(rs []*driver.Region, r *driver.Region) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

func (l *Lifecycle) leaveLocked() {
	l.inProgress--
	if l.inProgress == 0 && l.idle != nil {
		close(l.idle)
		l.idle = nil
	}
}

// Drain waits until no call is in progress or ctx is done, then runs finish
// (nil for none: the driver's own clean-up, such as revoking writes left
// open) and reports whether nothing is left. It answers false at once while
// a call is unprovable, since that call's access never ends. Close needs
// no drain when every call already ended (Close says when it does).
func (l *Lifecycle) Drain(ctx context.Context, finish func(context.Context) bool) bool {
	return l.DrainTearingDown(ctx, finish, nil)
}

// DrainTearingDown is Drain for a driver whose store ends some calls'
// access only when its client is torn down (Call.EndsAtTeardown). Once no
// call is in progress and finish returned true, if such calls are left, it
// refuses every later call, runs teardown (closing the store client) and,
// when teardown returns nil, ends their access: their regions may be
// unregistered (without asking the store, whose registrations went with
// its client), and the driver may close. A teardown that fails keeps them
// pinned; the next drain runs it again. With teardown nil such calls make
// the drain answer false.
func (l *Lifecycle) DrainTearingDown(ctx context.Context, finish func(context.Context) bool, teardown func() error) bool {
	if !l.waitIdle(ctx) {
		return false
	}
	if finish != nil && !finish(ctx) {
		return false
	}
	l.mu.Lock()
	waiting := len(l.atTeardown) > 0
	if waiting && (teardown == nil || l.inProgress > 0) {
		l.mu.Unlock()
		return false // nothing can end them, or a call began meanwhile
	}
	if waiting {
		l.tornDown = true // no call is admitted from here on
		l.mu.Unlock()
		if err := teardown(); err != nil {
			return false
		}
		l.mu.Lock()
		for _, c := range l.atTeardown {
			c.unpinLocked()
		}
		l.atTeardown = nil
	}
	defer l.mu.Unlock()
	return l.inProgress == 0 && l.unprovable == 0 && len(l.atTeardown) == 0
}

// TornDown reports whether a drain tore the store client down.
func (l *Lifecycle) TornDown() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.tornDown
}

// waitIdle waits until no call is in progress; it answers false at once
// while a call is unprovable, and when ctx is done first.
func (l *Lifecycle) waitIdle(ctx context.Context) bool {
	for {
		l.mu.Lock()
		if l.unprovable > 0 {
			l.mu.Unlock()
			return false
		}
		if l.inProgress == 0 {
			l.mu.Unlock()
			return true
		}
		if l.idle == nil {
			l.idle = make(chan struct{})
		}
		idle := l.idle
		l.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return false
		}
	}
}

// Unprovable reports whether any call lost the evidence of its access end.
func (l *Lifecycle) Unprovable() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.unprovable > 0
}

// Close runs release (nil for none: closing the SDK client) once, when
// nothing can touch the caller's memory any more: no call in progress,
// none unprovable, none whose access waits for the client's teardown, and
// no region registered. An idle driver (every call it made has ended)
// needs no Drain first. Drain must come first only while a call is in
// progress (an operation that returned before it finished): it waits for
// it, and tears the client down for the calls only that ends. Otherwise
// Close is refused (RejectedError) saying which of these holds. A second
// Close answers nil.
func (l *Lifecycle) Close(release func() error) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	if err := l.busyLocked(); err != nil {
		l.mu.Unlock()
		return err
	}
	l.closed = true
	l.mu.Unlock()
	if release != nil {
		return release()
	}
	return nil
}

// busyLocked says why the driver cannot close yet, or nil. l.mu is held.
func (l *Lifecycle) busyLocked() error {
	switch {
	case l.unprovable > 0:
		return driver.Reject(driver.RuleAccessOpen, "close refused: %d calls lost the evidence that their access ended, so the store may still touch their memory; the driver never closes (keep its regions for the life of the process)", l.unprovable)
	case len(l.atTeardown) > 0:
		return driver.Reject(driver.RuleAccessOpen, "close refused: %d calls keep access that only the client's teardown ends; Drain tears the client down, then Close", len(l.atTeardown))
	case l.inProgress > 0:
		return driver.Reject(driver.RuleAccessOpen, "close refused: %d calls are in progress (an operation that returned before it finished); Drain until it answers true, then Close", l.inProgress)
	case len(l.regs) > 0:
		return driver.Reject(driver.RuleAccessOpen, "close refused: %d regions are still registered; unregister them first", len(l.regs))
	}
	return nil
}

// Call is one admitted Put or Get. It pins its regions until EndAccess (or
// End) and counts as in progress until both its access ended and Done (or
// End) was called. Its methods are safe for concurrent use and each takes
// effect once.
type Call struct {
	l          *Lifecycle
	regions    []*driver.Region
	region1    [1]*driver.Region // regions' storage for a call in one region
	accessOpen bool              // regions pinned
	open       bool              // results not yet recorded
	unprovable bool
	atTeardown bool // its access ends when the store client is torn down
}

// EndAccess records that the store can no longer touch the call's memory:
// its regions may be unregistered.
func (c *Call) EndAccess() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.endAccessLocked()
}

func (c *Call) endAccessLocked() {
	if !c.accessOpen || c.unprovable || c.atTeardown {
		return
	}
	c.unpinLocked()
	if !c.open {
		c.l.leaveLocked()
	}
}

// unpinLocked ends the call's access: its regions are no longer pinned.
func (c *Call) unpinLocked() {
	c.accessOpen = false
	for _, r := range c.regions {
		if c.l.pinned[r]--; c.l.pinned[r] == 0 {
			delete(c.l.pinned, r)
		}
	}
}

// Done records that the call's results are recorded.
func (c *Call) Done() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.doneLocked()
}

func (c *Call) doneLocked() {
	if !c.open {
		return
	}
	c.open = false
	if !c.accessOpen {
		c.l.leaveLocked()
	}
}

// End is Done and EndAccess: the call returned and its return ended its
// access. A call marked Unprovable keeps its regions pinned.
func (c *Call) End() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.doneLocked()
	c.endAccessLocked()
}

// Unprovable records that the store lost the evidence that the call's
// access ended and never will have it: its regions stay pinned for good
// (Unregister is refused), Drain answers false at once, and the driver can
// never close. Its results are taken as recorded.
func (c *Call) Unprovable() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.unprovable || c.atTeardown || !c.accessOpen {
		return
	}
	c.unprovable = true
	c.l.unprovable++
	c.open = false
	c.l.leaveLocked() // counted while its access was open; pinned from now on

}

// EndsAtTeardown records that the call's results are recorded and that
// its access ends only when the driver tears its store client down (a
// transfer whose wait gave up, which only the client's teardown stops):
// its regions stay pinned, Drain does not wait for it, and
// DrainTearingDown ends it by tearing the client down once such calls are
// all that is left.
func (c *Call) EndsAtTeardown() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.unprovable || c.atTeardown || !c.accessOpen {
		return
	}
	c.atTeardown = true
	c.l.atTeardown = append(c.l.atTeardown, c)
	if c.open {
		c.open = false
		c.l.leaveLocked() // counted while in progress; pinned until the teardown
	}
}

// Finished returns the operation of a call that returned with every row's
// result and whose return ended its access: what a driver whose Put and Get
// block until the store answered returns.
func Finished(results []driver.Result) driver.Operation { return finished(results) }

type finished []driver.Result

func (o finished) Poll() ([]driver.Result, bool) { return append([]driver.Result(nil), o...), true }
func (o finished) AccessEnded() bool             { return true }
func (o finished) AccessUnprovable() bool        { return false }

// Cancel does nothing: every row finished before the operation was
// returned.
func (o finished) Cancel() {}

// EachRow is the whole of a Put or Get whose store calls go one row at a
// time, each ending its access on return: it begins a call with admit (as
// Begin does), runs do for the rows in order, answers CANCELLED for each
// row ctx stopped before it started, ends the call and returns the finished
// operation.
func (l *Lifecycle) EachRow(ctx context.Context, rows []driver.Row, admit func(live func(*driver.Region) bool) error, do func(driver.Row) driver.Result) (driver.Operation, error) {
	return l.EachRowIn(ctx, rows, 1, admit, do)
}

// EachRowIn is EachRow with up to limit rows in flight at once: a store
// whose rows are independent requests (a file each, an object each) is
// bound by one request's latency, not by its bandwidth, when a call sends
// its rows one after another. Each row's do runs on a goroutine of its own
// (limit of them, taking the rows in order); EachRowIn returns only once
// every do has returned, so the call's access still ends on its return.
// With a limit of 1 or less every row runs on the caller's goroutine, in
// order (EachRow). do must be safe for concurrent use.
func (l *Lifecycle) EachRowIn(ctx context.Context, rows []driver.Row, limit int, admit func(live func(*driver.Region) bool) error, do func(driver.Row) driver.Result) (driver.Operation, error) {
	call, err := l.Begin(rows, admit)
	if err != nil {
		return nil, err
	}
	defer call.End()
	results := make([]driver.Result, len(rows))
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(rows) {
				return
			}
			if ctx.Err() != nil {
				results[i] = driver.Result{Status: driver.Cancelled}
				continue
			}
			results[i] = do(rows[i])
		}
	}
	var wg sync.WaitGroup
	for range min(limit, len(rows)) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
	return Finished(results), nil
}

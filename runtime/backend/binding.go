package backend

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Hold is a lender's claim on its regions (hostmem.Hold is one). While the
// hold is out, the lender does not free them. The binding calls Release
// once, from Bind's caller on a failure that escaped nothing, or from the
// backend's progress goroutine after Shutdown unregistered every region.
type Hold interface {
	Release() error
}

// ErrConstructionRejected is returned (wrapped) by Bind when nothing stays
// registered and the hold was released: the caller may free its regions.
var ErrConstructionRejected = errors.New("backend: construction rejected")

// ErrHoldKept is returned (wrapped) by Bind when a failure may have left a
// registration live: the hold is kept, and the caller must not free the
// regions.
var ErrHoldKept = errors.New("backend: a registration may be live; the hold is kept")

// RegionBinding owns a lender's hold and the registrations made under it.
// It registers only the regions with slots in memory the driver can access
// (HOST, or DEVICE once the driver declares device memory), and releases
// the hold only after every region is confirmed unregistered. Its methods
// are safe for concurrent use by multiple goroutines.
type RegionBinding struct {
	d    driver.Driver
	hold Hold

	// taken is whether a backend owns the binding (New): a second New
	// over it would unregister its regions under the first.
	taken atomic.Bool

	mu       sync.Mutex
	regs     map[*driver.Region]driver.Registration
	order    []*driver.Region
	released bool
}

// Bind registers regions with d under hold.
//
//   - A nil ctx, driver or hold, a nil region, or a region with slots that
//     is no valid region is refused before the driver is called, with an
//     error naming the argument (bindArgs); Bind releases a non-nil hold
//     and returns ErrConstructionRejected.
//   - With no region the driver can access, it releases the hold and
//     returns ErrConstructionRejected.
//   - Two regions whose memory overlaps (two Region values over the same
//     bytes, or the same region twice) are refused before the driver is
//     called: rows fetched into both would land in one slot, and both
//     answer READY for bytes only one of them holds. Bind releases the hold
//     and returns ErrConstructionRejected, naming the two.
//   - A registration refused with a RejectedError escaped nothing: Bind
//     unregisters what it registered, releases the hold and returns
//     ErrConstructionRejected; if a rollback fails, the hold is kept
//     (ErrHoldKept).
//   - Any other registration error may have left a registration live: the
//     hold is kept (ErrHoldKept).
//
// The driver's own error stays in the chain: errors.As finds a
// *driver.RejectedError, or the driver's own error type, in what Bind
// returns, and errors.Is finds ErrConstructionRejected or ErrHoldKept.
//
// Bind never runs the driver on the caller's goroutine: a store's SDK may
// block in register_buffer (a master that does not answer) and takes no
// deadline, and the caller's ctx must still end the wait. One goroutine of
// Bind's own registers the regions, one after the other, and checks ctx
// before each; once ctx has ended it rolls back as for a refusal. Bind
// returns when that goroutine is done, or as soon as ctx ends:
//
//   - ctx ended before a registration: ErrConstructionRejected wrapping
//     context.Cause(ctx) (errors.Is(err, context.DeadlineExceeded) holds),
//     or ErrHoldKept if the rollback failed.
//   - ctx ended while the driver was registering (or rolling back): Bind
//     returns ErrHoldKept wrapping context.Cause(ctx) at once. The call
//     runs to its end on Bind's goroutine, which then unregisters every
//     region and releases the hold: the lender's Hold.Release is the
//     signal that the regions may be freed (hostmem frees them itself).
//     If that rollback fails, the hold stays kept, as for any rollback.
func Bind(ctx context.Context, regions []*driver.Region, d driver.Driver, hold Hold) (*RegionBinding, error) {
	if err := bindArgs(ctx, regions, d, hold); err != nil {
		if isNil(hold) {
			return nil, fmt.Errorf("%w: %w", ErrConstructionRejected, err)
		}
		if rerr := hold.Release(); rerr != nil {
			return nil, fmt.Errorf("%w: %w, and releasing the hold failed: %w", ErrHoldKept, err, rerr)
		}
		return nil, fmt.Errorf("%w: %w", ErrConstructionRejected, err)
	}
	b := &RegionBinding{d: d, hold: hold, regs: map[*driver.Region]driver.Registration{}}
	caps := d.Capabilities()
	var served []*driver.Region
	for _, r := range regions {
		if r.Layout.Slots <= 0 {
			continue
		}
		if r.Kind == driver.Host || (r.Kind == driver.Device && caps.DeviceMemory) {
			served = append(served, r)
		}
	}
	if len(served) == 0 {
		if err := hold.Release(); err != nil {
			return nil, fmt.Errorf("%w: no region the driver can access, and releasing the hold failed: %w", ErrHoldKept, err)
		}
		return nil, fmt.Errorf("%w: no region has slots in memory the driver can access", ErrConstructionRejected)
	}
	if err := overlapping(served); err != nil {
		if rerr := hold.Release(); rerr != nil {
			return nil, fmt.Errorf("%w: %w, and releasing the hold failed: %w", ErrHoldKept, err, rerr)
		}
		return nil, fmt.Errorf("%w: %w", ErrConstructionRejected, err)
	}
	if err := context.Cause(ctx); ctx.Err() != nil {
		if rerr := hold.Release(); rerr != nil {
			return nil, fmt.Errorf("%w: before registering region %q: %w, and releasing the hold failed: %w", ErrHoldKept, served[0].Name, err, rerr)
		}
		return nil, fmt.Errorf("%w: before registering region %q: %w", ErrConstructionRejected, served[0].Name, err)
	}
	// done hands the registering goroutine's answer to Bind, unbuffered so
	// that exactly one side decides what happens to the registrations: Bind
	// takes them, or, once Bind has returned (abandon closed), the goroutine
	// rolls them back itself and nothing is left registered under nobody.
	done := make(chan error)
	abandon := make(chan struct{})
	var calling atomic.Pointer[driver.Region]
	go func() {
		err := b.register(ctx, served, &calling)
		select {
		case done <- err:
		case <-abandon:
			if err == nil {
				_ = b.unregisterAll() // a failure keeps the hold, as Bind's doc says
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
		return b, nil
	case <-ctx.Done():
	}
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
		return b, nil
	default:
		close(abandon)
	}
	what := "registering or rolling back"
	if r := calling.Load(); r != nil {
		what = fmt.Sprintf("registering region %q", r.Name)
	}
	return nil, fmt.Errorf("%w: %w while the driver was %s; the call runs to its end, then every region is unregistered and the hold released (the lender's Hold.Release says when the regions may be freed)", ErrHoldKept, context.Cause(ctx), what)
}

// bindArgs refuses what Bind cannot work with, naming the argument, before
// anything reaches the driver: a nil ctx, driver or hold (a nil interface,
// or one holding a nil pointer, map, func or chan, whose methods would
// panic on Bind's goroutine or, later, on the backend's progress
// goroutine, where the caller cannot recover), a nil region, and a region
// with slots that is no valid region (driver.Region.Validate: an unknown
// kind, a slot of no bytes, host memory shorter than its layout, which a
// worker would slice past its end). A region with no slots is no misuse:
// Bind leaves it out, as its doc says.
func bindArgs(ctx context.Context, regions []*driver.Region, d driver.Driver, hold Hold) error {
	switch {
	case ctx == nil:
		return errors.New("backend: Bind's ctx is nil; pass context.Background() or a ctx that bounds the registrations")
	case isNil(d):
		return fmt.Errorf("backend: Bind's driver is nil (%T); pass the store's opened driver", d)
	case isNil(hold):
		return fmt.Errorf("backend: Bind's hold is nil (%T); pass the lender's Hold (hostmem.Lender.Hold), which the binding releases once every region is unregistered", hold)
	}
	for i, r := range regions {
		if r == nil {
			return fmt.Errorf("backend: Bind's regions[%d] is nil; pass only the lender's regions", i)
		}
		if r.Layout.Slots <= 0 {
			continue
		}
		if err := r.Validate(); err != nil {
			return fmt.Errorf("backend: Bind's regions[%d] is no valid region: %w", i, err)
		}
	}
	return nil
}

// isNil reports whether v is nil or an interface holding a nil pointer,
// map, slice, func or chan.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan, reflect.Interface:
		return rv.IsNil()
	}
	return false
}

// register registers served in order on Bind's own goroutine, publishing in
// calling the region whose Register is in progress, and rolls back on a
// refusal or once ctx has ended; see Bind for what each failure leaves.
func (b *RegionBinding) register(ctx context.Context, served []*driver.Region, calling *atomic.Pointer[driver.Region]) error {
	for _, r := range served {
		if ctx.Err() != nil {
			err := context.Cause(ctx)
			if rbErr := b.unregisterAll(); rbErr != nil {
				return fmt.Errorf("%w: before registering region %q: %w, and the rollback failed: %w", ErrHoldKept, r.Name, err, rbErr)
			}
			return fmt.Errorf("%w: before registering region %q: %w", ErrConstructionRejected, r.Name, err)
		}
		calling.Store(r)
		reg, err := b.d.Register(r)
		calling.Store(nil)
		if err == nil {
			b.mu.Lock()
			b.regs[r] = reg
			b.order = append(b.order, r)
			b.mu.Unlock()
			continue
		}
		if !driver.IsRejected(err) {
			// The failed registration's state is unknown, so the hold is
			// kept; the regions registered before it are known, and are
			// unregistered so that they do not keep the driver from
			// closing.
			if rbErr := b.unregister(); rbErr != nil {
				return fmt.Errorf("%w: registering region %q: %w; unregistering the regions before it failed too: %w", ErrHoldKept, r.Name, err, rbErr)
			}
			return fmt.Errorf("%w: registering region %q: %w", ErrHoldKept, r.Name, err)
		}
		if rbErr := b.unregisterAll(); rbErr != nil {
			return fmt.Errorf("%w: registering region %q was refused (%w) and the rollback failed: %w", ErrHoldKept, r.Name, err, rbErr)
		}
		return fmt.Errorf("%w: registering region %q: %w", ErrConstructionRejected, r.Name, err)
	}
	return nil
}

// overlapping refuses regions whose slots share memory: host regions by
// their bytes, device regions by their addresses (a host and a device
// address are never compared).
func overlapping(regions []*driver.Region) error {
	type span struct {
		r          *driver.Region
		start, end uintptr
	}
	spans := make([]span, 0, len(regions))
	for _, r := range regions {
		start := r.Addr
		if r.Kind == driver.Host && len(r.Mem) > 0 {
			start = uintptr(unsafe.Pointer(unsafe.SliceData(r.Mem)))
		}
		spans = append(spans, span{r, start, start + uintptr(r.Layout.Bytes())})
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].r.Kind != spans[j].r.Kind {
			return spans[i].r.Kind < spans[j].r.Kind
		}
		return spans[i].start < spans[j].start
	})
	for i := 1; i < len(spans); i++ {
		a, b := spans[i-1], spans[i]
		if a.r.Kind == b.r.Kind && b.start < a.end {
			return fmt.Errorf("regions %q and %q share memory (%d bytes); each slot must be one region's alone, or two rows fetched into one slot would both answer READY", a.r.Name, b.r.Name, min(a.end, b.end)-b.start)
		}
	}
	return nil
}

// Driver returns the bound driver.
func (b *RegionBinding) Driver() driver.Driver { return b.d }

// Registered reports whether r is registered under the binding.
func (b *RegionBinding) Registered(r *driver.Region) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.regs[r]
	return ok
}

// registeredFunc is Registered for one submission's validation: it asks
// the binding once per region it is given in a row, not once per span.
func (b *RegionBinding) registeredFunc() func(*driver.Region) bool {
	var last *driver.Region
	var lastOK bool
	return func(r *driver.Region) bool {
		if r != last || last == nil {
			last, lastOK = r, b.Registered(r)
		}
		return lastOK
	}
}

// Regions returns the registered regions, in registration order.
func (b *RegionBinding) Regions() []*driver.Region {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]*driver.Region(nil), b.order...)
}

// HoldReleased reports whether the binding gave its hold back: only then
// may the lender free the regions.
func (b *RegionBinding) HoldReleased() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.released
}

// unregisterAll unregisters every region still registered and, once none
// is left, releases the hold. It may be called again after a failure.
func (b *RegionBinding) unregisterAll() error {
	if err := b.unregister(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.released {
		if err := b.hold.Release(); err != nil {
			return fmt.Errorf("release hold: %w", err)
		}
		b.released = true
	}
	return nil
}

// unregister unregisters every region still registered, keeping the hold.
func (b *RegionBinding) unregister() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	var left []*driver.Region
	for _, r := range b.order {
		if err := b.d.Unregister(b.regs[r]); err != nil {
			errs = append(errs, fmt.Errorf("unregister %q: %w", r.Name, err))
			left = append(left, r)
			continue
		}
		delete(b.regs, r)
	}
	b.order = left
	return errors.Join(errs...)
}

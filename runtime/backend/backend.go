// Package backend is what a Go serving runtime embeds to move KV rows
// through any store driver: it validates a view, cuts it into batches,
// drives them through the driver on worker goroutines, and reports per
// attempt which rows were delivered and whether any store may still touch
// the attempt's slots.
//
// The rules:
//
//   - Submission validates the whole view with the admission helpers
//     drivers run (package rules), cuts batches by rows, bytes and the
//     driver's MaxRowsPerOp, queues them and never calls the driver.
//   - A fetch whose destinations overlap (two rows into one slot, or one
//     row's spans overlapping) is refused at submission: both rows could
//     answer READY while one overwrote the other.
//   - Config.Workers goroutines call Put and Get. Fetches go first; after
//     four fetch batches taken while a publish batch waited, that publish
//     goes next. Publishes use at most max(1, min(Workers-1,
//     GOMAXPROCS-1)) workers, so a fetch always finds a worker and a core.
//   - A batch counts as started before it enters the driver.
//   - One progress goroutine is the only observer of operations a worker
//     could not settle. Each batch records its results and its access end
//     once.
//   - An unprovable operation is counted (Stats.BatchesUnprovable), polled
//     only until its results are recorded, and its attempt never quiesces.
//   - A fault stops a fetch's later batches; a publish stops only when a
//     call failed as a whole. After a fault the outcome waits for batches
//     already started.
//   - A driver error other than DriverRejected, or a poll with the wrong row
//     count, is a protocol violation: every later submission is refused
//     naming it, and queued batches are dropped.
//   - Shutdown never calls the driver, and never closes it. It returns
//     when its ctx ends, or as soon as every open attempt is pinned by an
//     unprovable call, with a *ShutdownError saying what is left. Drain and
//     unregister run on the progress goroutine, with retries.
//   - A driver call past Config.SlowCall (60 s) logs one warning; Stats
//     reports the oldest call's age.
//
// # Concurrency
//
// Every method of Backend, Attempt and RegionBinding is safe to call from
// any goroutine, at any time, and never blocks on the store: Publish and
// Fetch only validate and queue, Poll and Stats read state under the
// backend's lock, and only Wait, WaitQuiesced and Shutdown wait (each
// until its ctx ends). The backend calls the driver from its own
// goroutines alone: Config.Workers workers call Put and Get, one
// progress goroutine observes operations and, after Shutdown, calls Drain
// and Unregister and releases the hold, and Bind registers on a goroutine
// of its own, which it waits for until its ctx ends.
//
// # Contexts
//
// The ctx given to Publish or Fetch is the ctx of every driver call the
// attempt makes (its deadline and values reach Put and Get), and its end
// cancels the attempt as Cancel does: rows not started answer CANCELLED,
// and calls already in the driver run out (an SDK call cannot be
// recalled; the driver stops what its client lets a ctx stop). The
// attempt's Outcome.Err then wraps ErrCancelled and context.Cause(ctx).
// driver.Driver's Register takes no ctx: Bind checks its ctx between
// registrations and stops waiting when it ends (a call in progress runs to
// its end, then is rolled back), and Shutdown waits within its own.
//
// # Waiting
//
// Each attempt has two channels an embedder selects on beside its own:
// Done (the outcome is final) and Quiesced (no store can touch its slots
// any more), and two calls that wait on them within a ctx: Wait and
// WaitQuiesced. Any number of goroutines may wait on any attempts at once;
// no wake-up is lost. Config.Wake is optional, for a runtime that drives
// every attempt from one event loop of its own: when set, the backend
// calls it after every state change (a submission, a recorded result, an
// access end, a cancel, a shutdown step), always outside its lock, from
// whichever goroutine made the change, including several at once: it must
// be safe for concurrent use and should return quickly, since a worker
// waits for it. It may call the backend's methods. A wake carries no
// payload; after one, poll what you are waiting for.
package backend

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
)

// afterFunc is context.AfterFunc, through which an attempt cancels itself
// when its ctx ends. A test holds that cancel (export_test.go) to reach
// the window before it runs, in which a worker may take a batch whose
// attempt's ctx has already ended and must drop it (next, workers.go).
var afterFunc = context.AfterFunc

// Config configures a Backend. Its defaults assume nothing about the
// driver: one worker, no row limit of the backend's own, and calls of at
// most DefaultBytesPerBatch, so that a fetch never waits long behind one
// publish call. New copies it; changing a Config after New has no effect.
type Config struct {
	// Workers is the number of goroutines calling the driver (0: 1).
	Workers int
	// RowsPerBatch bounds the rows of one driver call (0: no bound).
	RowsPerBatch int
	// BytesPerBatch bounds the payload bytes of one driver call (0:
	// DefaultBytesPerBatch; NoByteBound: no bound of the backend's own).
	// A row larger than the bound goes alone.
	BytesPerBatch int64
	// Prefix is the key prefix (default "kvblob"): segments joined by '/',
	// none of a key version's form (driver.KeyStem), so that the pattern a
	// tenant is granted (prefix/v1/*, driver.Stem.Pattern) matches no other
	// prefix's keys (docs/security.md, Tenant prefixes).
	Prefix string
	// SlowCall is how long a driver call may run before one warning is
	// logged (0: 60 s).
	SlowCall time.Duration
	// Logger receives the slow-call warnings (zero value: discarded), with
	// the fields op, rows, bytes and age_ms (docs/operating.md); give it
	// store=<name> with Logger.With() to match the drivers' events. The
	// backend reads no zerolog global: every duration it logs is a field
	// whose name carries its unit.
	Logger zerolog.Logger
	// Wake, if set, is called after every state change of the backend or
	// of any attempt (see Waiting in the package doc). Leave it nil unless
	// one event loop of yours drives every attempt: Done, Quiesced, Wait
	// and WaitQuiesced need no wake function.
	Wake func()
}

// DefaultSlowCall is the default Config.SlowCall.
const DefaultSlowCall = 60 * time.Second

// DefaultBytesPerBatch is the default Config.BytesPerBatch: 4 MiB, a call
// of well under a millisecond at memory speeds, so that a worker is soon
// free for a fetch queued behind a publish.
const DefaultBytesPerBatch = 4 << 20

// NoByteBound as Config.BytesPerBatch lifts the backend's byte bound.
const NoByteBound = math.MaxInt64

func (c *Config) normalize() error {
	if c.Workers < 0 {
		return fmt.Errorf("backend: Workers is %d; want 0 (one worker) or more", c.Workers)
	}
	if c.RowsPerBatch < 0 {
		return fmt.Errorf("backend: RowsPerBatch is %d; want 0 (no bound) or more", c.RowsPerBatch)
	}
	if c.BytesPerBatch < 0 {
		return fmt.Errorf("backend: BytesPerBatch is %d; want 0 (no bound) or more", c.BytesPerBatch)
	}
	if c.SlowCall < 0 {
		return fmt.Errorf("backend: SlowCall is %v; want 0 (60 s) or more", c.SlowCall)
	}
	if c.Workers == 0 {
		c.Workers = 1
	}
	if c.Prefix == "" {
		c.Prefix = "kvblob"
	}
	if c.SlowCall == 0 {
		c.SlowCall = DefaultSlowCall
	}
	if c.BytesPerBatch == 0 {
		c.BytesPerBatch = DefaultBytesPerBatch
	}
	return nil
}

// ViewRow is one row of a view: the row's name (its key is the backend's
// stem + hex(name), so Prefix/v1/hex(name)) and the spans of lent memory
// holding it (a publish) or receiving it (a fetch). Build a span with
// Region.Slot(i) for a whole slot, or driver.Span{Region, Offset, Length}
// for part of one; the region must be one the binding registered.
type ViewRow struct {
	Name  []byte
	Spans []driver.Span
}

// View is what a runtime submits: rows in order. Publish and Fetch copy
// the view (names and span lists), so the caller may reuse the View value
// as soon as they return; the memory its spans name is the store's until
// the attempt is Quiesced.
type View []ViewRow

// InvalidSubmissionError is returned for a view or hint the backend refuses
// before queueing anything. Nothing reached the driver.
type InvalidSubmissionError struct {
	// Rule names the rule the view broke, as driver.RejectedError spells
	// it where the rule is an admission rule ("repeated_key", ...).
	Rule string
	// Reason says which row broke it and how.
	Reason string
}

func (e *InvalidSubmissionError) Error() string { return "backend: invalid submission: " + e.Reason }

// SubmissionRejectedError is returned once the backend takes no more work:
// after Shutdown, or after the driver broke its protocol. Err is
// ErrShutDown or ErrProtocolViolation, so errors.Is tells the two apart.
type SubmissionRejectedError struct {
	Reason string
	Err    error
}

func (e *SubmissionRejectedError) Error() string {
	return "backend: submission rejected: " + e.Reason
}

// Unwrap returns ErrShutDown or ErrProtocolViolation.
func (e *SubmissionRejectedError) Unwrap() error { return e.Err }

// The causes an attempt's Outcome.Err, or a refused submission, wraps;
// match them with errors.Is.
var (
	// ErrCancelled: the attempt was cancelled, by Cancel or by the end of
	// its ctx (then the error wraps context.Cause(ctx) as well).
	ErrCancelled = errors.New("backend: attempt cancelled")
	// ErrShutDown: Shutdown dropped the attempt's queued rows, or the
	// backend takes no more work.
	ErrShutDown = errors.New("backend: the backend shut down")
	// ErrProtocolViolation: the driver broke its protocol (an error other
	// than a driver.RejectedError, or a poll with the wrong row count); the
	// backend takes no more work.
	ErrProtocolViolation = errors.New("backend: the driver broke its protocol")
	// ErrPinned is WaitQuiesced's answer for an attempt that holds a call
	// whose driver can never prove its access ended: the attempt never
	// quiesces, and its slots must never be reused.
	ErrPinned = errors.New("backend: the attempt is pinned by a call whose access can never be proven ended; never reuse its slots")
)

// RowError is an attempt's Outcome.Err when a row stopped or failed it:
// the row's index in the view, its key, and why. Err is the row's
// *driver.FaultError when the row answered FAULT, or wraps the driver's
// *driver.RejectedError when the driver refused the call that carried
// the row (Row is then the call's first row): errors.As reaches either.
type RowError struct {
	Row int
	Key string
	Err error
}

func (e *RowError) Error() string {
	return fmt.Sprintf("backend: row %d (%s): %v", e.Row, e.Key, e.Err)
}

// Unwrap returns the row's *driver.FaultError, or the driver's refusal.
func (e *RowError) Unwrap() error { return e.Err }

// Stats is a snapshot of the backend's counters, a value the caller owns.
type Stats struct {
	Attempts          int
	BatchesQueued     int
	BatchesStarted    int
	BatchesSettled    int
	BatchesUnprovable int
	CallsOpen         int           // batches started and not settled
	OldestCall        time.Duration // age of the oldest open call
	ProtocolViolation string
	ShutDown          bool
}

// Backend moves views through one driver. Its methods are safe for
// concurrent use by multiple goroutines (see Concurrency in the package
// doc). Build one with New; the zero Backend is not usable.
type Backend struct {
	cfg     Config
	binding *RegionBinding
	d       driver.Driver
	caps    driver.Capabilities
	stem    driver.Stem
	wake    func()
	pubCap  int
	// epoch is when New ran; callStarted reads the time through it.
	epoch time.Time

	mu         sync.Mutex
	cond       *sync.Cond
	fetchQ     queue
	pubQ       queue
	waited     int // fetch batches taken while a publish batch waited
	publishing int
	idle       int        // workers waiting on cond
	open       []*batch   // started, not settled (batch.openAt)
	watch      []*batch   // polled by the progress goroutine on its timer (batch.watchAt)
	dirty      []*batch   // Notifier batches that said they changed (batch.watchAt)
	attempts   []*Attempt // not yet forgotten (Attempt.at)
	closing    bool
	workers    int
	finished   bool  // progress goroutine done
	refused    error // the drained driver's last refusal to unregister, once the progress goroutine stopped asking
	violation  string
	stats      Stats
	changed    chan struct{} // closed on the next change; nil until Shutdown waits
	kick       chan struct{}
	done       chan struct{}
}

// New starts a backend over binding's driver: Config.Workers worker
// goroutines and one progress goroutine, which run until Shutdown. The
// binding is the backend's from now on: Shutdown unregisters its regions
// and releases its hold.
//
// New refuses, naming the argument, a nil binding, one not made by Bind
// (the zero RegionBinding has no driver and no hold), one whose hold was
// released (a Shutdown unregistered its regions) and one another backend
// already owns: each would otherwise panic, or unregister regions under
// a running backend, on a goroutine of the backend's, where the caller
// cannot recover.
func New(binding *RegionBinding, cfg Config) (*Backend, error) {
	switch {
	case binding == nil:
		return nil, errors.New("backend: New's binding is nil; build one with Bind")
	case binding.d == nil || binding.hold == nil || binding.regs == nil:
		return nil, errors.New("backend: New's binding was not made by Bind (a RegionBinding literal has no driver and no hold); build one with Bind")
	case binding.HoldReleased():
		return nil, errors.New("backend: New's binding has released its hold (a backend's Shutdown unregistered its regions); Bind the regions again")
	}
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	stem, err := driver.KeyStem(cfg.Prefix)
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	wake := cfg.Wake
	if wake == nil {
		wake = func() {}
	}
	if !binding.taken.CompareAndSwap(false, true) {
		return nil, errors.New("backend: New's binding belongs to another backend already; Bind the regions again for a second backend")
	}
	d := binding.Driver()
	b := &Backend{
		cfg: cfg, binding: binding, d: d, caps: d.Capabilities(), stem: stem, wake: wake,
		pubCap: publishCap(cfg.Workers, runtime.GOMAXPROCS(0)), workers: cfg.Workers, epoch: time.Now(),
		kick: make(chan struct{}, 1), done: make(chan struct{}),
	}
	b.cond = sync.NewCond(&b.mu)
	for i := 0; i < cfg.Workers; i++ {
		go b.worker()
	}
	go b.progress()
	return b, nil
}

// publishCap is how many workers may publish at once: at most Workers-1,
// so a fetch finds a worker, and at most GOMAXPROCS-1, so publishers never
// take every CPU from a fetch; at least one.
func publishCap(workers, procs int) int { return max(1, min(workers-1, procs-1)) }

// PublishWorkers is how many of a backend's workers, of Config.Workers
// workers, may publish at once on this machine (GOMAXPROCS as it is now):
// the parallelism a publish's bandwidth is to be compared at.
func PublishWorkers(workers int) int { return publishCap(workers, runtime.GOMAXPROCS(0)) }

// BatchSize returns the rows and bytes of one driver call for rows of one
// slot of region r, and false when neither the backend nor the driver
// bounds a call. It is safe from any goroutine.
func (b *Backend) BatchSize(r *driver.Region) (rows int, bytes int64, bounded bool) {
	rows = b.rowLimit()
	if b.cfg.BytesPerBatch != NoByteBound && r.Layout.SlotBytes > 0 {
		byBytes := int(max(1, b.cfg.BytesPerBatch/r.Layout.SlotBytes))
		if rows == 0 || byBytes < rows {
			rows = byBytes
		}
	}
	if rows == 0 {
		return 0, 0, false
	}
	return rows, int64(rows) * r.Layout.SlotBytes, true
}

func (b *Backend) rowLimit() int {
	rows := b.cfg.RowsPerBatch
	if m := b.caps.MaxRowsPerOp; m > 0 && (rows == 0 || m < rows) {
		rows = m
	}
	return rows
}

// Key returns the store key of the row named name: Config.Prefix, the key
// version and hex(name) (driver.Stem.Key). Every driver call the backend
// makes uses it, so it is what to look for, or to delete, in the store.
func (b *Backend) Key(name []byte) (string, error) { return b.stem.Key(name) }

// Publish stores a view's rows. It never calls the driver: it validates,
// queues, and returns the attempt. ctx is the ctx of the attempt's driver
// calls, and its end cancels the attempt (see Contexts in the package
// doc). It returns an *InvalidSubmissionError for a view it refuses, a
// *SubmissionRejectedError once the backend takes no more work, and
// ctx.Err() when ctx has already ended; nothing reached the driver then.
// It is safe from any goroutine.
func (b *Backend) Publish(ctx context.Context, v View) (*Attempt, error) {
	return b.submit(ctx, v, driver.Hint{}, false)
}

// Fetch reads a view's rows into its spans. The hint is optional, and most
// callers give none: at most one, which goes unchanged to every get of a
// driver that declares hints and is refused (RuleHint) for any other
// driver when it is not the zero Hint. A view whose destinations overlap
// is refused (RuleOverlappingDestinations). ctx and errors are Publish's;
// it is safe from any goroutine.
func (b *Backend) Fetch(ctx context.Context, v View, hint ...driver.Hint) (*Attempt, error) {
	var h driver.Hint
	switch len(hint) {
	case 0:
	case 1:
		h = hint[0]
	default:
		return nil, &InvalidSubmissionError{Rule: driver.RuleHint, Reason: fmt.Sprintf("Fetch takes at most one hint, got %d", len(hint))}
	}
	return b.submit(ctx, v, h, true)
}

func (b *Backend) submit(ctx context.Context, v View, hint driver.Hint, fetch bool) (*Attempt, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a := &Attempt{b: b, ctx: ctx, fetch: fetch, hint: hint, done: make(chan struct{}), at: -1}
	var room [16]batchEnd // the batch ends of most views, on the stack
	rows, ends, err := b.validate(v, hint, fetch, &a.in, room[:0])
	if err != nil {
		return nil, err
	}
	if len(rows) == 1 {
		a.results = a.in.result[:]
	} else {
		a.results = make([]driver.Result, len(rows))
	}
	a.batches = cut(rows, ends, a) // outside the lock
	if ctx.Done() != nil {
		// Registered before the batches are queued, so that the attempt
		// cannot finish (and stop it) before it is set.
		a.stopCancel = afterFunc(ctx, func() { a.cancel(a.cancelCause()) })
	}
	b.mu.Lock()
	var refused *SubmissionRejectedError
	switch {
	case b.violation != "":
		refused = &SubmissionRejectedError{Reason: "the driver broke its protocol: " + b.violation, Err: ErrProtocolViolation}
	case b.closing:
		refused = &SubmissionRejectedError{Reason: "the backend is shut down", Err: ErrShutDown}
	}
	if refused != nil {
		b.mu.Unlock()
		if a.stopCancel != nil {
			a.stopCancel()
		}
		return nil, refused
	}
	if fetch {
		b.fetchQ.push(a.batches)
	} else {
		b.pubQ.push(a.batches)
	}
	a.queued = len(a.batches)
	b.stats.BatchesQueued += len(a.batches)
	b.attempts = addIndexed(b.attempts, a, (*Attempt).index)
	b.stats.Attempts++
	wanted := len(a.batches) // one worker per batch; a worker that finds more work takes it
	if !fetch {
		wanted = min(wanted, b.pubCap-b.publishing) // a worker past the cap would find nothing
	}
	for i := 0; i < wanted && i < b.idle; i++ {
		b.cond.Signal()
	}
	b.notifyLocked()
	b.mu.Unlock()
	b.wake()
	return a, nil
}

// RuleOverlappingDestinations is the Rule of an InvalidSubmissionError for
// a fetch whose rows' destinations overlap: two rows into one slot, or one
// row's spans overlapping each other. Both rows could answer READY while
// one overwrote the other's bytes, so the fetch is refused whole.
const RuleOverlappingDestinations = "overlapping_destinations"

// nameSeed seeds the hashes of names validate finds repeated keys by.
var nameSeed = maphash.MakeSeed()

// validate checks the whole view before anything is queued, with the same
// admission helpers drivers run (package rules), so a rule is written once.
// A refusal names the row (its index in the view and its key).
//
// It passes over the view once. For each row it copies the spans, makes
// the key and adds it to a rules.KeySet by a hash of its name (under one
// stem, one name is one key; the name is shorter, and in cache), and
// screens the spans for the usual view: one span a row, in bounds of a
// registered region and, for a fetch, each past the one before, so
// disjoint. Then it runs only the rules the pass did not prove:
// a view with a repeated or empty key goes through rules.AdmitKeys, one
// with a key over driver.MaxKeyBytes through rules.AdmitKeyRule, and
// one the screen did not pass through rules.AdmitSpans and admitDisjoint,
// so a refusal is theirs, naming the rule and the first row that breaks
// it. The pass also finds where each batch ends (by the row and byte
// limits), appending to ends, so that cut need not pass over the rows
// again. A view of one row of one span is copied into in, without
// allocating.
func (b *Backend) validate(v View, hint driver.Hint, fetch bool, in *inline, ends []batchEnd) ([]driver.Row, []batchEnd, error) {
	if !hint.IsZero() && !fetch {
		return nil, nil, &InvalidSubmissionError{Rule: driver.RuleHint, Reason: "a publish takes no hint"}
	}
	n := 0
	for _, vr := range v {
		n += len(vr.Spans)
	}
	var spans []driver.Span // a copy: the caller may reuse its view
	var rows []driver.Row
	if len(v) == 1 && n == 1 {
		spans, rows = in.span[:0], in.row[:]
	} else {
		spans, rows = make([]driver.Span, 0, n), make([]driver.Row, len(v))
	}
	keys := rules.NewKeySet(len(rows))
	keysOK := true // every row so far has a key no row before it has
	long := false  // some row's key is over driver.MaxKeyBytes
	// spansOK: every row so far has one valid span in a registered region
	// and, for a fetch, each span starts at or past the end of the one
	// before (so the spans in each region are in order, and disjoint);
	// region is the last span's, limit its bytes (0 until a region is
	// found registered: no span fits), and end where the next span may
	// start (a publish's stays 0: any valid offset).
	spansOK := true
	var region *driver.Region
	var limit, end int64
	maxRows, maxBytes := b.rowLimit(), b.cfg.BytesPerBatch
	start, bytes := 0, int64(0) // the batch being cut
	for i, vr := range v {
		k := len(spans)
		// The row's spans, copied, and its bytes, for the batch cut.
		var size int64
		if len(vr.Spans) == 1 { // the usual row, without append's call
			spans = spans[:k+1]
			spans[k] = vr.Spans[0]
			size = spans[k].Length
		} else {
			spans = append(spans, vr.Spans...)
		}
		rows[i] = driver.Row{Spans: spans[k:len(spans):len(spans)]}
		if len(vr.Spans) != 1 {
			size, spansOK = rows[i].Bytes(), false
		}
		if len(vr.Name) > 0 { // an empty name keeps the empty key AdmitKeys refuses
			rows[i].Key, _ = b.stem.Key(vr.Name) // the stem is checked; only an empty name fails
			long = long || len(rows[i].Key) > driver.MaxKeyBytes
		}
		if keysOK {
			keysOK = len(vr.Name) > 0 && keys.AddHashed(rows, i, maphash.Bytes(nameSeed, vr.Name)) < 0
		}
		if spansOK {
			s := spans[k]
			if s.Region != region { // nil is never registered
				spansOK = b.binding.Registered(s.Region)
				if region = s.Region; spansOK {
					limit = region.Layout.Bytes()
				}
			}
			spansOK = spansOK && s.Offset >= end && s.Length > 0 && s.Offset <= limit-s.Length
			if fetch {
				end = s.Offset + s.Length
			}
		}
		// A batch ends before a row that would take it past the row or
		// byte limit; a row larger than the byte limit goes alone.
		if k := i - start; k > 0 && ((maxRows > 0 && k >= maxRows) || bytes+size > maxBytes) {
			ends = append(ends, batchEnd{end: i, bytes: bytes})
			start, bytes = i, 0
		}
		bytes += size
	}
	keys.Release()
	ends = append(ends, batchEnd{end: len(rows), bytes: bytes})
	err := rules.AdmitRows(rows, 0)
	if err == nil {
		err = rules.AdmitHint(hint, b.caps.Hints)
	}
	if err == nil && !keysOK {
		err = rules.AdmitKeys(rows)
	}
	if err == nil && long {
		err = rules.AdmitKeyRule(rows, rules.KeyRule{}) // the bound every store's admission holds
	}
	if err == nil && !spansOK {
		err = rules.AdmitSpans(rows, b.caps.MultiSpan, 0, b.binding.registeredFunc())
		if err == nil && fetch {
			err = admitDisjoint(rows)
		}
	}
	if err != nil {
		return nil, nil, invalid(err)
	}
	return rows, ends, nil
}

// invalid is a rule's refusal as the backend returns it: an
// *InvalidSubmissionError naming the rule and the row.
func invalid(err error) *InvalidSubmissionError {
	var rej *driver.RejectedError
	if errors.As(err, &rej) {
		return &InvalidSubmissionError{Rule: rej.Rule, Reason: rej.Reason}
	}
	return &InvalidSubmissionError{Reason: err.Error()}
}

// admitDisjoint refuses rows whose spans overlap: a fetch writes every span,
// so two spans sharing a byte would leave one row's READY bytes overwritten
// by another's. Spans must be valid (AdmitSpans ran first).
func admitDisjoint(rows []driver.Row) error {
	if ascendingInOneRegion(rows) {
		return nil // already in order, each span past the last: disjoint
	}
	type at struct {
		s        driver.Span
		region   int // the region's index, in order of first use
		row, idx int
	}
	var spans []at
	region := map[*driver.Region]int{}
	for i, r := range rows {
		for j, s := range r.Spans {
			k, ok := region[s.Region]
			if !ok {
				k = len(region)
				region[s.Region] = k
			}
			spans = append(spans, at{s, k, i, j})
		}
	}
	if len(spans) < 2 {
		return nil
	}
	slices.SortFunc(spans, func(x, y at) int {
		if c := cmp.Compare(x.region, y.region); c != 0 {
			return c
		}
		return cmp.Compare(x.s.Offset, y.s.Offset)
	})
	last := spans[0]
	for _, a := range spans[1:] {
		if a.s.Region == last.s.Region && a.s.Offset < last.s.Offset+last.s.Length {
			first, second := last, a
			if second.row < first.row || (second.row == first.row && second.idx < first.idx) {
				first, second = second, first
			}
			where := fmt.Sprintf("region %q [%d, %d) and [%d, %d)", a.s.Region.Name,
				first.s.Offset, first.s.Offset+first.s.Length, second.s.Offset, second.s.Offset+second.s.Length)
			if first.row == second.row {
				return driver.Reject(RuleOverlappingDestinations, "row %d (%q) has spans %d and %d overlapping in %s",
					first.row, rows[first.row].Key, first.idx, second.idx, where)
			}
			return driver.Reject(RuleOverlappingDestinations, "rows %d (%q) and %d (%q) have overlapping destinations in %s",
				first.row, rows[first.row].Key, second.row, rows[second.row].Key, where)
		}
		last = a // no overlap so far: sorted, disjoint spans end in order
	}
	return nil
}

// ascendingInOneRegion reports whether every span lies in one region and
// starts at or past the end of the span before it, in view order: the
// usual view (rows into consecutive slots), which admitDisjoint then
// admits without sorting or allocating.
func ascendingInOneRegion(rows []driver.Row) bool {
	var region *driver.Region
	var end int64
	for _, r := range rows {
		for _, s := range r.Spans {
			if region == nil {
				region = s.Region
			} else if s.Region != region || s.Offset < end {
				return false
			}
			end = s.Offset + s.Length
		}
	}
	return true
}

// batchEnd is where one batch of a view ends: the index past its last row,
// and its payload bytes.
type batchEnd struct {
	end   int
	bytes int64
}

// cut makes a's batches of rows, ending where validate found they end. A
// batch's rows are a slice of rows: consecutive, never copied. The batches
// take two allocations whatever their number: the batches, and the
// pointers to them; none when there is one, which the Attempt holds.
func cut(rows []driver.Row, ends []batchEnd, a *Attempt) []*batch {
	var slab []batch
	var out []*batch
	if len(ends) == 1 {
		slab, out = a.in.batch[:], a.in.bp[:]
	} else {
		slab, out = make([]batch, len(ends)), make([]*batch, len(ends))
	}
	start := 0
	for k, e := range ends {
		slab[k] = batch{a: a, rows: rows[start:e.end:e.end], first: start, bytes: e.bytes, openAt: -1, watchAt: -1}
		out[k] = &slab[k]
		start = e.end
	}
	return out
}

// notifyLocked wakes a Shutdown waiting for a state change. b.mu is held.
// It does not kick the progress goroutine: kickLocked does, when there is
// something for it to do.
func (b *Backend) notifyLocked() {
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
}

// kickProgress ends the progress goroutine's wait. It is safe from any
// goroutine, with or without b.mu, and never blocks.
func (b *Backend) kickProgress() {
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

// Stats returns a snapshot of the counters. It is safe from any goroutine.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.stats
	s.CallsOpen = len(b.open)
	now := time.Now()
	for _, bt := range b.open {
		if age := now.Sub(bt.callStart.Time); age > s.OldestCall {
			s.OldestCall = age
		}
	}
	s.ProtocolViolation = b.violation
	s.ShutDown = b.finished
	return s
}

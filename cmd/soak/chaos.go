package main

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	memorygen "github.com/kvblob/kvblob/generated/memory"
	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

// dice is a seeded generator shared by goroutines.
type dice struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func (d *dice) roll(p float64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rng.Float64() < p
}

func (d *dice) intn(n int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rng.Intn(n)
}

func (d *dice) dur(max time.Duration) time.Duration { return time.Duration(d.intn(int(max))) }

var errChaos = errors.New("soak: the SDK raised")

// chaosSDK wraps a fake Mooncake client: it delays calls, raises before or
// after the real call, drops an answer, replaces answers with random error
// codes, holds scatters past the discard timeout, and makes gets answer
// TRANSFER_FAIL while their transfer still writes. It never fakes success:
// a lying "OK" is outside any contract.
type chaosSDK struct {
	inner *fakesdk.Client
	m     *fakesdk.Master
	d     *dice
	t     *tally
	// registerFaults counts the registers it failed.
	registerFaults atomic.Int32
}

var _ mooncake.SDK = (*chaosSDK)(nil)

func (c *chaosSDK) Version() string { return c.inner.Version() }

// RegisterBuffer and UnregisterBuffer fail now and then, as the real SDK
// can: a non-OK code without effect ("refused"), a raise without effect
// ("raised"), or (register only) a raise after the call took effect
// ("raised_after"). A
// raise leaves the caller unable to tell whether the buffer is registered,
// so only a refusal may be reported as a rejection, and memory the SDK may
// still hold must never come back to its lender (the epoch checks both).
func (c *chaosSDK) RegisterBuffer(b mooncake.Buffer) (int64, error) {
	return c.bufferCall("register", b, c.inner.RegisterBuffer)
}

func (c *chaosSDK) UnregisterBuffer(b mooncake.Buffer) (int64, error) {
	return c.bufferCall("unregister", b, c.inner.UnregisterBuffer)
}

// bufferRate is how often a register or unregister fails: an epoch makes
// one of each, so it is high enough for a short soak to see every kind.
const bufferRate = 0.3

func (c *chaosSDK) bufferCall(call string, b mooncake.Buffer, real func(mooncake.Buffer) (int64, error)) (int64, error) {
	if !c.d.roll(bufferRate) {
		return real(b)
	}
	if call == "register" {
		c.registerFaults.Add(1)
	}
	// An unregister that took effect and raised makes the SDK refuse every
	// later one (not registered): the backend stops asking after a bounded
	// number of refusals and keeps the hold, so the epoch ends with its
	// region pinned.
	switch c.d.intn(3) {
	case 0:
		c.t.fault(call + "_refused")
		codes := mooncakegen.Mooncake0313().Codes()
		return int64(codes[1+c.d.intn(len(codes)-1)]), nil // any code but OK
	case 1:
		c.t.fault(call + "_raised")
		return 0, errChaos
	default:
		c.t.fault(call + "_raised_after")
		if _, err := real(b); err != nil {
			return 0, err
		}
		return 0, errChaos
	}
}

func (c *chaosSDK) Close() error { return c.inner.Close() }

// call runs one batch call through the chaos.
func (c *chaosSDK) call(n int, real func() ([]int64, error)) ([]int64, error) {
	if c.d.roll(0.05) {
		c.t.fault("delay")
		time.Sleep(c.d.dur(300 * time.Microsecond)) // the store's latency, not synchronisation
	}
	if c.d.roll(0.005) {
		c.t.fault("raise_before_call")
		return nil, errChaos
	}
	out, err := real()
	if err != nil {
		return out, err
	}
	if c.d.roll(0.005) {
		c.t.fault("raise_after_call")
		return nil, errChaos
	}
	if len(out) > 0 && c.d.roll(0.005) {
		c.t.fault("wrong_answer_count")
		return out[:len(out)-1], nil
	}
	for i := range out {
		// TRANSFER_FAIL is the one answer that keeps access (the transfer
		// may still run): replacing it would be a lie about memory, which no
		// contract can survive, not a fault.
		if out[i] != int64(mooncakegen.TransferFail) && c.d.roll(0.02) {
			c.t.fault("random_code")
			codes := mooncakegen.Mooncake0313().Codes()
			out[i] = int64(codes[1+c.d.intn(len(codes)-1)]) // any code but OK
		}
	}
	return out, nil
}

func (c *chaosSDK) BatchPutSessionStart(keys []string, sizes []int64) ([]int64, error) {
	return c.call(len(keys), func() ([]int64, error) { return c.inner.BatchPutSessionStart(keys, sizes) })
}

func (c *chaosSDK) BatchPutFromMultiBufferRanges(keys []string, bufs [][]mooncake.Buffer) ([]int64, error) {
	if c.d.roll(0.01) {
		c.t.fault("put_stuck_past_discard")
		c.m.Advance(fakesdk.DefaultDiscard + time.Second)
		time.Sleep(c.d.dur(time.Millisecond))
	}
	return c.call(len(keys), func() ([]int64, error) { return c.inner.BatchPutFromMultiBufferRanges(keys, bufs) })
}

func (c *chaosSDK) BatchPutSessionEnd(keys []string) ([]int64, error) {
	return c.call(len(keys), func() ([]int64, error) { return c.inner.BatchPutSessionEnd(keys) })
}

func (c *chaosSDK) BatchPutSessionRevoke(keys []string) ([]int64, error) {
	return c.call(len(keys), func() ([]int64, error) { return c.inner.BatchPutSessionRevoke(keys) })
}

func (c *chaosSDK) BatchGetInto(keys []string, bufs []mooncake.Buffer) ([]int64, error) {
	for _, k := range keys {
		if c.d.roll(0.02) {
			c.t.fault("transfer_fail_still_writing")
			c.m.TransferStillRunning(k, time.Microsecond+c.d.dur(2*time.Millisecond))
		}
	}
	out, err := c.call(len(keys), func() ([]int64, error) { return c.inner.BatchGetInto(keys, bufs) })
	if err != nil || len(out) != len(keys) {
		return out, err
	}
	for i, n := range out {
		// A short read: the SDK answers fewer bytes than the object, and
		// only those arrived (the rest of the destination is zero), so a
		// driver that calls it READY delivers wrong bytes. (Whole reads are
		// rare, most gets miss, hence the high rate.)
		if n > 0 && n <= bufs[i].Len && c.d.roll(0.2) {
			c.t.fault("short_read")
			out[i] = shortRead(unsafe.Slice((*byte)(addrPointer(bufs[i].Addr)), n), int64(c.d.intn(int(n))))
		}
	}
	return out, nil
}

// shortRead makes b a read that stopped after short bytes: the rest is
// zero. It returns short.
func shortRead(b []byte, short int64) int64 {
	clear(b[short:])
	return short
}

func addrPointer(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }

func (c *chaosSDK) BatchIsExist(keys []string) ([]int64, error) {
	return c.call(len(keys), func() ([]int64, error) { return c.inner.BatchIsExist(keys) })
}

// chaosMemory wraps a background memory driver: it injects random codes
// into the store, holds calls inside it briefly, loses access evidence, and
// now and then answers a poll with the wrong row count.
type chaosMemory struct {
	*memory.Driver
	d *dice
	t *tally

	wg sync.WaitGroup // the release timers of held calls
}

func (c *chaosMemory) stage(call string, rows []driver.Row) {
	st := c.Store()
	for _, r := range rows {
		if c.d.roll(0.02) {
			c.t.fault("random_code")
			codes := memorygen.Memory().Codes()
			st.Inject(call, r.Key, codes[1+c.d.intn(len(codes)-1)])
		}
		if c.d.roll(0.02) {
			c.t.fault("delay")
			_, release := st.Hold(call, r.Key)
			c.wg.Add(1)
			time.AfterFunc(c.d.dur(time.Millisecond), func() { release(); c.wg.Done() })
		}
	}
	if c.d.roll(0.005) {
		c.t.fault("lost_access_evidence")
		c.LoseEvidenceNext()
	}
}

func (c *chaosMemory) wrap(rows []driver.Row, op driver.Operation, err error) (driver.Operation, error) {
	if err != nil {
		return op, err
	}
	if c.d.roll(0.02) {
		c.t.fault("access_after_results")
		return c.linger(rows, op), nil
	}
	if !c.d.roll(0.002) {
		return op, err
	}
	c.t.fault("wrong_answer_count")
	return shortPoll{op}, nil
}

// linger keeps an operation's access for a while after its results are
// final, and when it lets go, writes once more what its rows' spans held
// when the results were read (a transfer engine finishing late): a backend
// that reused the slots before the access ended sees them overwritten.
func (c *chaosMemory) linger(rows []driver.Row, op driver.Operation) driver.Operation {
	return &lingerOp{Operation: op, rows: rows, hold: c.d.dur(2 * time.Millisecond), wg: &c.wg}
}

// lingerOp reports its access ended only after hold has passed since its
// results were first seen final and its inner access ended.
type lingerOp struct {
	driver.Operation
	rows []driver.Row
	hold time.Duration

	mu       sync.Mutex
	snap     [][]byte
	released bool
	wg       *sync.WaitGroup // added to when the timer starts: a poll, which comes before the epoch waits
}

func (l *lingerOp) Poll() ([]driver.Result, bool) {
	res, done := l.Operation.Poll()
	if done && l.Operation.AccessEnded() {
		l.mu.Lock()
		if l.snap == nil && !l.released {
			for _, r := range l.rows {
				for _, s := range r.Spans {
					l.snap = append(l.snap, append([]byte(nil), s.Bytes()...))
				}
			}
			l.wg.Add(1)
			time.AfterFunc(l.hold, l.release)
		}
		l.mu.Unlock()
	}
	return res, done
}

func (l *lingerOp) release() {
	l.mu.Lock()
	k := 0
	for _, r := range l.rows {
		for _, s := range r.Spans {
			copy(s.Bytes(), l.snap[k])
			k++
		}
	}
	l.released = true
	l.mu.Unlock()
	l.wg.Done()
}

func (l *lingerOp) AccessEnded() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.released
}

// AccessUnprovable is the inner operation's: a lingering access ends,
// only later.
func (l *lingerOp) AccessUnprovable() bool { return !l.AccessEnded() && l.Operation.AccessUnprovable() }

func (c *chaosMemory) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	c.stage(memory.CallPut, rows)
	op, err := c.Driver.Put(ctx, rows)
	return c.wrap(rows, op, err)
}

func (c *chaosMemory) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	c.stage(memory.CallGet, rows)
	op, err := c.Driver.Get(ctx, rows, hint)
	return c.wrap(rows, op, err)
}

// shortPoll answers one result fewer than its rows.
type shortPoll struct{ driver.Operation }

func (s shortPoll) Poll() ([]driver.Result, bool) {
	res, done := s.Operation.Poll()
	if done && len(res) > 0 {
		return res[:len(res)-1], true
	}
	return res, done
}

package soak

import (
	"context"
	"errors"
	"math/rand"
	"sync"
	"time"

	memgen "github.com/kvblob/kvblob/generated/memory"
	mcgen "github.com/kvblob/kvblob/generated/mooncake"
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
}

var _ mooncake.SDK = (*chaosSDK)(nil)

func (c *chaosSDK) Version() string { return c.inner.Version() }
func (c *chaosSDK) RegisterBuffer(b mooncake.Buffer) (int64, error) {
	return c.inner.RegisterBuffer(b)
}
func (c *chaosSDK) UnregisterBuffer(b mooncake.Buffer) (int64, error) {
	return c.inner.UnregisterBuffer(b)
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
		if out[i] != int64(mcgen.TransferFail) && c.d.roll(0.02) {
			c.t.fault("random_code")
			out[i] = int64(mcgen.Codes[1+c.d.intn(len(mcgen.Codes)-1)]) // any code but OK
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
	return c.call(len(keys), func() ([]int64, error) { return c.inner.BatchGetInto(keys, bufs) })
}

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
			st.Inject(call, r.Key, memgen.Codes[1+c.d.intn(len(memgen.Codes)-1)])
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

func (c *chaosMemory) wrap(op driver.Operation, err error) (driver.Operation, error) {
	if err != nil || !c.d.roll(0.002) {
		return op, err
	}
	c.t.fault("wrong_answer_count")
	return shortPoll{op}, nil
}

func (c *chaosMemory) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	c.stage(memory.CallPut, rows)
	return c.wrap(c.Driver.Put(ctx, rows))
}

func (c *chaosMemory) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	c.stage(memory.CallGet, rows)
	return c.wrap(c.Driver.Get(ctx, rows, hint))
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

package conformance_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memorykit"
)

// lateTransfers wraps the memory driver as a store whose failed reads go
// on after their answer, as a Mooncake transfer that answered
// TRANSFER_FAIL does: a get the memory driver answers MISS answers FAULT
// instead, keeps its access, and writes its destination (bytes of its own)
// once the next get has read; its access ends then. Within the contract:
// a FAULT promises nothing about the destination, and the caller may not
// hand that memory to another operation until the access ended.
type lateTransfers struct {
	driver.Driver

	mu      sync.Mutex
	pending []*lateGet // gets whose transfer still runs
}

// lateGet is one get of lateTransfers: done at once, its access open
// while its transfer runs.
type lateGet struct {
	res   []driver.Result
	rows  []driver.Row
	ended atomic.Bool
}

func (o *lateGet) Poll() ([]driver.Result, bool) { return o.res, true }
func (o *lateGet) AccessEnded() bool             { return o.ended.Load() }
func (*lateGet) AccessUnprovable() bool          { return false }
func (*lateGet) Cancel()                         {}

func (d *lateTransfers) As(target any) bool { return driver.As(d.Driver, target) }

func (d *lateTransfers) Get(ctx context.Context, rows []driver.Row, h driver.Hint) (driver.Operation, error) {
	op, err := d.Driver.Get(ctx, rows, h)
	if err != nil {
		return nil, err
	}
	res, _ := op.Poll() // the blocking memory driver is done at once
	d.mu.Lock()
	landing := d.pending
	d.pending = nil
	d.mu.Unlock()
	for _, g := range landing { // the earlier transfers land, after this get read
		for _, r := range g.rows {
			for _, s := range r.Spans {
				conformance.Fill(s, 0x5A)
			}
		}
		g.ended.Store(true)
	}
	g := &lateGet{res: append([]driver.Result(nil), res...)}
	for i, r := range res {
		if r.Status == driver.Miss {
			g.res[i] = driver.FaultResult(1, "the transfer failed; it goes on until the access ends")
			g.rows = append(g.rows, rows[i])
		}
	}
	if g.rows == nil {
		g.ended.Store(true)
		return g, nil
	}
	d.mu.Lock()
	d.pending = append(d.pending, g)
	d.mu.Unlock()
	return g, nil
}

// TestEachGetOfACheckReadsIntoADestinationOfItsOwn: a check never hands a
// get a destination an earlier get of the check may still write, so a
// store whose failed reads go on writing after their answer (within the
// contract: the access has not ended) passes. The faulted put's check
// reads the key twice, once after the failed put and once after its
// retry; each get reads into its own slot, so the first get's late
// transfer cannot land over the bytes the second delivered. (Tried: the
// first get reading into the second's slot, the check's 'h.Row(key, 1)'
// as 'h.Row(key, 2)', fails the sound store here: READY, but the bytes
// differ.)
func TestEachGetOfACheckReadsIntoADestinationOfItsOwn(t *testing.T) {
	check := checkNamed(t, conformance.Checks(), "a_faulted_put_leaves_the_key_writable")
	factory := func(conformance.T) driver.Driver { return &lateTransfers{Driver: memory.New(memory.Options{})} }
	o := conformance.RunRecorded(check, factory, conformance.Suite{Scenarios: memorykit.Scenarios()})
	assert.True(t, o.Passed, "a store whose failed reads write on until their access ends did not pass (skipped=%v): %s", o.Skipped, o.Reason)
}

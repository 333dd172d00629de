package conformance_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
)

// keepsFirst wraps the memory driver as a store that keeps the first
// object put under a key: a later put of the key answers READY and stores
// nothing. A get the store cannot answer READY (the length is not the
// stored object's) answers what the memory driver answers, or with fault
// a FAULT, or with foreign READY anyway, its destination filled with
// bytes no put stored. With evicts it declares Evicts.
type keepsFirst struct {
	driver.Driver
	fault, foreign, evicts bool

	mu     sync.Mutex
	stored map[string]bool
}

func (d *keepsFirst) Capabilities() driver.Capabilities {
	c := d.Driver.Capabilities()
	c.Evicts = d.evicts
	return c
}

func (d *keepsFirst) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	d.mu.Lock()
	again := d.stored[rows[0].Key]
	for _, r := range rows {
		d.stored[r.Key] = true
	}
	d.mu.Unlock()
	if again {
		return doneReady(len(rows)), nil
	}
	return d.Driver.Put(ctx, rows)
}

func (d *keepsFirst) Get(ctx context.Context, rows []driver.Row, h driver.Hint) (driver.Operation, error) {
	op, err := d.Driver.Get(ctx, rows, h)
	if err != nil {
		return nil, err
	}
	res, done := op.Poll() // the blocking memory driver is done at once
	if !done || !d.fault && !d.foreign {
		return op, nil
	}
	out := make([]driver.Result, len(res))
	for i, r := range res {
		switch {
		case r.Status == driver.Ready:
			out[i] = r
		case d.foreign:
			for _, s := range rows[i].Spans {
				conformance.Fill(s, 0xEE)
			}
			out[i] = driver.Result{Status: driver.Ready}
		default:
			out[i] = driver.FaultResult(5, "the object has another length")
		}
	}
	return missOp(out), nil
}

// doneReady is an operation done at once, every row READY.
func doneReady(n int) driver.Operation {
	res := make([]driver.Result, n)
	for i := range res {
		res[i] = driver.Result{Status: driver.Ready}
	}
	return missOp(res)
}

// TestAReadyPutOverAnotherLengthCatchesEachLie: a store whose put over a
// stored key of another length answers READY without storing fails the
// check, which says what the get then showed: not READY (a FAULT is no
// eviction, even from a store that declares Evicts), or READY with bytes
// no put stored.
func TestAReadyPutOverAnotherLengthCatchesEachLie(t *testing.T) {
	check := checkNamed(t, conformance.Checks(), "a_READY_put_over_another_length_stored_the_new_bytes")
	for _, c := range []struct {
		name                   string
		fault, foreign, evicts bool
		says                   string
	}{
		{"as the memory driver answers", false, false, false, "READY promises the new bytes are stored"},
		{"a FAULT", true, false, false, "READY promises the new bytes are stored"},
		{"a FAULT from a store that evicts", true, false, true, "READY promises the new bytes are stored"},
		{"READY with foreign bytes", false, true, false, "answered READY with bytes no put stored"},
	} {
		t.Run(c.name, func(t *testing.T) {
			factory := func(conformance.T) driver.Driver {
				return &keepsFirst{Driver: memory.New(memory.Options{}), fault: c.fault, foreign: c.foreign, evicts: c.evicts, stored: map[string]bool{}}
			}
			o := conformance.RunRecorded(check, factory, conformance.Suite{})
			assert.False(t, o.Passed || o.Skipped, "the store was not caught")
			assert.Contains(t, o.Reason, c.says)
			assert.Contains(t, o.Reason, ": READY, ", "the put's answer is named")
		})
	}
}

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
// nothing. With foreign, a get the store cannot answer READY (the length
// is not the stored object's) answers READY anyway, with its destination
// filled with bytes no put stored.
type keepsFirst struct {
	driver.Driver
	foreign bool

	mu     sync.Mutex
	stored map[string]bool
}

func (d *keepsFirst) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	d.mu.Lock()
	again := d.stored[rows[0].Key]
	for _, r := range rows {
		d.stored[r.Key] = true
	}
	d.mu.Unlock()
	if again {
		return answered(rows, func(int) {}), nil
	}
	return d.Driver.Put(ctx, rows)
}

func (d *keepsFirst) Get(ctx context.Context, rows []driver.Row, h driver.Hint) (driver.Operation, error) {
	op, err := d.Driver.Get(ctx, rows, h)
	if err != nil {
		return nil, err
	}
	res, done := op.Poll() // the blocking memory driver is done at once
	if !done || !d.foreign {
		return op, nil
	}
	return answered(rows, func(i int) {
		if res[i].Status != driver.Ready {
			for _, s := range rows[i].Spans {
				conformance.Fill(s, 0xEE)
			}
		}
	}), nil
}

// answered is an operation done at once, every row READY, after fill ran
// for each row.
func answered(rows []driver.Row, fill func(i int)) driver.Operation {
	res := make([]driver.Result, len(rows))
	for i := range res {
		fill(i)
		res[i] = driver.Result{Status: driver.Ready}
	}
	return missOp(res)
}

// TestAReadyPutOverAnotherLengthCatchesEachLie: a store whose put over a
// stored key of another length answers READY without storing fails the
// check, which says what the get then showed: not READY (not declaring
// Evicts, so no MISS is tolerated), or READY with bytes no put stored.
func TestAReadyPutOverAnotherLengthCatchesEachLie(t *testing.T) {
	var check conformance.Check
	for _, c := range conformance.Checks() {
		if c.Name == "a_READY_put_over_another_length_stored_the_new_bytes" {
			check = c
		}
	}
	for _, c := range []struct {
		foreign bool
		says    string
	}{
		{false, "READY promises the new bytes are stored"},
		{true, "answered READY with bytes no put stored"},
	} {
		factory := func(conformance.T) driver.Driver {
			return &keepsFirst{Driver: memory.New(memory.Options{}), foreign: c.foreign, stored: map[string]bool{}}
		}
		o := conformance.RunRecorded(check, factory, conformance.Suite{})
		assert.False(t, o.Passed || o.Skipped, "foreign=%v: the store was not caught", c.foreign)
		assert.Contains(t, o.Reason, c.says, "foreign=%v", c.foreign)
		assert.Contains(t, o.Reason, ": READY, ", "foreign=%v: the put's answer is named", c.foreign)
	}
}

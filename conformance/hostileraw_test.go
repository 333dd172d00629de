package conformance_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
)

// missesRaw wraps the memory driver as a store that answers MISS for
// every get the memory driver does not answer READY (a neighbour's object
// it cannot read as a row), and, with writes, first writes the
// destination anyway.
type missesRaw struct {
	driver.Driver
	writes bool
}

// As reaches the memory driver, where the neighbour writes.
func (d *missesRaw) As(target any) bool { return driver.As(d.Driver, target) }

func (d *missesRaw) Get(ctx context.Context, rows []driver.Row, h driver.Hint) (driver.Operation, error) {
	op, err := d.Driver.Get(ctx, rows, h)
	if err != nil {
		return nil, err
	}
	res, done := op.Poll() // the blocking memory driver is done at once
	if !done {
		return op, nil
	}
	out := make([]driver.Result, len(res))
	for i, r := range res {
		out[i] = r
		if r.Status != driver.Ready {
			if d.writes {
				for _, s := range rows[i].Spans {
					conformance.Fill(s, 3)
				}
			}
			out[i] = driver.Result{Status: driver.Miss}
		}
	}
	return missOp(out), nil
}

// TestHostileRawHoldsAMissToItsDestination: a store that answers MISS for
// a neighbour's object passes the raw-object check when it leaves the
// destination untouched, and fails it, saying so, when it wrote it.
func TestHostileRawHoldsAMissToItsDestination(t *testing.T) {
	for _, writes := range []bool{false, true} {
		f := func(conformance.T) driver.Driver {
			return &missesRaw{Driver: memory.New(memory.Options{}), writes: writes}
		}
		check := checkNamed(t, conformance.HostileChecks(pairNeighbour{open: f}), conformance.HostileRawName)
		o := conformance.RunRecorded(check, f, conformance.Suite{})
		if !writes {
			assert.True(t, o.Passed, "a MISS that left the destination untouched failed: skipped=%v %s", o.Skipped, o.Reason)
			continue
		}
		assert.False(t, o.Passed || o.Skipped, "a MISS that wrote the destination was not caught")
		assert.Contains(t, o.Reason, "MISS, but the destination was written")
	}
}

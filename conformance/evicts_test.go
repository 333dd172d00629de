package conformance_test

import (
	"context"
	"sync"
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
)

// evicting wraps the memory driver as a store that evicts: the first get
// of each key (or, with always, every get) answers MISS without touching
// the destination, as if the object had been dropped to make room. A put
// after an eviction stores the row again.
type evicting struct {
	driver.Driver
	declares, always bool

	mu      sync.Mutex
	evicted map[string]bool
}

func (d *evicting) Capabilities() driver.Capabilities {
	c := d.Driver.Capabilities()
	c.Evicts = d.declares
	return c
}

func (d *evicting) Get(ctx context.Context, rows []driver.Row, h driver.Hint) (driver.Operation, error) {
	d.mu.Lock()
	evict := d.always || !d.evicted[rows[0].Key]
	if !d.always {
		for _, r := range rows {
			d.evicted[r.Key] = true
		}
	}
	d.mu.Unlock()
	if !evict {
		return d.Driver.Get(ctx, rows, h)
	}
	res := make([]driver.Result, len(rows))
	for i := range res {
		res[i] = driver.Result{Status: driver.Miss}
	}
	return missOp(res), nil
}

type missOp []driver.Result

func (o missOp) Poll() ([]driver.Result, bool) { return o, true }
func (missOp) AccessEnded() bool               { return true }
func (missOp) AccessUnprovable() bool          { return false }
func (missOp) Cancel()                         {}

// TestEvictsTolerance: a store that evicts a READY row passes each check
// that reads a READY row back only when it declares Evicts, and a store
// that declares Evicts but keeps nothing (every get a MISS, even right
// after a put) still fails the round trip.
func TestEvictsTolerance(t *testing.T) {
	names := []string{
		"round_trip_is_byte_for_byte",
		"cancel_yields_CANCELLED_only_for_rows_that_never_started",
		"a_READY_put_over_another_length_stored_the_new_bytes",
	}
	checks := conformance.Checks()
	factory := func(declares, always bool) conformance.Factory {
		return func(conformance.T) driver.Driver {
			return &evicting{Driver: memory.New(memory.Options{}), declares: declares, always: always, evicted: map[string]bool{}}
		}
	}
	s := conformance.Suite{}
	for _, name := range names {
		c := checkNamed(t, checks, name)
		if o := conformance.RunRecorded(c, factory(true, false), s); !o.Passed {
			t.Errorf("%s: a store that declares Evicts and evicted a row once failed: %s", name, o.Reason)
		}
		if o := conformance.RunRecorded(c, factory(false, false), s); o.Passed || o.Skipped {
			t.Errorf("%s: a store that evicted a READY row without declaring Evicts was not caught", name)
		}
	}
	if o := conformance.RunRecorded(checkNamed(t, checks, names[0]), factory(true, true), s); o.Passed || o.Skipped {
		t.Error("a store that declares Evicts but keeps nothing was not caught")
	}
}

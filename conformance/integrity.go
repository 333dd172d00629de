package conformance

import (
	"github.com/kvblob/kvblob/runtime/driver"
)

// Foreign plants, under key, the row another writer without the reader's
// row key would store: payload followed by a valid unkeyed trailer (what
// anyone who can write to the store can compute). It is how a store's test
// kit stages a poisoned row.
type Foreign func(d driver.Driver, key string, payload []byte) error

// Integrity is how a suite runs the integrity check: over drivers whose
// factory turns a keyed integrity check on, with rows another writer
// stored planted by Plant.
type Integrity struct {
	Factory Factory
	Plant   Foreign
}

// IntegrityCheckName names the integrity check, for its broken twin.
const IntegrityCheckName = "a_foreign_row_with_a_valid_unkeyed_trailer_is_a_fault"

// integrityCheck is the check for drivers whose factory turns a keyed
// integrity check on: the driver's own rows round-trip READY, and a row
// another writer stored with a valid unkeyed trailer reads as a FAULT with
// the destination untouched, never READY and never MISS. It runs on the
// drivers of the suite's Integrity.Factory.
func integrityCheck(in *Integrity) Check {
	return Check{Name: IntegrityCheckName, Group: Data, factory: in.Factory, Run: func(h *Harness, _ Scenarios) {
		t := h.T
		own := h.stored(h.Key("own"), 0, 7)
		dst := h.Row(own.Key, 1)
		res, _ := h.Get(driver.Hint{}, dst)
		h.readBack(own, dst, res[0])

		key := h.Key("foreign")
		payload := make([]byte, RowBytes)
		for i := range payload {
			payload[i] = byte(i*7 + 1)
		}
		if err := in.Plant(h.D, key, payload); err != nil {
			t.Fatalf("planting another writer's row: %v", err)
		}
		row := h.Row(key, 2)
		h.Dest(row)
		before := Snapshot(row)
		res, _ = h.Get(driver.Hint{}, row)
		if res[0].Status != driver.Fault {
			t.Errorf("a row another writer stored with a valid unkeyed trailer: got %v, want FAULT (integrity is on)", res[0])
		}
		if d := differs(before, Snapshot(row)); d != "" {
			t.Errorf("a row that failed its integrity check wrote its destination: %s", d)
		}
	}}
}

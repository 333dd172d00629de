package conformance_test

import (
	"context"
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
	"github.com/kvblob/kvblob/stores/memory"
)

// keyRule is the key rule of a memcached-like spec, at the least limit a
// spec may give (9 bytes): no spaces, control bytes or other than ASCII,
// well-formed keys.
var keyRule = rules.KeyRule{MaxBytes: 9, Refuse: rules.KeySpace | rules.KeyControl | rules.KeyNonASCII, WellFormed: true}

// keyCases are the admission cases gen derives from such a keys block.
var keyCases = []conformance.Case{
	{ID: "keys/at-limit", Key: conformance.KeyAtLimit, KeyBytes: 9, Stageable: true},
	{ID: "keys/over-limit", Key: conformance.KeyOverLimit, KeyBytes: 10, Rejected: driver.RuleKeyTooLong, Stageable: true},
	{ID: "keys/space", Key: conformance.KeyWithSpace, Rejected: driver.RuleKeyBytes, Stageable: true},
	{ID: "keys/control", Key: conformance.KeyWithControl, Rejected: driver.RuleKeyBytes, Stageable: true},
	{ID: "keys/non-ascii", Key: conformance.KeyWithNonASCII, Rejected: driver.RuleKeyBytes, Stageable: true},
	{ID: "keys/dot-segment", Key: conformance.KeyDotSegment, Rejected: driver.RuleKeyFormat, Stageable: true},
	{ID: "keys/dotdot-segment", Key: conformance.KeyDotDotSegment, Rejected: driver.RuleKeyFormat, Stageable: true},
}

// admitting wraps the memory driver with a key rule run before it, as a
// generated Admission runs it.
func admitting(k rules.KeyRule) conformance.Factory {
	return func(conformance.T) driver.Driver { return keyed{memory.New(memory.Options{}), k} }
}

type keyed struct {
	driver.Driver
	k rules.KeyRule
}

func (d keyed) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	if err := rules.AdmitKeyRule(rows, d.k); err != nil {
		return nil, err
	}
	return d.Driver.Put(ctx, rows)
}

func (d keyed) Get(ctx context.Context, rows []driver.Row, h driver.Hint) (driver.Operation, error) {
	if err := rules.AdmitKeyRule(rows, d.k); err != nil {
		return nil, err
	}
	return d.Driver.Get(ctx, rows, h)
}

// TestKeyCases: a driver that enforces the key rule passes every admission
// case; one that enforces none, one whose limit is off by one either way,
// and one that names another rule each fail the case they break.
func TestKeyCases(t *testing.T) {
	s := conformance.Suite{Cases: keyCases, Stage: func(*conformance.Harness, conformance.Case, string) error {
		t.Error("an admission case asked the stager to stage a call")
		return nil
	}}
	checks := map[string]conformance.Check{}
	for _, c := range s.Checks() {
		checks[c.Name] = c
	}
	for _, k := range keyCases {
		c, ok := checks[k.ID]
		if !ok {
			t.Fatalf("the suite has no check %q", k.ID)
		}
		if o := conformance.RunRecorded(c, admitting(keyRule), s); !o.Passed {
			t.Errorf("%s: the sound driver failed: %s", k.ID, o.Reason)
		}
	}
	lax := keyRule
	lax.MaxBytes++
	strict := keyRule
	strict.MaxBytes--
	for _, b := range []struct {
		name string
		rule rules.KeyRule
		ids  []string
	}{
		{"no key rule", rules.KeyRule{}, []string{"keys/over-limit", "keys/space", "keys/control", "keys/non-ascii", "keys/dot-segment", "keys/dotdot-segment"}},
		{"limit one over", lax, []string{"keys/over-limit"}},
		{"limit one under", strict, []string{"keys/at-limit"}},
		{"spaces admitted", rules.KeyRule{MaxBytes: 9, Refuse: rules.KeyControl | rules.KeyNonASCII, WellFormed: true}, []string{"keys/space"}},
		{"format checked before bytes", rules.KeyRule{MaxBytes: 9, WellFormed: true}, []string{"keys/space", "keys/control", "keys/non-ascii"}},
	} {
		for _, id := range b.ids {
			if o := conformance.RunRecorded(checks[id], admitting(b.rule), s); o.Passed || o.Skipped {
				t.Errorf("%s: %s was not caught (passed=%v skipped=%v)", b.name, id, o.Passed, o.Skipped)
			}
		}
	}
}

package conformance_test

import (
	"context"
	"strings"
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

// boundedKeys is a memory driver whose store refuses keys over
// conformance.MaxSuiteKeyBytes bytes and those holding a space or a
// control byte, as memcached's does.
func boundedKeys(t conformance.T) driver.Driver {
	return memKeyed{keyed{memory.New(memory.Options{}), rules.KeyRule{MaxBytes: conformance.MaxSuiteKeyBytes, Refuse: rules.KeySpace | rules.KeyControl}}}
}

// memKeyed lets the memory kit's scenarios and neighbour reach the memory
// driver behind keyed.
type memKeyed struct{ keyed }

func (d memKeyed) As(target any) bool { return driver.As(d.Driver, target) }

// TestTheSuitesKeysFitABoundedStore: a store that refuses keys over
// MaxSuiteKeyBytes passes every check and hostile check of the suite,
// even under a long test name: the keys the suite makes stay short
// whatever the store's and the check's names (the harness once named
// rows by their test name, whole, which no memcached key holds).
func TestTheSuitesKeysFitABoundedStore(t *testing.T) {
	n := pairNeighbour{open: boundedKeys}
	s := suite()
	s.Neighbour = n
	for _, c := range append(conformance.Checks(), conformance.HostileChecks(n)...) {
		t.Run(strings.Repeat("a-long-store-name-", 8)+"/"+c.Name, func(t *testing.T) {
			if o := conformance.RunRecorded(c, boundedKeys, s); !o.Passed && !o.Skipped {
				t.Errorf("%s failed over a store bounding keys at %d bytes: %s", c.Name, conformance.MaxSuiteKeyBytes, o.Reason)
			}
		})
	}
}

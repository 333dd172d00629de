package witness_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/gen"
	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/internal/witness"
	"github.com/kvblob/kvblob/runtime/driver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const spec = `store: w
sdk: {name: w, versions: ["1"]}
capabilities: {absent_is_miss: true}
codes:
  OK: 0
  GONE: -1
  FULL: -2
  BAD: -3
calls:
  put:
    op: put
    touches_memory: true
    access_end: on_return
    answers: code
    codes:
      OK: {result: READY}
      FULL: {result: DECLINED}
      BAD: {result: FAULT}
    otherwise: {result: FAULT}
  get:
    op: get
    touches_memory: true
    access_end: on_return
    answers: size
    whole: {result: READY, written: "yes"}
    short: {result: FAULT, written: "no"}
    codes:
      GONE: {result: MISS, written: "no"}
    otherwise: {result: FAULT, written: "maybe"}
admission: [empty_key, repeated_key, multi_span, span_outside_registration, hint, device_region]
`

func rule(t *testing.T, id string) witness.Rule {
	t.Helper()
	s, err := gen.Load("spec/w.yaml", []byte(spec))
	require.NoError(t, err)
	for _, r := range witness.Rules(s) {
		if r.ID() == id {
			return r
		}
	}
	t.Fatalf("no rule %s", id)
	return witness.Rule{}
}

// TestCheckFailsAtTheRuleForEachClaimContradicted: each row's observation
// contradicts one claim (or none), and the error names the rule's
// position and the claim.
func TestCheckFailsAtTheRuleForEachClaimContradicted(t *testing.T) {
	ready := driver.Result{Status: driver.Ready}
	tests := []struct {
		rule string
		o    witness.Observed
		want string // "" : no contradiction
	}{
		{"get.whole", witness.Observed{Result: ready, AccessEnded: true, Written: true, Whole: true}, ""},
		{"get.whole", witness.Observed{Result: ready, AccessEnded: true, Written: true}, "does not hold the row's bytes"},
		{"get.GONE", witness.Observed{Result: driver.Result{Status: driver.Miss}, AccessEnded: true}, ""},
		{"get.GONE", witness.Observed{Result: driver.Result{Status: driver.Miss}, AccessEnded: true, Written: true}, "written before the call returned"},
		{"get.GONE", witness.Observed{Result: driver.Result{Status: driver.Miss}, AccessEnded: true, LateWritten: true}, "written after the call returned"},
		{"get.GONE", witness.Observed{Result: driver.Result{Status: driver.Fault, Code: -1}, AccessEnded: true}, "the spec says MISS"},
		{"get.GONE", witness.Observed{Result: driver.Result{Status: driver.Miss}}, "did not say its access ended"},
		{"get.short", witness.Observed{Result: driver.Result{Status: driver.Fault, Code: 10}, AccessEnded: true}, ""},
		{"get.otherwise", witness.Observed{Result: driver.Result{Status: driver.Fault, Code: -3}, AccessEnded: true, Written: true}, ""},
		{"get.otherwise", witness.Observed{Result: driver.Result{Status: driver.Fault, Code: -3}, AccessEnded: true, LateWritten: true}, "access_end on_return: the destination was written after"},
		{"put.OK", witness.Observed{Result: ready, AccessEnded: true}, ""},
		{"put.OK", witness.Observed{Result: ready, AccessEnded: true, SourceWritten: true}, "never writes its sources"},
		{"put.OK", witness.Observed{Result: ready, AccessEnded: true, LateRead: true}, "written into the source after the call returned"},
		{"put.FULL", witness.Observed{Result: driver.Result{Status: driver.Declined}, AccessEnded: true}, ""},
		{"put.BAD", witness.Observed{Result: driver.Result{Status: driver.Fault, Code: -3}, AccessEnded: true}, ""},
		{"put.BAD", witness.Observed{Result: driver.Result{Status: driver.Fault, Code: -1}, AccessEnded: true}, "did not reach this rule"},
		{"put.otherwise", witness.Observed{Result: driver.Result{Status: driver.Fault, Code: -1}, AccessEnded: true}, ""},
		{"put.otherwise", witness.Observed{Result: driver.Result{Status: driver.Fault, Code: -3}, AccessEnded: true}, "which the call lists"},
	}
	for _, tt := range tests {
		t.Run(tt.rule+"/"+tt.want, func(t *testing.T) {
			r := rule(t, tt.rule)
			err := r.Check(tt.o)
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.True(t, strings.HasPrefix(err.Error(), r.Pos.String()+": "+tt.rule+": "), "%v does not start at the rule's position %v", err, r.Pos)
		})
	}
}

// TestCoveredWantsEveryRuleWitnessedOrListed.
func TestCoveredWantsEveryRuleWitnessedOrListed(t *testing.T) {
	s, err := gen.Load("spec/w.yaml", []byte(spec))
	require.NoError(t, err)
	specs := []*gen.Spec{s}
	all := []string{"put.OK", "put.FULL", "put.BAD", "put.otherwise", "get.whole", "get.short", "get.GONE"}
	assert.NoError(t, witness.Covered(specs, "w", all, map[string]string{"get.otherwise": "why"}))
	err = witness.Covered(specs, "w", all, nil)
	assert.ErrorContains(t, err, "get.otherwise is neither witnessed nor listed")
	err = witness.Covered(specs, "w", append(all, "get.otherwise"), map[string]string{"get.otherwise": "why"})
	assert.ErrorContains(t, err, "witnessed and listed")
	err = witness.Covered(specs, "w", append(all, "get.NOPE"), map[string]string{"get.otherwise": "why"})
	assert.ErrorContains(t, err, "has no rule get.NOPE")
}

// TestSpecsLoadsTheModulesSpecFolderFromBelowIt: a witness test runs in
// its store's folder, below the module's root, and Specs walks up to the
// go.mod to load the spec folder beside it; outside any module it says
// so. No test of the package called it (tried: dropping the walk's
// dir = up loops at the package's folder, which the test's bound fails).
func TestSpecsLoadsTheModulesSpecFolderFromBelowIt(t *testing.T) {
	specs := bound.Value(t, 30*time.Second, "Specs from internal/witness", func() []*gen.Spec {
		specs, err := witness.Specs()
		require.NoError(t, err)
		return specs
	})
	stems := map[string]bool{}
	for _, s := range specs {
		stems[witness.Stem(s.File)] = true
	}
	for _, stem := range []string{"memory", "redis-7", "fs-posix"} {
		assert.True(t, stems[stem], "spec %s loaded from the module's spec folder (got %v)", stem, stems)
	}

	t.Chdir(t.TempDir())
	_, err := witness.Specs()
	assert.ErrorContains(t, err, "no go.mod at or above the working directory")
}

// TestCheckNamesOnlyTheClaimsTheRunContradicts: a run that answered
// another status than its rule's is reported for the status alone: a
// rule's code claims are about a FAULT it ends in, so a run that did not
// fault (or a rule that does not end in one) is never told it faulted
// with the wrong code.
func TestCheckNamesOnlyTheClaimsTheRunContradicts(t *testing.T) {
	tests := []struct {
		rule string
		o    witness.Observed
		want string
	}{
		{"put.BAD", witness.Observed{Result: driver.Result{Status: driver.Ready}, AccessEnded: true}, "the spec says FAULT, the real run answered READY"},
		{"put.FULL", witness.Observed{Result: driver.Result{Status: driver.Fault, Code: -1}, AccessEnded: true}, "the spec says DECLINED"},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			err := rule(t, tt.rule).Check(tt.o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "did not reach this rule", "a claim about the code of a FAULT the rule or the run does not end in")
			assert.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one contradiction: %v", err)
		})
	}
}

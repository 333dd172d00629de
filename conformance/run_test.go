package conformance_test

import (
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
)

// byName indexes checks by name.
func byName(cs []conformance.Checked) map[string]conformance.Checked {
	m := map[string]conformance.Checked{}
	for _, c := range cs {
		m[c.Check] = c
	}
	return m
}

// TestRunLogsWhatTheGateReads: the store's SDK, how many checks follow
// and its spec file; each check's kind and spec position; the round
// trip's figure.
func TestRunLogsWhatTheGateReads(t *testing.T) {
	c := conformance.Case{ID: "put/FULL", Pos: "spec/seamed.yaml:9:7", Op: conformance.OpPut, Call: "put", Answer: conformance.Answer{Code: -1, CodeName: "FULL"}, Want: driver.Declined, Written: rules.WrittenNo, AccessEnded: true}
	s := conformance.Suite{Name: "seamed", SDK: "seamed 1 (a map)", Factory: newSeamed, CodeEnum: "SeamedCode",
		Scenarios: conformance.SeamScenarios(seamOf, "put", "get"), Cases: []conformance.Case{c}, Stage: conformance.SeamStager(seamOf),
		SDKChecks: []conformance.SDKCheck{{Name: "sdk_holds", Spec: "spec/seamed.yaml:2:1", Run: func(*conformance.Harness) {}}}}
	store, facts, checks := conformance.RunOnRecorders(s)
	require.True(t, store.Passed, store.Reason)
	assert.Equal(t, []string{"sdk: seamed 1 (a map)", "checks: " + strconv.Itoa(len(s.Checks())), "code enum: SeamedCode", "spec file: spec/seamed.yaml"}, facts)
	got := byName(checks)
	assert.Equal(t, []string{"kind: check"}, got["round_trip_is_byte_for_byte"].Facts)
	assert.Equal(t, []string{"kind: case", "spec: spec/seamed.yaml:9:7"}, got["put/FULL"].Facts)
	assert.Equal(t, []string{"kind: sdk", "spec: spec/seamed.yaml:2:1"}, got["sdk_holds"].Facts)
	trip := got["backend_round_trip"]
	require.True(t, trip.Passed, trip.Reason)
	require.Len(t, trip.Facts, 2)
	assert.Regexp(t, `^round trip: 16 x 256 KiB in \S+$`, trip.Facts[1])
}

// TestSetupDecidesWhetherTheStoreRuns: a store whose Setup says its
// server is missing skips every check with that reason (and fails under
// CI=true, where every server is installed); a Setup error fails the store
// as a set-up failure. Scenarios that Setup made replace the suite's, and
// a scenario still missing is skipped with the store's own reason.
func TestSetupDecidesWhetherTheStoreRuns(t *testing.T) {
	base := conformance.Suite{Name: "seamed", Factory: newSeamed, Only: conformance.Data}

	t.Setenv("CI", "")
	s := base
	s.Setup = func(conformance.T) (string, error) { return "seamed-server is not installed", nil }
	store, facts, checks := conformance.RunOnRecorders(s)
	assert.True(t, store.Passed, store.Reason)
	assert.Contains(t, facts, "skip: seamed-server is not installed")
	require.Len(t, checks, len(s.Checks()))
	for _, c := range checks {
		assert.True(t, c.Skipped, c.Check)
		assert.Equal(t, "seamed-server is not installed", c.Reason, c.Check)
	}

	t.Setenv("CI", "true")
	store, facts, checks = conformance.RunOnRecorders(s)
	assert.False(t, store.Passed || store.Skipped)
	assert.Contains(t, facts, "setup: CI=true, but seamed-server is not installed")
	assert.Empty(t, checks)
	t.Setenv("CI", "")

	s.Setup = func(conformance.T) (string, error) { return "", errors.New("port 6379 in use") }
	store, facts, checks = conformance.RunOnRecorders(s)
	assert.False(t, store.Passed || store.Skipped)
	assert.Contains(t, store.Reason, "setting up seamed: port 6379 in use")
	assert.Contains(t, facts, "setup: port 6379 in use")
	assert.Empty(t, checks)

	setUp := false
	s.Setup = func(conformance.T) (string, error) { setUp = true; return "", nil }
	s.ScenariosAfterSetup = func() conformance.Scenarios {
		if !setUp {
			t.Error("ScenariosAfterSetup was called before Setup")
		}
		return conformance.SeamScenarios(seamOf, "put", "get")
	}
	s.SkipReasons = map[conformance.Scenario]string{conformance.HoldAccess: "a map holds no access"}
	store, _, checks = conformance.RunOnRecorders(s)
	assert.True(t, store.Passed, store.Reason)
	got := byName(checks)
	fault := got["a_failure_inside_a_put_is_a_row_fault"]
	assert.True(t, fault.Passed, "a check needing the FailPut scenario Setup made: %s", fault.Reason)
	held := got["results_and_access_end_are_independent"]
	assert.True(t, held.Skipped)
	assert.Contains(t, held.Reason, "HoldAccess scenario here: a map holds no access")
}

// TestStageableOnlyRunsWhatARealServerStages: with StageableOnly, a case
// the spec marks stageable runs, and any other is skipped saying a real
// server cannot stage it.
func TestStageableOnlyRunsWhatARealServerStages(t *testing.T) {
	ok := conformance.Case{ID: "put/OK", Pos: "spec/seamed.yaml:3:3", Op: conformance.OpPut, Call: "put", Answer: conformance.Answer{Code: 0, CodeName: "OK"}, Want: driver.Ready, Written: rules.WrittenNo, AccessEnded: true, Stageable: true}
	full := conformance.Case{ID: "put/FULL", Pos: "spec/seamed.yaml:4:3", Op: conformance.OpPut, Call: "put", Answer: conformance.Answer{Code: -1, CodeName: "FULL"}, Want: driver.Declined, Written: rules.WrittenNo, AccessEnded: true}
	real := func(*conformance.Harness, conformance.Case, string) error { return nil } // an OK needs no staging
	s := conformance.Suite{Name: "seamed", Factory: newSeamed, Only: conformance.SpecCases, Cases: []conformance.Case{ok, full}, Stage: real, StageableOnly: true}
	_, _, checks := conformance.RunOnRecorders(s)
	got := byName(checks)
	assert.True(t, got["put/OK"].Passed, got["put/OK"].Reason)
	assert.True(t, got["put/FULL"].Skipped)
	assert.Equal(t, "spec/seamed.yaml:4:3: a real server cannot stage this case", got["put/FULL"].Reason)
	s.StageableOnly = false
	_, _, checks = conformance.RunOnRecorders(s)
	assert.False(t, byName(checks)["put/FULL"].Passed || byName(checks)["put/FULL"].Skipped, "staged by nothing, the FULL case fails: it ran")
}

// TestAKnownFailureThatPassesFailsItsCheck: run as go test runs a suite, a
// check listed as a known failure that passes fails, saying to remove it.
// (A known failure once went through its report twice: the first report's
// "passes now" failure read as the check still failing, and the check was
// skipped; tried.)
func TestAKnownFailureThatPassesFailsItsCheck(t *testing.T) {
	s := conformance.Suite{Name: "seamed", Factory: newSeamed, Only: conformance.Data,
		KnownFailures: map[string]string{"round_trip_is_byte_for_byte": "said to fail"}}
	_, _, checks := conformance.RunOnRecorders(s)
	trip := byName(checks)["round_trip_is_byte_for_byte"]
	assert.False(t, trip.Passed || trip.Skipped, "a known failure that passes: %+v", trip.Verdict)
	assert.Contains(t, trip.Reason, "a known failure (said to fail) passes now: remove it from Suite.KnownFailures")
}

package conformance

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/runtime/driver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stuckDriver accepts registrations and never drains.
type stuckDriver struct{ drains bool }

type reg struct{ r *driver.Region }

func (g reg) Region() *driver.Region { return g.r }

func (d *stuckDriver) Capabilities() driver.Capabilities                           { return driver.Capabilities{} }
func (d *stuckDriver) Register(r *driver.Region) (driver.Registration, error)      { return reg{r}, nil }
func (d *stuckDriver) Unregister(driver.Registration) error                        { return nil }
func (d *stuckDriver) Put(context.Context, []driver.Row) (driver.Operation, error) { return nil, nil }
func (d *stuckDriver) Get(context.Context, []driver.Row, driver.Hint) (driver.Operation, error) {
	return nil, nil
}
func (d *stuckDriver) Drain(context.Context) bool { return d.drains }
func (d *stuckDriver) Close() error               { return nil }

// TestTheHarnessKeepsMemoryADriverMayTouch: when the driver does not
// drain, the harness leaves its region mapped; when it drains, the region
// is freed.
func TestTheHarnessKeepsMemoryADriverMayTouch(t *testing.T) {
	for _, drains := range []bool{false, true} {
		var h *Harness
		c := Check{Name: "capture", Run: func(x *Harness, _ Scenarios) { h = x }}
		v := runRecorded(c, func(T) driver.Driver { return &stuckDriver{drains: drains} }, Suite{Deadline: 250 * time.Millisecond})
		assert.True(t, v.Passed, v.Reason)
		assert.Equal(t, !drains, h.Mem.Mapped(), "drains=%v", drains)
		if !drains {
			_ = h.Mem.Close() // this test knows no store is behind it
		}
	}
}

// TestEveryScenarioNamesAHook: each Scenario constant names the Scenarios
// field of its name, and that field alone satisfies it; every check needs
// only scenarios that exist. A check whose Needs named no hook would be
// skipped by every store.
func TestEveryScenarioNamesAHook(t *testing.T) {
	typ := reflect.TypeOf(Scenarios{})
	require.Equal(t, typ.NumField(), len(scenarioNames), "one Scenario constant per hook")
	for i := range scenarioNames {
		b := Scenario(1) << i
		field, ok := typ.FieldByName(b.String())
		require.True(t, ok, "scenario %v names no field of Scenarios", b)
		var s Scenarios
		v := reflect.ValueOf(&s).Elem().FieldByIndex(field.Index)
		v.Set(reflect.MakeFunc(field.Type, func([]reflect.Value) []reflect.Value { return nil }))
		assert.Equal(t, Scenario(0), s.Missing(b), "setting Scenarios.%s satisfies %v", field.Name, b)
		assert.Equal(t, allScenarios&^b, s.Missing(allScenarios), "Scenarios.%s satisfies %v alone", field.Name, b)
	}
	for _, c := range Checks() {
		assert.Zero(t, c.Needs&^allScenarios, "check %s needs %v, which names no hook", c.Name, c.Needs)
		assert.NotZero(t, c.Group, "check %s is in no group", c.Name)
		assert.Zero(t, c.Group&^(Lifecycle|Data), "check %s: a hand-written check is Lifecycle or Data", c.Name)
	}
	assert.Equal(t, "HoldGet|Full", (HoldGet | Full).String())
	assert.Equal(t, "Scenario(1<<9)", Scenario(1<<9).String())
}

func TestCheckNamesAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range Checks() {
		assert.False(t, seen[c.Name], "two checks named %s", c.Name)
		seen[c.Name] = true
	}
}

// TestSuiteSelects: Only picks groups, Cases add one check each, and a
// suite that would silently run less than it says is refused.
func TestSuiteSelects(t *testing.T) {
	cases := []Case{{ID: "put/OK", Op: OpPut}}
	stage := func(*Harness, Case, string) error { return nil }
	all := Suite{Cases: cases, Stage: stage}.Checks()
	assert.Len(t, all, len(Checks())+len(HostileChecks(nil))+2, "the hand-written checks, the hostile checks, the case and the round trip")
	assert.Equal(t, HostileRawName, all[len(Checks())].Name, "the hostile checks follow the hand-written ones")
	assert.Equal(t, roundTripCheckName, all[len(all)-1].Name)
	plant := func(driver.Driver, string, []byte) error { return nil }
	sdk := SDKCheck{Name: "sdk_answers", Spec: "spec/x.yaml:1:1", Run: func(*Harness) {}}
	more := Suite{Cases: cases, Stage: stage, Integrity: &Integrity{Factory: func(T) driver.Driver { return nil }, Plant: plant}, SDKChecks: []SDKCheck{sdk}}.Checks()
	require.Len(t, more, len(all)+2)
	assert.Equal(t, IntegrityCheckName, more[len(Checks())].Name, "the integrity check follows the hand-written ones")
	assert.Equal(t, "sdk_answers", more[len(more)-1].Name, "the SDK checks come last")
	assert.Equal(t, "spec/x.yaml:1:1", more[len(more)-1].spec)
	for _, c := range (Suite{Only: Lifecycle, Cases: cases, Stage: stage}).Checks() {
		assert.Equal(t, Lifecycle, c.Group, c.Name)
	}
	for _, c := range (Suite{Only: Lifecycle, Integrity: &Integrity{}}).Checks() {
		assert.Equal(t, Lifecycle, c.Group, "%s: the integrity check and the round trip need a store that stores (Data)", c.Name)
	}
	only := Suite{Only: SpecCases, Cases: cases, Stage: stage}.Checks()
	require.Len(t, only, 1)
	assert.Equal(t, "put/OK", only[0].Name)

	f := func(T) driver.Driver { return &stuckDriver{drains: true} }
	for _, c := range []struct {
		s    Suite
		want string
	}{
		{Suite{Name: "x", Factory: f, Cases: cases}, "Suite.Stage is nil"},
		{Suite{Name: "x", Factory: f, KnownFailures: map[string]string{"no_such_check": "typo"}}, `Suite.KnownFailures names "no_such_check"`},
		{Suite{Name: "x", Factory: f, Only: 1 << 6}, "unknown groups"},
		{Suite{Factory: f}, `Suite.Name "" must be a store's name`},
		{Suite{Name: "a/b", Factory: f}, `Suite.Name "a/b" must be a store's name`},
		{Suite{Name: "x"}, "Suite.Factory is nil"},
		{Suite{Name: "x", Factory: f, Integrity: &Integrity{Factory: f}}, "Suite.Integrity needs a Factory of keyed drivers and a Plant"},
	} {
		assert.ErrorContains(t, c.s.validate(), c.want)
	}
	assert.NoError(t, Suite{Name: "x", Factory: f, KnownFailures: map[string]string{roundTripCheckName: "ok", "put/OK": "ok"}, Cases: cases, Stage: stage}.validate(),
		"the round trip and a case are checks a known failure may name")
}

// TestKnownFailuresMustStillFail: a known failure that fails is a skip
// naming why; one that passes fails the suite.
func TestKnownFailuresMustStillFail(t *testing.T) {
	fails := Check{Name: "fails", Group: Data, Run: func(h *Harness, _ Scenarios) { h.T.Errorf("broken") }}
	passes := Check{Name: "passes", Group: Data, Run: func(*Harness, Scenarios) {}}
	s := Suite{KnownFailures: map[string]string{"fails": "reason one", "passes": "reason two"}}
	f := func(T) driver.Driver { return &stuckDriver{drains: true} }
	v := runRecorded(fails, f, s)
	assert.True(t, v.Skipped, v.Reason)
	assert.Contains(t, v.Reason, "known failure (reason one): broken")
	v = runRecorded(passes, f, s)
	assert.False(t, v.Passed || v.Skipped)
	assert.Contains(t, v.Reason, "remove it from Suite.KnownFailures")
}

// TestFailuresNameTheRowAndTheRule: a store error from a put names the row
// by name and says which rule the error broke, on one line.
func TestFailuresNameTheRowAndTheRule(t *testing.T) {
	c := Check{Name: "put", Run: func(h *Harness, _ Scenarios) { h.Put(h.Row(h.Key("block-7"), 0)) }}
	v := runRecorded(c, func(T) driver.Driver { return errDriver{&stuckDriver{drains: true}} }, Suite{})
	require.False(t, v.Passed)
	assert.NotContains(t, v.Reason, "\n")
	assert.Contains(t, v.Reason, `put of row "block-7": Put returned error "connection reset"`)
	assert.Contains(t, v.Reason, "must be a row FAULT")
	assert.True(t, strings.Count(v.Reason, "block-7") == 1, v.Reason)
}

type errDriver struct{ *stuckDriver }

func (errDriver) Put(context.Context, []driver.Row) (driver.Operation, error) {
	return nil, errConnReset
}

var errConnReset = errorString("connection reset")

type errorString string

func (e errorString) Error() string { return string(e) }

package conformance

import (
	"errors"
	"fmt"
	"math/bits"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/driver"
)

// DefaultDeadline is the Deadline of a Suite that sets none.
const DefaultDeadline = 10 * time.Second

// Suite is one store's run of the conformance suite: which store, how to
// make its drivers and ready what they need, the scenarios it stages, the
// spec's generated cases and how to stage them, the checks of its SDK,
// which groups of checks run, and how long any wait may last. Run runs it.
type Suite struct {
	// Name names the store in test names (TestConformance/<Name>/<check>)
	// and in the gate's table ("redis", "redis-valkey-8.1"). A store with
	// two server builds runs a Suite per build, each with its own Name.
	Name string
	// SDK says which SDK and version the suite exercises, as the gate's
	// table prints it ("redis-server 7.x (loopback)").
	SDK string
	// Factory makes a fresh driver for each check. It is called only after
	// Setup returned.
	Factory Factory
	// Setup, when set, readies what the store needs before its first check
	// (a server to start) and registers any teardown with t.Cleanup. It
	// returns why the store cannot run on this machine (every check is
	// then skipped saying so; under CI=true the suite fails instead, since
	// CI installs every server), or an error: a set-up failure, which
	// fails the suite as such (the gate exits 2 on it).
	Setup func(t T) (skip string, err error)
	// Scenarios are the hooks the store stages. A check that needs a hook
	// left nil is skipped, and the skip names the hook.
	Scenarios Scenarios
	// ScenariosAfterSetup, when set, is called once Setup succeeded, and
	// its scenarios replace Scenarios: for a store whose scenarios depend
	// on what Setup found (a tmpfs mounted, a helper client up).
	ScenariosAfterSetup func() Scenarios
	// Cases are the conformance cases generated from the store's spec
	// (a version's Cases in generated/<store>/<store>cases's All()). They
	// run through Stage, which must be set when Cases is not empty.
	Cases []Case
	// Stage makes the store answer a case.
	Stage Stager
	// StageableOnly runs only the cases a real server can stage (the
	// spec's stageable cases); the others are skipped, saying so.
	StageableOnly bool
	// SDKChecks check the store's SDK itself against facts its spec relies
	// on, asked of the SDK or its server (its version; the replies the
	// rules map). Each runs with a fresh driver from Factory.
	SDKChecks []SDKCheck
	// Integrity, when set, adds the check that a row another writer stored
	// with a valid unkeyed trailer reads as a FAULT.
	Integrity *Integrity
	// Neighbour, when set, writes to the store's medium as another client
	// with write access would, for the hostile checks (HostileChecks); a
	// suite without one skips them, saying so, but the tenant check,
	// which needs none.
	Neighbour Neighbour
	// NeighbourFactory, when set, makes the drivers the hostile checks
	// attack, in place of Factory's: for a store whose default driver
	// trusts every writer of its medium by design (Mooncake without its
	// trailer), the drivers with the framing that stands against one.
	NeighbourFactory Factory
	// CodeEnum names the enum in the SDK's headers that declares its codes
	// (Mooncake: ErrorCode), for 'gate --sdk-include DIR', which checks the
	// spec's code table against it.
	CodeEnum string
	// Only selects the groups that run; zero runs every group. A store
	// whose SDK calls are not written yet runs Only: Lifecycle.
	Only Group
	// Deadline bounds every wait of a check, so that a hung driver fails
	// its check ("test timed out") instead of hanging CI. Zero means
	// DefaultDeadline.
	Deadline time.Duration
	// KnownFailures names checks (or case IDs) a store is known to fail,
	// each with why (an issue, say). Each still runs and must still fail:
	// it is reported as skipped with the failure, and once it passes the
	// suite fails until the entry is removed.
	KnownFailures map[string]string
	// SkipReasons says, for a scenario the store leaves nil, why it cannot
	// stage it here ("a full filesystem needs a tmpfs mount, which needs
	// root"); a check that needs it is skipped with that reason. A missing
	// scenario without one is skipped with the hook's name.
	SkipReasons map[Scenario]string
}

// SDKCheck is one check of a store's SDK against a fact its spec relies
// on. Run fails through h.T, as any check does; h.D is a fresh driver from
// the suite's Factory.
type SDKCheck struct {
	Name string
	// Spec is the position (file:line:col) of the spec fact checked, when
	// it has one (storekit.SpecPos); reports name it.
	Spec string
	Run  func(h *Harness)
}

// Group is a set of check groups.
type Group uint8

const (
	// Lifecycle checks hold before a driver stores anything: admission,
	// registration, access ends, drain, unregister and close. A driver on
	// driverkit.Lifecycle whose every row answers FAULT passes them.
	Lifecycle Group = 1 << iota
	// Data checks need a store that stores: round trips, results, and the
	// rows a failed or cancelled put leaves behind.
	Data
	// SpecCases are the checks made from Suite.Cases.
	SpecCases

	allGroups = 1<<iota - 1
)

var groupNames = [...]string{"Lifecycle", "Data", "SpecCases"}

func (g Group) String() string { return bitNames(uint64(g), groupNames[:], "Group") }

// Scenario is a set of the hooks of Scenarios, by name: what a check needs
// staged. Each constant names the Scenarios field of the same name.
type Scenario uint16

const (
	HoldGet Scenario = 1 << iota
	Writing
	Full
	FailPut
	FailRead
	Unprovable
	HoldAccess

	allScenarios = 1<<iota - 1
)

var scenarioNames = [...]string{"HoldGet", "Writing", "Full", "FailPut", "FailRead", "Unprovable", "HoldAccess"}

func (s Scenario) String() string { return bitNames(uint64(s), scenarioNames[:], "Scenario") }

// Missing returns the scenarios of need that s leaves nil.
func (s Scenarios) Missing(need Scenario) Scenario {
	var missing Scenario
	for b := Scenario(1); b <= need && b != 0; b <<= 1 {
		if need&b != 0 && !s.has(b) {
			missing |= b
		}
	}
	return missing
}

// has reports whether the hook of the single scenario b is set. A bit that
// names no hook is never set, so a check needing it would always skip; the
// package's tests pin that every scenario names a hook.
func (s Scenarios) has(b Scenario) bool {
	switch b {
	case HoldGet:
		return s.HoldGet != nil
	case Writing:
		return s.Writing != nil
	case Full:
		return s.Full != nil
	case FailPut:
		return s.FailPut != nil
	case FailRead:
		return s.FailRead != nil
	case Unprovable:
		return s.Unprovable != nil
	case HoldAccess:
		return s.HoldAccess != nil
	}
	return false
}

func bitNames(v uint64, names []string, typ string) string {
	if v == 0 {
		return "none"
	}
	var parts []string
	for v != 0 {
		i := bits.TrailingZeros64(v)
		v &^= 1 << i
		if i < len(names) {
			parts = append(parts, names[i])
		} else {
			parts = append(parts, fmt.Sprintf("%s(1<<%d)", typ, i))
		}
	}
	return strings.Join(parts, "|")
}

// Check is one rule of the contract, observed through a driver.
type Check struct {
	Name  string
	Group Group
	// Needs is the scenarios the check stages; the check is skipped when
	// the store stages any of them not.
	Needs Scenario
	Run   func(h *Harness, s Scenarios)

	kind, spec string  // what reports call it, and the spec position it pins
	factory    Factory // its drivers', when not the suite's (Integrity)
}

// Checks returns the hand-written checks, in the order Run runs them. Each
// call returns a new slice.
func Checks() []Check { return checks() }

// Checks returns what s runs, in order: the selected hand-written checks,
// the integrity check, the hostile checks, a check per generated case, the backend round trip
// and the SDK checks.
func (s Suite) Checks() []Check {
	var out []Check
	for _, c := range checks() {
		if s.selects(c.Group) {
			out = append(out, c)
		}
	}
	if s.Integrity != nil && s.selects(Data) {
		out = append(out, integrityCheck(s.Integrity))
	}
	if s.selects(Data) {
		for _, c := range HostileChecks(s.Neighbour) {
			c.factory = s.NeighbourFactory
			out = append(out, c)
		}
	}
	if s.selects(SpecCases) {
		out = append(out, s.caseChecks()...)
	}
	if s.selects(Data) {
		out = append(out, roundTripCheck())
	}
	for _, p := range s.SDKChecks {
		out = append(out, Check{Name: p.Name, Run: func(h *Harness, _ Scenarios) { p.Run(h) }, kind: KindSDK, spec: p.Spec})
	}
	return out
}

func (s Suite) selects(g Group) bool { return s.Only == 0 || s.Only&g != 0 }

func (s Suite) deadline() time.Duration {
	if s.Deadline <= 0 {
		return DefaultDeadline
	}
	return s.Deadline
}

// validate refuses a suite that would silently run less than it says.
func (s Suite) validate() error {
	var errs []error
	if s.Name == "" || strings.ContainsAny(s.Name, "/ ") {
		errs = append(errs, fmt.Errorf("conformance: Suite.Name %q must be a store's name without slashes or spaces (it names the test TestConformance/<Name>)", s.Name))
	}
	if s.Factory == nil {
		errs = append(errs, errors.New("conformance: Suite.Factory is nil; the suite needs a driver for each check"))
	}
	if s.Integrity != nil && (s.Integrity.Factory == nil || s.Integrity.Plant == nil) {
		errs = append(errs, errors.New("conformance: Suite.Integrity needs a Factory of keyed drivers and a Plant"))
	}
	if len(s.Cases) > 0 && s.Stage == nil && s.selects(SpecCases) {
		errs = append(errs, errors.New("conformance: Suite.Cases is set but Suite.Stage is nil"))
	}
	if s.Only&^allGroups != 0 {
		errs = append(errs, fmt.Errorf("conformance: Suite.Only names unknown groups %v", s.Only&^allGroups))
	}
	names := map[string]bool{}
	for _, c := range s.Checks() {
		names[c.Name] = true
	}
	var unknown []string
	for name := range s.KnownFailures {
		if !names[name] {
			unknown = append(unknown, name)
		}
	}
	sort.Strings(unknown)
	for _, name := range unknown {
		errs = append(errs, fmt.Errorf("conformance: Suite.KnownFailures names %q, which is no check this suite runs", name))
	}
	return errors.Join(errs...)
}

// Run runs s as the subtest s.Name of t, with a subtest per check, each on
// a fresh driver: TestConformance/<Name>/<check>. A check whose scenario
// the store does not stage is skipped naming it; a check not in s.Only does
// not run. Every store has one test that calls it, once per server build:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Suite{Name: "mystore", SDK: "mysdk 1.2", Factory: ..., Cases: mystorecases.All(), Stage: ...})
//	}
//
// Besides pass and fail, Run logs what the gate's table and reports need,
// one fact a line, in the form "conformance: KEY: VALUE" (the keys and
// where each is logged: facts.go), which cmd/gate reads from go
// test -json.
func Run(t *testing.T, s Suite) {
	t.Helper()
	note(t, FactStore, s.Name)
	t.Run(s.Name, func(t *testing.T) {
		s.run(t, func(name string, f func(T)) { t.Run(name, func(t *testing.T) { f(t) }) })
	})
}

// run runs s on t, each check through sub, which runs f as a subtest
// called name (a recorder stands in for go test in the package's tests).
func (s Suite) run(t T, sub func(name string, f func(T))) {
	t.Helper()
	if err := s.validate(); err != nil {
		t.Fatal(err)
	}
	checks := s.Checks()
	note(t, FactSDK, s.SDK)
	note(t, FactChecks, strconv.Itoa(len(checks)))
	if s.CodeEnum != "" {
		note(t, FactCodeEnum, s.CodeEnum)
	}
	if len(s.Cases) > 0 {
		file, _, _ := strings.Cut(s.Cases[0].Pos, ":")
		note(t, FactSpecFile, file)
	}
	var skip string
	if s.Setup != nil {
		why, err := s.Setup(t)
		switch {
		case err != nil:
			note(t, FactSetup, err.Error())
			t.Fatalf("setting up %s: %v", s.Name, err)
		case why != "" && os.Getenv("CI") == "true":
			note(t, FactSetup, "CI=true, but "+why)
			t.Fatalf("CI=true, but %s cannot run: %s", s.Name, why)
		case why != "":
			note(t, FactSkip, why)
			skip = why
		}
	}
	if s.ScenariosAfterSetup != nil && skip == "" {
		s.Scenarios = s.ScenariosAfterSetup()
	}
	for _, c := range checks {
		sub(c.Name, func(t T) {
			note(t, FactKind, c.kindOr())
			if c.spec != "" {
				note(t, FactSpec, c.spec)
			}
			if skip != "" {
				t.Skipf("%s", skip)
			}
			if why, known := s.KnownFailures[c.Name]; known {
				reportKnown(t, recordCheck(c, s.Factory, s), why)
				return
			}
			runCheck(t, c, s.Factory, s)
		})
	}
}

// note logs one fact for the gate; an empty value says nothing.
func note(t T, key, value string) {
	t.Helper()
	if value != "" {
		t.Logf("%s", FactLine(key, value))
	}
}

func (c Check) kindOr() string {
	if c.kind == "" {
		return KindCheck
	}
	return c.kind
}

func reportKnown(t T, v verdict, why string) {
	t.Helper()
	switch {
	case v.Skipped:
		t.Skipf("%s", v.Reason)
	case v.Passed:
		t.Errorf("a known failure (%s) passes now: remove it from Suite.KnownFailures", why)
	default:
		t.Skipf("known failure (%s): %s", why, v.Reason)
	}
}

// skipReason says why the scenarios of missing cannot be staged: the
// store's own reason for each, where it gave one.
func (s Suite) skipReason(missing Scenario) string {
	var why []string
	for b := Scenario(1); b <= missing && b != 0; b <<= 1 {
		if missing&b == 0 {
			continue
		}
		if r := s.SkipReasons[b]; r != "" {
			why = append(why, fmt.Sprintf("the store stages no %v scenario here: %s", b, r))
		} else {
			why = append(why, fmt.Sprintf("the store stages no %v scenario (Scenarios.%v is nil)", b, b))
		}
	}
	return strings.Join(why, "; ")
}

// runCheck runs one check on t with a fresh harness.
func runCheck(t T, c Check, f Factory, s Suite) {
	t.Helper()
	if m := s.Scenarios.Missing(c.Needs); m != 0 {
		t.Skipf("%s", s.skipReason(m))
	}
	if c.factory != nil {
		f = c.factory
	}
	c.Run(newHarness(t, f, s.deadline()), s.Scenarios)
}

// Factory makes a fresh driver for one check. It registers its own cleanup
// with t if it needs one; the harness drains, unregisters and closes the
// driver first.
type Factory func(t T) driver.Driver

// Scenarios are what a store can stage. A nil hook skips the checks that
// need it, with the hook's name as the reason. Each hook has a Scenario
// constant of the same name, which a check declares in Check.Needs.
type Scenarios struct {
	// HoldGet holds the next get of key inside the SDK until release is
	// called; entered is closed once the call is held.
	HoldGet func(d driver.Driver, key string) (entered <-chan struct{}, release func())
	// Writing makes key look as if another client were still writing it,
	// until finish is called.
	Writing func(d driver.Driver, key string) (finish func())
	// Full makes the store refuse the next put of key as full.
	Full func(d driver.Driver, key string)
	// FailPut makes the next put of key fail inside the SDK (a raise), and
	// only that put: a retry of it must be able to succeed.
	FailPut func(d driver.Driver, key string)
	// FailRead makes the next get of key fail inside the SDK.
	FailRead func(d driver.Driver, key string)
	// Unprovable makes the next put of key lose the evidence of its access
	// end for good.
	Unprovable func(d driver.Driver, key string)
	// HoldAccess makes the next operation publish its results but keep its
	// access open until release is called.
	HoldAccess func(d driver.Driver) (release func())
}

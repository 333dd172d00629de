package main

// The gate's one dependence on package conformance's runner: which checks
// a store runs, and how one of them runs outside go test. When the
// runner's API changes, this file changes and no other.

import (
	"sync"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/gate"
)

// verdict is how one check went.
type verdict struct {
	passed, skipped bool
	errored         bool // the check could not run (exit 2)
	reason          string
}

// storeChecks returns what the gate runs for s, in order: the conformance
// suite, a check per case generated from s's spec (each with the spec
// position it pins), the backend round trip (which sets *trip), and s's
// SDK checks. Each needs s's Setup.
func storeChecks(s gate.Store, trip *string) []gateCheck {
	pos := map[string]string{}
	for _, c := range s.Cases {
		pos[c.ID] = c.Pos
	}
	suite := conformance.Suite{Scenarios: s.Scenarios, Cases: s.Cases, Stage: s.Stage, StageableOnly: s.StageableOnly, Deadline: s.Deadline, KnownFailures: s.KnownFailures, SkipReasons: s.SkipReasons}
	// Every check runs after Setup, so the scenarios Setup made are read
	// once, at the first check.
	var once sync.Once
	scenarios := func() conformance.Suite {
		once.Do(func() {
			if s.ScenariosAfterSetup != nil {
				suite.Scenarios = s.ScenariosAfterSetup()
			}
		})
		return suite
	}
	var checks []conformance.Check
	for _, c := range suite.Checks() {
		if c.Name != "backend_round_trip" { // the gate runs its own, for the figure
			checks = append(checks, c)
		}
	}
	checks = append(checks, roundTripCheck(trip))
	for _, p := range s.SDKChecks {
		checks = append(checks, conformance.Check{Name: p.Name, Run: func(h *conformance.Harness, _ conformance.Scenarios) { p.Run(h) }})
	}
	sdk := map[string]string{}
	for _, p := range s.SDKChecks {
		sdk[p.Name] = p.Spec
	}
	out := make([]gateCheck, len(checks))
	for i, c := range checks {
		g := gateCheck{name: c.Name, kind: kindCheck, needsSetup: true}
		if p, ok := pos[c.Name]; ok {
			g.kind, g.spec = kindCase, p
		} else if p, ok := sdk[c.Name]; ok {
			g.kind, g.spec = kindSDK, p
		}
		g.run = func() verdict {
			o := conformance.RunRecorded(c, s.Factory, scenarios())
			return verdict{passed: o.Passed, skipped: o.Skipped, reason: o.Reason}
		}
		out[i] = g
	}
	return out
}

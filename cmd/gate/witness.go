package main

import (
	"sort"
	"strings"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/gen"
	"github.com/kvblob/kvblob/internal/witness"
)

// The witnesses (internal/witness): each store's TestWitness holds its
// spec's rules to runs on the real medium, one subtest per run named
// TestWitness/<spec file stem>/<call.answer>/<how>. The gate counts, per
// row, the rules of the row's spec a passed run witnessed, lists the rest,
// and takes every run as a check of kind "witness" (a contradicted rule
// fails the gate at its spec position).
const witnessTest = witness.TestName

// kindWitness is a witness run's kind.
const kindWitness = "witness"

// witnessRun is what one spec's witnesses did.
type witnessRun struct {
	checks    []checkResult
	witnessed map[string]bool // rule ids a passed run witnessed
	plan      *checkResult    // the stem's own failure: its plan, or its set-up
	lines     []string        // what the stem logged
}

// addWitness takes an event of TestWitness/<rest>.
func (c *collector) addWitness(e event, rest string) {
	stem, leaf, isLeaf := strings.Cut(rest, "/")
	if stem == "" {
		return
	}
	w := c.witnesses[stem]
	if w == nil {
		w = &witnessRun{witnessed: map[string]bool{}}
		c.witnesses[stem] = w
	}
	if !isLeaf {
		switch e.Action {
		case "output":
			fact(e, &w.lines)
		case "fail":
			// A failure outside every run: its plan (witness.Covered) or
			// its set-up; a run's failure fails the stem too, and is
			// already a check.
			failed := false
			for _, k := range w.checks {
				failed = failed || k.Status == statusFailed
			}
			if !failed {
				w.plan = &checkResult{Name: "witness plan", Kind: kindWitness, Status: statusFailed,
					Message: strings.Join(messages(w.lines, true), "\n"), Seconds: e.Elapsed}
			}
		}
		return
	}
	rule, _, _ := strings.Cut(leaf, "/")
	key := testKey{e.Package, e.Test}
	k := c.checks[key]
	if k == nil {
		k = &checkRow{result: checkResult{Name: "witness " + leaf, Kind: kindWitness}}
		c.checks[key] = k
	}
	switch e.Action {
	case "output":
		if key, v := fact(e, &k.lines); key == conformance.FactSpec {
			k.result.Spec = v
		}
	case "pass", "fail", "skip":
		k.end(e)
		w.checks = append(w.checks, k.result)
		if k.result.Status == statusPassed {
			w.witnessed[rule] = true
		}
	}
}

// witnessRows gives each row the witnesses of its spec: their checks,
// and which of the spec's rules they witnessed. A row whose spec no
// witness test ran for keeps none (an in-process store has no medium).
func (c *collector) witnessRows(rows []*storeRow, specs []*gen.Spec) {
	rules := map[string][]string{}
	for _, s := range specs {
		for _, r := range witness.Rules(s) {
			rules[witness.Stem(s.File)] = append(rules[witness.Stem(s.File)], r.ID())
		}
	}
	for _, row := range rows {
		stem := witness.Stem(row.spec)
		w := c.witnesses[stem]
		if row.spec == "" || w == nil {
			continue
		}
		for _, k := range w.checks {
			row.add(k)
		}
		if w.plan != nil {
			row.add(*w.plan)
		}
		row.Rules = len(rules[stem])
		for _, id := range rules[stem] {
			if w.witnessed[id] {
				row.Witnessed = append(row.Witnessed, id)
			} else {
				row.Unwitnessed = append(row.Unwitnessed, id)
			}
		}
		row.HasWitnesses = true
	}
}

// witnessStems are the spec file stems whose witnesses a run of the
// stores named runs: a spec of one of those stores, or named itself.
func witnessStems(specs []*gen.Spec, stores []string) []string {
	var out []string
	for _, s := range specs {
		stem := witness.Stem(s.File)
		for _, n := range stores {
			if s.Store == n || stem == n {
				out = append(out, stem)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

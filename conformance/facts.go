package conformance

// This file is the one place that says how the suite tells cmd/gate what
// pass and fail cannot: which store a test runs, its SDK, a check's kind
// and spec position, the backend round trip's figure. Run logs each fact
// as a line "conformance: KEY: VALUE" (FactLine), and the gate reads them
// back out of go test -json's output (ParseFact). A fact has a value; Run
// logs none that is empty.

import (
	"regexp"
	"strings"
)

// The facts' keys, and where Run logs each: on TestConformance itself,
// FactStore, so that the gate learns every store's name even when -run
// filters it out; on TestConformance/<store>, the others but FactKind,
// FactSpec and FactRoundTrip, which are a check's
// (TestConformance/<store>/<check>).
const (
	FactStore     = "store"      // the store's name (Suite.Name)
	FactSDK       = "sdk"        // the SDK and version it runs against (Suite.SDK)
	FactChecks    = "checks"     // how many checks follow
	FactCodeEnum  = "code enum"  // the enum of its codes in the SDK's headers (Suite.CodeEnum)
	FactSpecFile  = "spec file"  // the spec its generated cases come from (spec/x.yaml)
	FactSetup     = "setup"      // why its set-up failed (the gate exits 2)
	FactSkip      = "skip"       // why it cannot run on this machine; every check skips
	FactKind      = "kind"       // a check's kind: one of the Kind constants
	FactSpec      = "spec"       // the spec position a check pins (file:line:col)
	FactRoundTrip = "round trip" // what the backend round trip moved, and how fast
)

// The kinds of check.
const (
	KindCheck = "check" // a hand-written check of the contract (and the round trip)
	KindCase  = "case"  // a case generated from the store's spec
	KindSDK   = "sdk"   // the SDK itself checked against the spec
)

// factPrefix starts every fact's line.
const factPrefix = "conformance: "

// FactLine is the log line of one fact.
func FactLine(key, value string) string { return factPrefix + key + ": " + value }

// factLogged is how go test prints a t.Log line: indented, then the file and
// line of the call.
var factLogged = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// ParseFact returns the fact an output line of go test holds, and false for
// any other line. The value is the rest of the line, newline dropped.
func ParseFact(line string) (key, value string, ok bool) {
	loc := factLogged.FindStringIndex(line)
	if loc == nil {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(strings.TrimRight(line[loc[1]:], "\r\n"), factPrefix)
	if !ok {
		return "", "", false
	}
	for _, k := range []string{FactStore, FactSDK, FactChecks, FactCodeEnum, FactSpecFile, FactSetup, FactSkip, FactKind, FactSpec, FactRoundTrip} {
		if v, found := strings.CutPrefix(rest, k+": "); found && v != "" {
			return k, v, true
		}
	}
	return "", "", false
}

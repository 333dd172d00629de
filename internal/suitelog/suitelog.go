// Package suitelog is the one place that says how the conformance suite
// tells cmd/gate what pass and fail cannot: which store a test runs, its
// SDK, a check's kind and spec position, the backend round trip's figure.
// conformance.Run logs each fact as a line "conformance: KEY: VALUE"
// (Line), and the gate reads them back out of go test -json's output
// (Parse). A fact has a value; Run logs none that is empty.
package suitelog

import (
	"regexp"
	"strings"
)

// The keys, and where Run logs each: on TestConformance itself, Store, so
// that the gate learns every store's name even when -run filters it out;
// on TestConformance/<store>, the others but Kind, Spec and RoundTrip,
// which are a check's (TestConformance/<store>/<check>).
const (
	Store     = "store"      // the store's name (Suite.Name)
	SDK       = "sdk"        // the SDK and version it runs against (Suite.SDK)
	Checks    = "checks"     // how many checks follow
	CodeEnum  = "code enum"  // the enum of its codes in the SDK's headers (Suite.CodeEnum)
	SpecFile  = "spec file"  // the spec its generated cases come from (spec/x.yaml)
	Setup     = "setup"      // why its set-up failed (the gate exits 2)
	Skip      = "skip"       // why it cannot run on this machine; every check skips
	Kind      = "kind"       // a check's kind: one of the Kind constants
	Spec      = "spec"       // the spec position a check pins (file:line:col)
	RoundTrip = "round trip" // what the backend round trip moved, and how fast
)

// The kinds of check.
const (
	KindCheck = "check" // a hand-written check of the contract (and the round trip)
	KindCase  = "case"  // a case generated from the store's spec
	KindSDK   = "sdk"   // the SDK itself checked against the spec
)

// prefix starts every line.
const prefix = "conformance: "

// Line is the log line of one fact.
func Line(key, value string) string { return prefix + key + ": " + value }

// logged is how go test prints a t.Log line: indented, then the file and
// line of the call.
var logged = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// Parse returns the fact an output line of go test holds, and false for
// any other line. The value is the rest of the line, newline dropped.
func Parse(line string) (key, value string, ok bool) {
	loc := logged.FindStringIndex(line)
	if loc == nil {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(strings.TrimRight(line[loc[1]:], "\r\n"), prefix)
	if !ok {
		return "", "", false
	}
	for _, k := range []string{Store, SDK, Checks, CodeEnum, SpecFile, Setup, Skip, Kind, Spec, RoundTrip} {
		if v, found := strings.CutPrefix(rest, k+": "); found && v != "" {
			return k, v, true
		}
	}
	return "", "", false
}

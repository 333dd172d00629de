package conformance_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
)

// checkNamed is the check of checks called name, for a test that runs
// one check against a store built to keep or break its rule. A name no
// check has (one renamed) fails the test, rather than running a zero
// Check that proves nothing.
func checkNamed(t *testing.T, checks []conformance.Check, name string) conformance.Check {
	t.Helper()
	for _, c := range checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no check %q", name)
	return conformance.Check{}
}

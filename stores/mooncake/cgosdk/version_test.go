package cgosdk_test

import (
	"testing"

	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
)

// TestVersionIdentity pins which builds the driver opens: every build of a
// release the spec holds for is held (what a real build reports is
// "<release> (git: <commit>)"), and only the build verified against a real
// master is verified; every other build of the release (among them the
// tag v0.3.12.post1, which has no put-session calls) is opened only with
// Options.AllowUnverified.
func TestVersionIdentity(t *testing.T) {
	for v, want := range map[string]struct{ holds, verified bool }{
		"0.3.12.post1 (git: 3b5a59413)": {true, true},   // main at 3b5a594, run with MOONCAKE_REAL=1
		"0.3.12.post1 (git: 3b5a594)":   {true, true},   // the same commit, abbreviated as git log does
		"0.3.12.post1 (git: 488534c4b)": {true, true},   // main at 488534c4b, gated with MOONCAKE_REAL=1 as UNVERIFIED, then listed
		"0.3.12.post1":                  {true, false},  // no commit reported
		"0.3.12.post1 (git: 6c1b1e0fa)": {true, false},  // another build of the same release
		"0.3.12.post1 (git: unknown)":   {true, false},  // built outside a git checkout
		"0.3.13":                        {true, false},  // the first release with sessions; no build verified yet
		"0.3.12":                        {false, false}, // an older release: no spec
		"unknown":                       {false, false}, // cgosdk without the tag
	} {
		if got := mooncakegen.Mooncake0313().SupportsVersion(v); got != want.holds {
			t.Errorf("SupportsVersion(%q) = %v, want %v", v, got, want.holds)
		}
		if got, _ := mooncakegen.Mooncake0313().Spec.Verified(v); want.holds && got != want.verified {
			t.Errorf("Verified(%q) = %v, want %v", v, got, want.verified)
		}
	}
}

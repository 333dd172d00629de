package cgosdk_test

import (
	"testing"

	"github.com/kvblob/kvblob/generated/mooncakespec"
)

// TestVersionIdentity pins which version strings the driver opens: the
// build verified against a real master is named by the exact string it
// reports, and the 0.3.12.post1 release, which has no put-session calls, is
// refused, bare or as another build.
func TestVersionIdentity(t *testing.T) {
	for v, want := range map[string]bool{
		"0.3.12.post1 (git: 3b5a59413)": true,  // main at 3b5a594, run with MOONCAKE_REAL=1
		"0.3.12.post1":                  false, // the tag: no put sessions
		"0.3.12.post1 (git: 6c1b1e0fa)": false, // another build of the same display base
		"0.3.12.post1 (git: unknown)":   false, // built outside a git checkout
		"unknown":                       false, // cgosdk without the tag
	} {
		if got := mooncakespec.SupportsVersion(v); got != want {
			t.Errorf("SupportsVersion(%q) = %v, want %v", v, got, want)
		}
	}
}

package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Spec is one spec file as a value: every generated package declares one
// (its Spec variable). A driver that serves several versions of its SDK,
// each described by its own spec file and package, holds the Spec of each
// and calls Pick with what its SDK reports, so that every code-to-result
// decision it makes comes from the spec of the version it is talking to.
type Spec struct {
	// Store is the store the spec describes; Source is its file
	// ("spec/redis-7.yaml").
	Store, Source string
	// SDKName and SDKVersions say which SDK, at which versions, the spec
	// holds for (see VersionHolds).
	SDKName     string
	SDKVersions []string
	// Capabilities, Admission and Environment are the spec's, as the
	// package's variables of those names.
	Capabilities driver.Capabilities
	Admission    Admission
	Environment  []EnvRule
	// Calls holds each SDK call's rule by the call's name in the spec.
	Calls map[string]*CallRule
}

// Holds reports whether the spec holds for SDK sdk at version v.
func (s *Spec) Holds(sdk, v string) bool {
	return s.SDKName == sdk && VersionHolds(s.SDKVersions, v)
}

// Call returns the rule of the call the spec names name. A driver asks for
// each call it makes when it opens, so a spec that lacks one is an error at
// open, not a nil rule in the middle of a put.
func (s *Spec) Call(name string) (*CallRule, error) {
	if c, ok := s.Calls[name]; ok {
		return c, nil
	}
	names := make([]string, 0, len(s.Calls))
	for n := range s.Calls {
		names = append(names, n)
	}
	slices.Sort(names)
	return nil, fmt.Errorf("%s has no call %q (it names %s); the driver makes that call for %s %s, so the spec must say what its answers mean",
		s.Source, name, strings.Join(names, ", "), s.SDKName, strings.Join(s.SDKVersions, ", "))
}

// String names the spec by its SDK, versions and file:
// "redis-server 7 (spec/redis-7.yaml)".
func (s *Spec) String() string {
	return s.SDKName + " " + strings.Join(s.SDKVersions, ", ") + " (" + s.Source + ")"
}

// VersionHolds reports whether a spec naming versions holds for the version
// v an SDK reports. A spec version holds for v when it is v, or when it names
// a release line v belongs to: v continues it with a dot and then only
// digits and dots. So "7" holds for 7.0.15, and "8.1" for 8.1.1 but not for
// 8.10.0; "0.3.13" holds for 0.3.13.2 but not for 0.3.13.post1 (a build of
// another kind, which may differ: Mooncake's "0.3.12.post1" tag and main
// both report 0.3.12.post1) nor for "0.3.13 (git: …)".
func VersionHolds(versions []string, v string) bool {
	for _, w := range versions {
		if v == w || lineHolds(w, v) {
			return true
		}
	}
	return false
}

// lineHolds reports whether v is a patch release of line w: w, a dot, then
// digits and dots only.
func lineHolds(w, v string) bool {
	rest, ok := strings.CutPrefix(v, w+".")
	if !ok || rest == "" {
		return false
	}
	for _, r := range rest {
		if r != '.' && (r < '0' || r > '9') {
			return false
		}
	}
	return true
}

// VersionsOverlap reports whether some version one of a's versions holds
// for is also held by one of b's: the same string, or one a release line
// the other belongs to. Two specs of one store and SDK must not overlap, or
// a reported version would have two specs.
func VersionsOverlap(a, b []string) (string, string, bool) {
	for _, x := range a {
		for _, y := range b {
			if x == y || lineHolds(x, y) || lineHolds(y, x) {
				return x, y, true
			}
		}
	}
	return "", "", false
}

// Pick returns the spec among specs that holds for SDK sdk at version v. For
// any other SDK or version it returns an error that names what was reported
// and every spec the driver holds, so a user sees at once what to install
// or which spec to add. store prefixes the error ("redis").
func Pick(store, sdk, v string, specs ...*Spec) (*Spec, error) {
	for _, s := range specs {
		if s.Holds(sdk, v) {
			return s, nil
		}
	}
	held := make([]string, len(specs))
	for i, s := range specs {
		held[i] = s.String()
	}
	return nil, fmt.Errorf("%s: %s %s has no spec; kvblob holds specs for %s. Run a version one of them holds for, or add a spec for this one (drivergen new --from <the nearest spec> --version %q), read the SDK's changes into it, and run 'make generate'",
		store, sdk, v, strings.Join(held, "; "), v)
}

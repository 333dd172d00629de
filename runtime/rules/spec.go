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
	// generated package's Capabilities(), admission and environment hold
	// them.
	Capabilities driver.Capabilities
	Admission    Admission
	Environment  []EnvRule
	// RowLimitAtOpen: the driver reads its row limit from its deployment
	// at open (limits.max_row_bytes {at_open: true}); Admission.MaxRowBytes
	// is only the bound, so the driver admits through
	// Admission.WithMaxRowBytes(the limit it read), never Admission alone.
	RowLimitAtOpen bool
	// Calls holds each SDK call's rule by the call's name in the spec.
	Calls map[string]*CallRule
	// Codes is the SDK's code table: each code's value by its name.
	Codes map[string]int64
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
// v an SDK reports. A spec version is exact ("0.3.13", "v1.109.1",
// "0.3.12.post1 (git: 3b5a59413)": that string only), or a release line
// ending in ".x", which holds for every release that continues its prefix
// with a dot and then only digits and dots: "7.x" holds for 7.0.15 and
// 7.2.4, "8.1.x" for 8.1.1 but not 8.10.0, 8.1.1-rc1 or 8.1 itself.
func VersionHolds(versions []string, v string) bool {
	for _, w := range versions {
		if v == w || lineHolds(w, v) {
			return true
		}
	}
	return false
}

// line returns the prefix of a release line ("8.1" of "8.1.x").
func line(w string) (string, bool) {
	p, ok := strings.CutSuffix(w, ".x")
	return p, ok && p != ""
}

// lineHolds reports whether v is a release of line w: w's prefix, a dot,
// then digits and dots only.
func lineHolds(w, v string) bool {
	p, ok := line(w)
	if !ok {
		return false
	}
	rest, ok := strings.CutPrefix(v, p+".")
	return ok && rest != "" && strings.Trim(rest, ".0123456789") == ""
}

// VersionsOverlap reports two versions, one of a and one of b, that some
// reported version would match both of: the same string, a line and a
// release in it, or two lines one inside the other ("7.x" and "7.2.x").
// Two specs of one store and SDK must not overlap, or a reported version
// would have two specs.
func VersionsOverlap(a, b []string) (string, string, bool) {
	for _, x := range a {
		for _, y := range b {
			px, lx := line(x)
			py, ly := line(y)
			if x == y || lineHolds(x, y) || lineHolds(y, x) ||
				lx && ly && (lineHolds(x, py) || lineHolds(y, px)) {
				return x, y, true
			}
		}
	}
	return "", "", false
}

// CheckVersion says what is wrong with a spec version string, or "": it
// must be non-empty, without surrounding spaces, and "x" may only end it as
// a release line (".x" after a prefix: "7.x", "8.1.x").
func CheckVersion(w string) string {
	switch {
	case w == "":
		return "is empty"
	case strings.TrimSpace(w) != w:
		return "has spaces around it"
	case w == "x" || w == ".x" || w == "*":
		return "matches nothing; name a release (\"7.0.15\") or a release line (\"7.x\")"
	case strings.HasSuffix(w, "."):
		return "ends in a dot; a release line ends in \".x\" (\"8.1.x\")"
	case strings.Contains(strings.TrimSuffix(w, ".x"), ".x.") || strings.HasSuffix(strings.TrimSuffix(w, ".x"), ".x"):
		return "has \".x\" before its end; only the last part of a release line is x"
	}
	return ""
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
	return nil, fmt.Errorf("%s: %s %s has no spec; kvblob holds specs for %s. Run a version one of them holds for, "+
		"or add a spec for this one: 'drivergen new --from <the nearest spec> --version <its release, or its line such as 8.0.x>' "+
		"(then set sdk.name if the SDK is another's), read the SDK's changes into it, and run 'make generate'",
		store, sdk, v, Describe(specs...))
}

// Describe names specs as Pick's error does: "redis-server 7.x
// (spec/redis-7.yaml); valkey-server 8.1.x (spec/redis-valkey-8.1.yaml)",
// or "none".
func Describe(specs ...*Spec) string {
	if len(specs) == 0 {
		return "none"
	}
	held := make([]string, len(specs))
	for i, s := range specs {
		held[i] = s.String()
	}
	return strings.Join(held, "; ")
}

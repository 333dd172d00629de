package rules

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kvblob/kvblob/runtime/driver"
)

// Spec is one spec file as a value: a store's generated package holds one
// per spec file (embedded in the package's own Spec type, beside the typed
// table of its calls). A driver that serves several versions of its SDK,
// each described by its own spec file, picks among them with what its SDK
// reports (Pick, or the generated package's Pick), so that every
// code-to-result decision it makes comes from the spec of the version it
// is talking to.
type Spec struct {
	// Store is the store the spec describes; Source is its file
	// ("spec/redis-7.yaml").
	Store, Source string
	// SDKName and SDKVersions say which SDK, at which releases, the spec
	// holds for (see VersionHolds).
	SDKName     string
	SDKVersions []string
	// VerifiesCommits: the spec lists the commits it was verified on
	// (sdk.verified), and only a build of one of them is verified
	// (Verified). Without it every build of a listed release is.
	VerifiesCommits bool
	// SDKVerified are those commits (abbreviated git hashes).
	SDKVerified []string
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
	// Defaults are the spec's blob defaults (its config block).
	Defaults Defaults
	// Codes is the SDK's code table: each code's value by its name, for
	// fault texts and reports (CodeName). A driver reads its calls and
	// codes through its store's generated package, typed (its Spec's
	// Calls and its Code constants), never by name: a spec that lacks one
	// is then a compile error, not an error at open.
	Codes map[string]int64
}

// Defaults are a spec's backend defaults (0: the backend's own default).
type Defaults struct {
	Workers, RowsPerBatch int
	BytesPerBatch         int64
}

// Holds reports whether the spec holds for SDK sdk at version v: v is a
// build of one of the spec's releases (see VersionHolds), verified on its
// commit or not (see Verified).
func (s *Spec) Holds(sdk, v string) bool {
	return s.SDKName == sdk && VersionHolds(s.SDKVersions, v)
}

// Verified reports whether build v (which Holds) is one the spec was
// verified on, and if not, why, in words a log or report can print. A spec
// that lists no commits (VerifiesCommits false) verifies every build of
// its releases: an SDK whose builds report no commit (a server's
// release) is verified by release. One that lists them verifies only a
// build whose reported commit is one of them: the same release built from
// another commit may behave otherwise (Mooncake's main reports the last
// tag's release for every commit after it), so its answers were never
// read against the spec.
func (s *Spec) Verified(v string) (bool, string) {
	if !s.VerifiesCommits {
		return true, ""
	}
	b := ParseBuild(v)
	if b.Commit == "" {
		return false, fmt.Sprintf("build %q reports no commit; %s", v, s.verifiedOn())
	}
	for _, c := range s.SDKVerified {
		if SameCommit(c, b.Commit) {
			return true, ""
		}
	}
	return false, fmt.Sprintf("build %q is commit %s; %s", v, b.Commit, s.verifiedOn())
}

// verifiedOn says which commits the spec was verified on, or that it names
// none yet (a new version's spec, before its first real run).
func (s *Spec) verifiedOn() string {
	if len(s.SDKVerified) == 0 {
		return s.Source + " names no verified commit yet: run the gate on a real build and record its commit in sdk.verified"
	}
	return s.Source + " was verified on commits " + strings.Join(s.SDKVerified, ", ") + " only"
}

// Build is an SDK build as it reports itself: a release and, when it was
// built from a git checkout, the commit. Mooncake reports
// "0.3.12.post1 (git: 3b5a59413)" (version.h, MOONCAKE_DISPLAY_VERSION);
// a server such as Redis reports its release alone ("7.0.15").
type Build struct {
	Release string
	// Commit is the abbreviated hash, or "" when the build names none
	// (no "(git: ...)" part, or "(git: unknown)").
	Commit string
}

// ParseBuild reads a reported version as a Build: "R (git: H)" is release
// R at commit H (H hexadecimal, else no commit); anything else is a
// release alone.
func ParseBuild(v string) Build {
	rel, rest, ok := strings.Cut(v, " (git: ")
	if !ok || !strings.HasSuffix(rest, ")") {
		return Build{Release: v}
	}
	c := strings.TrimSuffix(rest, ")")
	if CheckCommit(c) != "" {
		c = ""
	}
	return Build{Release: rel, Commit: c}
}

// MinCommitChars is the shortest abbreviated hash a commit may be given
// by: git's own default abbreviation.
const MinCommitChars = 7

// CheckCommit says what is wrong with a commit as sdk.verified lists it,
// or "": 7 to 40 lower-case hexadecimal digits.
func CheckCommit(c string) string {
	if len(c) < MinCommitChars || len(c) > 40 {
		return fmt.Sprintf("has %d characters; want an abbreviated git hash of %d to 40 hex digits", len(c), MinCommitChars)
	}
	if strings.Trim(c, "0123456789abcdef") != "" {
		return "is not lower-case hexadecimal; want a git hash (\"3b5a59413\")"
	}
	return ""
}

// SameCommit reports whether two abbreviated hashes name one commit: one
// is a prefix of the other (builds abbreviate to 9 digits, git log to 7).
func SameCommit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return a != "" && strings.HasPrefix(b, a)
}

// SupportsVersion reports whether the spec holds for SDK version v,
// whatever the SDK's name: v is a build of one of SDKVersions
// (VersionHolds).
func (s *Spec) SupportsVersion(v string) bool { return VersionHolds(s.SDKVersions, v) }

// CheckEnvironment refuses the settings the spec's environment block names,
// each with its reason (CheckEnvironment). getenv is os.Getenv in
// production.
func (s *Spec) CheckEnvironment(getenv func(string) string) error {
	return CheckEnvironment(s.Environment, getenv)
}

// CodeName names code as the spec's code table does ("OBJECT_NOT_FOUND"),
// or "Code(-9999)" for a value the table lacks.
func (s *Spec) CodeName(code int64) string {
	for name, v := range s.Codes {
		if v == code {
			return name
		}
	}
	return "Code(" + strconv.FormatInt(code, 10) + ")"
}

// String names the spec by its SDK, versions and file:
// "redis-server 7 (spec/redis-7.yaml)".
func (s *Spec) String() string {
	return s.SDKName + " " + strings.Join(s.SDKVersions, ", ") + " (" + s.Source + ")"
}

// VersionHolds reports whether a spec naming versions holds for the version
// v an SDK reports. A spec version is a release: exact ("0.3.12.post1",
// "v1.109.1": that release only), or a release line ending in ".x", which
// holds for every release that continues its prefix with a dot and then
// only digits and dots: "7.x" holds for 7.0.15 and 7.2.4, "8.1.x" for
// 8.1.1 but not 8.10.0, 8.1.1-rc1 or 8.1 itself. It is matched against
// the release of the build v names (ParseBuild): "0.3.12.post1" holds for
// "0.3.12.post1 (git: 3b5a59413)" and for every other build of that
// release; which builds were verified is Spec.Verified's question.
func VersionHolds(versions []string, v string) bool {
	v = ParseBuild(v).Release
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
	case ParseBuild(w).Release != w || strings.ContainsAny(w, " ()"):
		return fmt.Sprintf("names a build, not a release; list the release (%q) here and the build's commit under sdk.verified", ParseBuild(w).Release)
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
	from := "<the nearest spec>"
	if len(specs) > 0 {
		from = specs[len(specs)-1].Source
	}
	return nil, fmt.Errorf("%s: %s %s has no spec; kvblob holds specs for %s. Run a release one of them holds for, "+
		"or start a spec for this one: 'drivergen new --from %s --version %s' "+
		"(or its line, such as 8.0.x; then set sdk.name if the SDK is another's), read the SDK's changes into it, and run 'make generate'",
		store, sdk, v, Describe(specs...), from, ParseBuild(v).Release)
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

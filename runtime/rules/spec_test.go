package rules

import (
	"strings"
	"testing"
)

func TestVersionHolds(t *testing.T) {
	for _, c := range []struct {
		versions []string
		v        string
		want     bool
	}{
		{[]string{"7.x"}, "7.0.15", true},
		{[]string{"7.x"}, "7.2.4", true},
		{[]string{"7.x"}, "7", false},
		{[]string{"7.x"}, "70.1", false},
		{[]string{"7.x"}, "6.2.0", false},
		{[]string{"8.1.x"}, "8.1.1", true},
		{[]string{"8.1.x"}, "8.10.0", false},
		{[]string{"8.1.x"}, "8.0.1", false},
		{[]string{"8.1.x"}, "8.1.", false},
		{[]string{"8.1.x"}, "8.1.1-rc1", false},
		{[]string{"7"}, "7", true},
		{[]string{"7"}, "7.0.15", false}, // a plain version is exact
		{[]string{"0.3.13"}, "0.3.13.2", false},
		// A release holds for every build of it, whatever its commit.
		{[]string{"0.3.12.post1"}, "0.3.12.post1 (git: 3b5a59413)", true},
		{[]string{"0.3.12.post1"}, "0.3.12.post1 (git: 6c1b1e0fa)", true},
		{[]string{"0.3.12.post1"}, "0.3.12.post1 (git: unknown)", true},
		{[]string{"0.3.12.post1"}, "0.3.12.post1", true},
		{[]string{"0.3.12"}, "0.3.12.post1 (git: 3b5a59413)", false},
		{[]string{"0.3.x"}, "0.3.12 (git: 3b5a59413)", true},
		{[]string{"0.3.13"}, "0.3.12.post1 (git: 3b5a59413)", false},
		{[]string{"v1.109.1"}, "v1.109.1", true},
		{[]string{"v1.109.1"}, "v1.109.10", false},
		{[]string{"x"}, "1", false},
		{nil, "7", false},
	} {
		if got := VersionHolds(c.versions, c.v); got != c.want {
			t.Errorf("VersionHolds(%q, %q) = %v, want %v", c.versions, c.v, got, c.want)
		}
	}
}

func TestVersionsOverlap(t *testing.T) {
	for _, c := range []struct {
		a, b []string
		want bool
	}{
		{[]string{"7.x"}, []string{"8.1.x"}, false},
		{[]string{"7.x"}, []string{"7.2.x"}, true},
		{[]string{"7.2.x"}, []string{"7.x"}, true},
		{[]string{"7.x"}, []string{"7.2.4"}, true},
		{[]string{"8.1.x"}, []string{"8.10.x"}, false},
		{[]string{"7"}, []string{"7.x"}, false},
		{[]string{"1", "2"}, []string{"3", "2"}, true},
	} {
		if _, _, got := VersionsOverlap(c.a, c.b); got != c.want {
			t.Errorf("VersionsOverlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for w, want := range map[string]string{
		"7.x": "", "8.1.x": "", "0.3.12.post1": "", "0.3.12.post1 (git: 3b5a59413)": "names a build, not a release", "0.3 (rc)": "names a build", "v1.109.1": "", "linux": "",
		"": "is empty", " 7": "has spaces", "x": "matches nothing", "*": "matches nothing",
		"8.1.": "ends in a dot", "7.x.1": "has \".x\" before its end", "7.x.x": "has \".x\" before its end",
	} {
		got := CheckVersion(w)
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("CheckVersion(%q) = %q, want %q", w, got, want)
		}
	}
}

func TestPick(t *testing.T) {
	redis := &Spec{Store: "redis", Source: "spec/redis-7.yaml", SDKName: "redis-server", SDKVersions: []string{"7.x"}}
	valkey := &Spec{Store: "redis", Source: "spec/redis-valkey-8.1.yaml", SDKName: "valkey-server", SDKVersions: []string{"8.1.x"}}
	for _, c := range []struct {
		sdk, v string
		want   *Spec
	}{
		{"redis-server", "7.0.15", redis},
		{"valkey-server", "8.1.1", valkey},
		{"valkey-server", "7.2.4", nil}, // a Valkey is never a Redis of the version it mimics
		{"valkey-server", "8.0.1", nil},
		{"redis-server", "8.1.1", nil},
	} {
		got, err := Pick("redis", c.sdk, c.v, redis, valkey)
		if got != c.want {
			t.Errorf("Pick(%s %s) = %v, want %v", c.sdk, c.v, got, c.want)
		}
		if c.want == nil {
			if err == nil {
				t.Fatalf("Pick(%s %s): no error", c.sdk, c.v)
			}
			for _, part := range []string{"redis: " + c.sdk + " " + c.v + " has no spec", "redis-server 7.x (spec/redis-7.yaml)", "valkey-server 8.1.x (spec/redis-valkey-8.1.yaml)", "'drivergen new --from spec/redis-valkey-8.1.yaml --version " + c.v + "'"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("Pick(%s %s) error %q does not say %q", c.sdk, c.v, err, part)
				}
			}
		}
	}
}

func TestParseBuild(t *testing.T) {
	for v, want := range map[string]Build{
		"0.3.12.post1 (git: 3b5a59413)": {"0.3.12.post1", "3b5a59413"},
		"0.3.12.post1 (git: unknown)":   {"0.3.12.post1", ""},
		"0.3.12.post1":                  {"0.3.12.post1", ""},
		"7.0.15":                        {"7.0.15", ""},
		"1 (git: 3b5a59413":             {"1 (git: 3b5a59413", ""},
	} {
		if got := ParseBuild(v); got != want {
			t.Errorf("ParseBuild(%q) = %+v, want %+v", v, got, want)
		}
	}
}

// TestVerified: a spec that lists commits verifies only builds of them (by
// either abbreviation); one that lists none verifies every build of its
// releases.
func TestVerified(t *testing.T) {
	mc := &Spec{Source: "spec/mooncake-0.3.13.yaml", SDKName: "mooncake-store", SDKVersions: []string{"0.3.12.post1"},
		VerifiesCommits: true, SDKVerified: []string{"3b5a59413"}}
	none := &Spec{Source: "spec/new.yaml", SDKVersions: []string{"0.3.14"}, VerifiesCommits: true}
	redis := &Spec{Source: "spec/redis-7.yaml", SDKVersions: []string{"7.x"}}
	for _, c := range []struct {
		s    *Spec
		v    string
		want bool
		why  string
	}{
		{mc, "0.3.12.post1 (git: 3b5a59413)", true, ""},
		{mc, "0.3.12.post1 (git: 3b5a594)", true, ""},
		{mc, "0.3.12.post1 (git: 3b5a594130d2)", true, ""},
		{mc, "0.3.12.post1 (git: 6c1b1e0fa)", false, `build "0.3.12.post1 (git: 6c1b1e0fa)" is commit 6c1b1e0fa; spec/mooncake-0.3.13.yaml was verified on commits 3b5a59413 only`},
		{mc, "0.3.12.post1 (git: unknown)", false, "reports no commit"},
		{mc, "0.3.12.post1", false, "reports no commit"},
		{none, "0.3.14 (git: 3b5a59413)", false, "names no verified commit yet: run the gate on a real build and record its commit in sdk.verified"},
		{redis, "7.0.15", true, ""},
	} {
		got, why := c.s.Verified(c.v)
		if got != c.want || !strings.Contains(why, c.why) || c.want != (why == "") {
			t.Errorf("%s: Verified(%q) = %v, %q; want %v, %q", c.s.Source, c.v, got, why, c.want, c.why)
		}
	}
}

func TestCheckCommit(t *testing.T) {
	for c, want := range map[string]string{
		"3b5a594": "", "3b5a59413": "", strings.Repeat("a", 40): "",
		"3b5a59": "has 6 characters", strings.Repeat("a", 41): "has 41 characters", "3B5A594": "not lower-case hexadecimal", "3b5a59g": "not lower-case",
	} {
		got := CheckCommit(c)
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("CheckCommit(%q) = %q, want %q", c, got, want)
		}
	}
}

func TestPickWithNoSpecs(t *testing.T) {
	_, err := Pick("x", "x-sdk", "1")
	if err == nil || !strings.Contains(err.Error(), "kvblob holds specs for none") {
		t.Errorf("Pick() error = %v", err)
	}
}

// TestCodeNameNamesTheTablesCodesAndNumbersTheRest: a code in the spec's
// table prints by its name, any other by its number in decimal (no test
// printed a code the table lacks: a base of 11 printed "Code(-9999)" as
// "Code(-6a70)", tried).
func TestCodeNameNamesTheTablesCodesAndNumbersTheRest(t *testing.T) {
	s := &Spec{Codes: map[string]int64{"OBJECT_NOT_FOUND": -704, "OK": 0}}
	for _, c := range []struct {
		code int64
		want string
	}{
		{-704, "OBJECT_NOT_FOUND"},
		{0, "OK"},
		{-9999, "Code(-9999)"},
		{42, "Code(42)"},
	} {
		if got := s.CodeName(c.code); got != c.want {
			t.Errorf("CodeName(%d) = %q, want %q", c.code, got, c.want)
		}
	}
}

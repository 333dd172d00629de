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
		{[]string{"0.3.12.post1 (git: 3b5a59413)"}, "0.3.12.post1 (git: 3b5a59413)", true},
		{[]string{"0.3.12.post1 (git: 3b5a59413)"}, "0.3.12.post1", false},
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
		"7.x": "", "8.1.x": "", "0.3.12.post1 (git: 3b5a59413)": "", "v1.109.1": "", "linux": "",
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
			for _, part := range []string{"redis: " + c.sdk + " " + c.v + " has no spec", "redis-server 7.x (spec/redis-7.yaml)", "valkey-server 8.1.x (spec/redis-valkey-8.1.yaml)", "drivergen new"} {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("Pick(%s %s) error %q does not say %q", c.sdk, c.v, err, part)
				}
			}
		}
	}
}

func TestSpecCall(t *testing.T) {
	get := &CallRule{Call: "get"}
	s := &Spec{Source: "spec/x.yaml", SDKName: "x", SDKVersions: []string{"1"}, Calls: map[string]*CallRule{"get": get, "put": {}}}
	if c, err := s.Call("get"); c != get || err != nil {
		t.Errorf("Call(get) = %v, %v", c, err)
	}
	_, err := s.Call("store")
	if err == nil || !strings.Contains(err.Error(), `spec/x.yaml has no call "store" (it names get, put)`) {
		t.Errorf("Call(store) error = %v", err)
	}
}

func TestPickWithNoSpecs(t *testing.T) {
	_, err := Pick("x", "x-sdk", "1")
	if err == nil || !strings.Contains(err.Error(), "kvblob holds specs for none") {
		t.Errorf("Pick() error = %v", err)
	}
}

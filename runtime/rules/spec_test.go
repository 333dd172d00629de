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
		{[]string{"7"}, "7", true},
		{[]string{"7"}, "7.0.15", true},
		{[]string{"7"}, "7.2.4", true},
		{[]string{"7"}, "70.1", false},
		{[]string{"7"}, "6.2.0", false},
		{[]string{"8.1"}, "8.1.1", true},
		{[]string{"8.1"}, "8.10.0", false},
		{[]string{"8.1"}, "8.0.1", false},
		{[]string{"8.1"}, "8.1.", false},
		{[]string{"0.3.13"}, "0.3.13.2", true},
		{[]string{"0.3.13"}, "0.3.13.post1", false},
		{[]string{"0.3.12.post1 (git: 3b5a59413)"}, "0.3.12.post1 (git: 3b5a59413)", true},
		{[]string{"0.3.12.post1 (git: 3b5a59413)"}, "0.3.12.post1", false},
		{[]string{"v1.109.1"}, "v1.109.1", true},
		{[]string{"v1.109.1"}, "v1.109.10", false},
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
		{[]string{"7"}, []string{"8.1"}, false},
		{[]string{"7"}, []string{"7.2"}, true},
		{[]string{"8.1"}, []string{"8"}, true},
		{[]string{"8.1"}, []string{"8.10"}, false},
		{[]string{"1", "2"}, []string{"3", "2"}, true},
	} {
		if _, _, got := VersionsOverlap(c.a, c.b); got != c.want {
			t.Errorf("VersionsOverlap(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestPick(t *testing.T) {
	redis := &Spec{Store: "redis", Source: "spec/redis-7.yaml", SDKName: "redis-server", SDKVersions: []string{"7"}}
	valkey := &Spec{Store: "redis", Source: "spec/redis-valkey-8.1.yaml", SDKName: "valkey-server", SDKVersions: []string{"8.1"}}
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
			for _, part := range []string{"redis: " + c.sdk + " " + c.v + " has no spec", "redis-server 7 (spec/redis-7.yaml)", "valkey-server 8.1 (spec/redis-valkey-8.1.yaml)", "drivergen new"} {
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

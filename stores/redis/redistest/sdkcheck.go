package redistest

import (
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/gate"
	gen "github.com/kvblob/kvblob/generated/redis"
	"github.com/kvblob/kvblob/runtime/driver"
)

// SDKChecks ask the live server for what spec/redis-7.yaml relies on: its
// version, and the replies the call rules map (a nil reply from SET NX on
// a present key and from GET on an absent one, an OOM error reply from a
// full server). The generated cases stage these replies through the
// driver; these ask the server itself, so a server that answers otherwise
// fails here, naming the rule.
func SDKChecks() []gate.SDKCheck {
	return []gate.SDKCheck{
		{Name: "server_version_is_one_the_spec_holds_for", Run: func(h *conformance.Harness) {
			info, err := client(h).Info(h.Ctx, "server").Result()
			if err != nil {
				h.T.Fatalf("INFO server: %v", err)
			}
			if err := versionHeld(info, gen.SupportsVersion); err != nil {
				h.T.Error(err)
			}
		}},
		{Name: "SET_NX_on_a_present_key_answers_nil", Spec: casePos("claim/NIL/exists"), Run: func(h *conformance.Harness) {
			c, key := client(h), h.Key("nx")
			if err := c.Set(h.Ctx, key, "object", 0).Err(); err != nil {
				h.T.Fatalf("SET: %v", err)
			}
			err := c.SetArgs(h.Ctx, key, "marker", goredis.SetArgs{Mode: "NX", TTL: 10e9}).Err()
			if err := wantNil(err); err != nil {
				h.T.Errorf("%s: SET NX PX on a present key %v; the claim rule for NIL relies on it", casePos("claim/NIL/exists"), err)
			}
		}},
		{Name: "GET_of_an_absent_key_answers_nil", Spec: casePos("get/NIL"), Run: func(h *conformance.Harness) {
			err := client(h).Get(h.Ctx, h.Key("absent")).Err()
			if err := wantNil(err); err != nil {
				h.T.Errorf("%s: GET of an absent key %v; the get rule for NIL (MISS) relies on it", casePos("get/NIL"), err)
			}
		}},
		{Name: "a_full_server_answers_OOM", Spec: casePos("claim/OOM"), Run: func(h *conformance.Harness) {
			c := client(h)
			h.T.Cleanup(func() { _ = c.ConfigSet(h.Ctx, "maxmemory", "0").Err() })
			for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
				if err := c.ConfigSet(h.Ctx, kv[0], kv[1]).Err(); err != nil {
					h.T.Fatalf("CONFIG SET %s %s: %v", kv[0], kv[1], err)
				}
			}
			err := c.SetArgs(h.Ctx, h.Key("full"), "marker", goredis.SetArgs{Mode: "NX", TTL: 10e9}).Err()
			if err := wantOOM(err); err != nil {
				h.T.Errorf("%s: SET NX on a full server (maxmemory 1, noeviction) %v; the OOM rule (DECLINED) relies on it", casePos("claim/OOM"), err)
			}
		}},
	}
}

func client(h *conformance.Harness) goredis.UniversalClient {
	var c goredis.UniversalClient
	if !driver.As(h.D, &c) {
		h.T.Fatalf("redistest: %T reaches no go-redis client", h.D)
	}
	return c
}

// casePos is the spec position of the generated case id.
func casePos(id string) string {
	for _, c := range gen.Cases {
		if c.ID == id {
			return c.Pos
		}
	}
	return ""
}

func infoField(info, name string) string {
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
			return v
		}
	}
	return ""
}

// versionHeld checks the redis_version of an INFO server reply against the
// spec's major versions.
func versionHeld(info string, supports func(string) bool) error {
	v := infoField(info, "redis_version")
	if v == "" {
		return errors.New("INFO server holds no redis_version")
	}
	major, _, _ := strings.Cut(v, ".")
	if !supports(major) {
		return fmt.Errorf("the server is redis %s; the spec holds for major versions %v (sdk.versions)", v, gen.SDKVersions)
	}
	return nil
}

// wantNil checks that a reply was nil.
func wantNil(err error) error {
	if !errors.Is(err, goredis.Nil) {
		return fmt.Errorf("answered %v, not a nil reply", replyOf(err))
	}
	return nil
}

// wantOOM checks that a reply was an OOM error, which the driver
// classifies as the spec's OOM.
func wantOOM(err error) error {
	if err == nil || !strings.HasPrefix(err.Error(), "OOM ") {
		return fmt.Errorf("answered %v, not an \"OOM ...\" error reply", replyOf(err))
	}
	return nil
}

func replyOf(err error) string {
	if err == nil {
		return "OK"
	}
	return fmt.Sprintf("%q", err.Error())
}

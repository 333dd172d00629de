package rediskit

import (
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
	"github.com/kvblob/kvblob/stores/redis"
)

// SDKChecks ask a live server of build b for what b's spec relies on: that
// it is a server the spec holds for, and the replies the call rules map (a
// nil reply from SET NX on a present key and from GET on an absent one, an
// OOM error reply from a full server; on Valkey 8.1, SET IFEQ's answers).
// The generated cases stage these replies through the driver; these ask
// the server itself, so a server that answers otherwise fails here, naming
// the rule.
func SDKChecks(b *Build) []conformance.SDKCheck {
	pos := func(id string) string { return storekit.SpecPos(b.Cases, id) }
	checks := []conformance.SDKCheck{
		{Name: "server_is_one_the_spec_holds_for", Run: func(h *conformance.Harness) {
			hello, err := redis.Hello(h.Ctx, client(h))
			if err != nil {
				h.T.Fatalf("HELLO: %v", err)
			}
			if err := versionHeld(hello, b.Spec); err != nil {
				h.T.Error(err)
			}
		}},
		{Name: "SET_NX_on_a_present_key_answers_nil", Spec: pos("claim/NIL/exists"), Run: func(h *conformance.Harness) {
			c, key := client(h), h.Key("nx")
			if err := c.Set(h.Ctx, key, "object", 0).Err(); err != nil {
				h.T.Fatalf("SET: %v", err)
			}
			err := c.SetArgs(h.Ctx, key, "marker", goredis.SetArgs{Mode: "NX", TTL: 10e9}).Err()
			if err := wantNil(err); err != nil {
				h.T.Errorf("%s: SET NX PX on a present key %v; the claim rule for NIL relies on it", pos("claim/NIL/exists"), err)
			}
		}},
		{Name: "GET_of_an_absent_key_answers_nil", Spec: pos("get/NIL"), Run: func(h *conformance.Harness) {
			err := client(h).Get(h.Ctx, h.Key("absent")).Err()
			if err := wantNil(err); err != nil {
				h.T.Errorf("%s: GET of an absent key %v; the get rule for NIL (MISS) relies on it", pos("get/NIL"), err)
			}
		}},
		{Name: "a_full_server_answers_OOM", Spec: pos("claim/OOM"), Run: func(h *conformance.Harness) {
			c := client(h)
			h.T.Cleanup(func() { _ = c.ConfigSet(h.Ctx, "maxmemory", "0").Err() })
			for _, kv := range [][2]string{{"maxmemory-policy", "noeviction"}, {"maxmemory", "1"}} {
				if err := c.ConfigSet(h.Ctx, kv[0], kv[1]).Err(); err != nil {
					h.T.Fatalf("CONFIG SET %s %s: %v", kv[0], kv[1], err)
				}
			}
			err := c.SetArgs(h.Ctx, h.Key("full"), "marker", goredis.SetArgs{Mode: "NX", TTL: 10e9}).Err()
			if err := wantOOM(err); err != nil {
				h.T.Errorf("%s: SET NX on a full server (maxmemory 1, noeviction) %v; the OOM rule (DECLINED) relies on it", pos("claim/OOM"), err)
			}
		}},
	}
	if b.Spec == Valkey81.Spec {
		checks = append(checks, ifeqChecks(pos)...)
	}
	return checks
}

// ifeqChecks ask a Valkey 8.1 for the answers of SET IFEQ that its store
// rule maps: OK when the key holds the comparison value (and the key then
// holds the new value, with no expiry), nil when it holds another value or
// is absent (and nothing changed).
func ifeqChecks(pos func(string) string) []conformance.SDKCheck {
	return []conformance.SDKCheck{
		{Name: "SET_IFEQ_over_this_writers_marker_stores", Spec: pos("store/OK"), Run: func(h *conformance.Harness) {
			c, key := client(h), h.Key("ifeq")
			if err := c.Set(h.Ctx, key, "marker", 10e9).Err(); err != nil {
				h.T.Fatalf("SET: %v", err)
			}
			err := c.Do(h.Ctx, "SET", key, "object", "IFEQ", "marker").Err()
			v, _ := c.Get(h.Ctx, key).Result()
			ttl, _ := c.PTTL(h.Ctx, key).Result()
			if err != nil || v != "object" || ttl != -1 {
				h.T.Errorf("%s: SET IFEQ over the writer's own marker answered %s, left %q with PTTL %v; the store rule for OK (READY) relies on OK, the object, and no expiry", pos("store/OK"), replyOf(err), v, ttl)
			}
		}},
		{Name: "SET_IFEQ_over_another_value_answers_nil", Spec: pos("store/NIL"), Run: func(h *conformance.Harness) {
			c, key := client(h), h.Key("ifeq-other")
			if err := c.Set(h.Ctx, key, "another writer's marker", 0).Err(); err != nil {
				h.T.Fatalf("SET: %v", err)
			}
			err := c.Do(h.Ctx, "SET", key, "object", "IFEQ", "marker").Err()
			v, _ := c.Get(h.Ctx, key).Result()
			errAbsent := c.Do(h.Ctx, "SET", h.Key("ifeq-absent"), "object", "IFEQ", "marker").Err()
			n, _ := c.Exists(h.Ctx, h.Key("ifeq-absent")).Result()
			if wantNil(err) != nil || v != "another writer's marker" || wantNil(errAbsent) != nil || n != 0 {
				h.T.Errorf("%s: SET IFEQ over another value answered %s (the key then held %q), over no key %s (it then existed: %d); the store rule for NIL relies on nil and nothing written",
					pos("store/NIL"), replyOf(err), v, replyOf(errAbsent), n)
			}
		}},
	}
}

func client(h *conformance.Harness) goredis.UniversalClient {
	var c goredis.UniversalClient
	if !driver.As(h.D, &c) {
		h.T.Fatalf("rediskit: %T reaches no go-redis client", h.D)
	}
	return c
}

// versionHeld checks that the server that answered HELLO with hello is one
// spec holds for.
func versionHeld(hello map[string]string, spec *rules.Spec) error {
	sdk, v := redis.ServerIdentity(hello)
	if !spec.Holds(sdk, v) {
		return fmt.Errorf("the server is %s %s; %s holds for %s %v (sdk.versions)", sdk, v, spec.Source, spec.SDKName, spec.SDKVersions)
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

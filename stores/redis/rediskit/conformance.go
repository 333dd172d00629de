package rediskit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	redisgen "github.com/kvblob/kvblob/generated/redis"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/trailer"
)

// Deployment is what a factory connects to: one server or a Cluster.
type Deployment struct {
	Addrs   []string
	Cluster bool
	// Integrity is the drivers' row keys (nil: integrity off).
	Integrity *trailer.Integrity
	// Username and Password, when set, are the ACL user the drivers
	// connect as; the factory and the stagers then set the deployment up
	// and play the other writer as the default user, on a client of their
	// own, so the user needs only what the driver sends.
	Username, Password string
}

// withFaults is a Redis driver, the fault hook on its client, and the
// client that sets the deployment up (the driver's own, unless the driver
// connects as an ACL user).
type withFaults struct {
	*redis.Driver
	faults *Faults
	admin  goredis.UniversalClient
}

// Close closes the driver, and then the set-up client if it is its own.
func (w *withFaults) Close() error {
	err := w.Driver.Close()
	if err == nil && w.admin != w.Driver.Client() {
		_ = w.admin.Close()
	}
	return err
}

func parts(d driver.Driver) (*redis.Driver, *Faults) {
	w := storekit.Unwrap[*withFaults](d)
	return w.Driver, w.faults
}

// adminOf is d's set-up client.
func adminOf(d driver.Driver) goredis.UniversalClient { return storekit.Unwrap[*withFaults](d).admin }

// Factory returns drivers over dep, each with a fault hook. Each call first
// empties the deployment and lifts any memory limit a previous check set.
func Factory(dep Deployment) conformance.Factory {
	return func(t conformance.T) driver.Driver {
		f := NewFaults()
		d, err := redis.Open(context.Background(), redis.Options{Addrs: dep.Addrs, Cluster: dep.Cluster, Integrity: dep.Integrity, Hooks: []goredis.Hook{f},
			Username: dep.Username, Password: dep.Password})
		if err != nil {
			t.Fatal(err)
		}
		admin := d.Client()
		switch {
		case dep.Username == "":
		case dep.Cluster:
			admin = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: dep.Addrs})
		default:
			admin = goredis.NewClient(&goredis.Options{Addr: dep.Addrs[0]})
		}
		if err := eachMaster(admin, func(c *goredis.Client) error {
			if err := c.FlushAll(context.Background()).Err(); err != nil {
				return err
			}
			return c.ConfigSet(context.Background(), "maxmemory", "0").Err()
		}); err != nil {
			t.Fatal(err)
		}
		return &withFaults{Driver: d, faults: f, admin: admin}
	}
}

func eachMaster(admin goredis.UniversalClient, fn func(*goredis.Client) error) error {
	ctx := context.Background()
	switch c := admin.(type) {
	case *goredis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error { return fn(n) })
	case *goredis.Client:
		return fn(c)
	}
	return errors.New("rediskit: unknown client type")
}

// fillMemory makes every master refuse writes (maxmemory 1, noeviction).
func fillMemory(admin goredis.UniversalClient) error {
	return eachMaster(admin, func(c *goredis.Client) error {
		ctx := context.Background()
		if err := c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
			return err
		}
		return c.ConfigSet(ctx, "maxmemory", "1").Err()
	})
}

// Marker is another writer's pending claim: a marker of the one form a
// reader takes for one (trailer.IsMarker), with a fixed token.
const Marker = trailer.MarkerMagic + "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"

func set(admin goredis.UniversalClient, key string, v any) error {
	return admin.Set(context.Background(), key, v, 0).Err()
}

// Scenarios are what a real server stages with the fault hook's help.
// Unprovable and HoldAccess are not among them: every Redis call ends its
// access on return.
func Scenarios() conformance.Scenarios {
	return conformance.Scenarios{
		HoldGet: func(d driver.Driver, key string) (<-chan struct{}, func()) {
			_, f := parts(d)
			h := f.Hold("getrange", key)
			return h.Entered, h.Release
		},
		Writing: func(d driver.Driver, key string) func() {
			a := adminOf(d)
			_ = set(a, key, Marker)
			return func() { _ = a.Del(context.Background(), key).Err() }
		},
		Full: func(d driver.Driver, key string) {
			_ = fillMemory(adminOf(d))
		},
		// An error reply to the store step, after the claim: the next put
		// fails there, and only it (a key left holding something else
		// would fail every later put too, which is the staging's doing,
		// not the driver's).
		FailPut: func(d driver.Driver, key string) {
			r, f := parts(d)
			f.Error(storeCmd(r), key, codeError[redisgen.Err])
		},
		FailRead: func(d driver.Driver, key string) {
			a := adminOf(d)
			_ = a.Del(context.Background(), key).Err()
			_ = a.LPush(context.Background(), key, "not a string").Err()
		},
	}
}

// KnownFailures are the conformance checks the Redis driver is known to
// fail, each with why; the suite still runs each and reports it skipped
// while it fails (see conformance.Suite.KnownFailures).
func KnownFailures() map[string]string {
	return map[string]string{
		conformance.HostileReplaceName: "an empty value a neighbour SETs under a row's key holds every put of the row NOT_READY for ever: " +
			"the driver reads a key through GETRANGE, which answers an empty value as it answers a missing key, so the put's claim, " +
			"refused because the key exists, takes the key for one that vanished and asks for a retry (stores/redis present)",
	}
}

// codeError is the client error that classify maps to each code.
var codeError = map[redisgen.Code]error{
	redisgen.Nil:     goredis.Nil,
	redisgen.OOM:     RedisError("OOM command not allowed when used memory > 'maxmemory'."),
	redisgen.Conn:    ConnError,
	redisgen.Timeout: context.DeadlineExceeded,
	redisgen.Err:     RedisError("ERR injected by rediskit"),
	redisgen.Noperm:  RedisError("NOPERM No permissions to access a key"),
}

// cmdOf is the command each spec call sends first for a key (a get reads
// with GETRANGE, bounded by the row's length); a store is storeCmd's.
var cmdOf = map[string]string{"claim": "set", "get": "getrange"}

// StoreHook is storeHook, for tests that act between a put's claim and
// its store step.
func StoreHook(r *redis.Driver) string { return storeHook(r) }

// storeCmd is the command whose error is a store's for a key: on Redis 7,
// the WATCH on a standalone server (it goes out with the claim, and an
// error of it fails the store step) and the compare-and-set EVAL on a
// Cluster; on Valkey 8.1, SET IFEQ.
func storeCmd(r *redis.Driver) string {
	if r.Spec() == Valkey81.Spec {
		return "set ifeq"
	}
	if _, ok := r.Client().(*goredis.ClusterClient); ok {
		return "eval"
	}
	return "watch"
}

// storeHook is where a hook runs just after a key was claimed and before
// its object is stored: on a standalone Redis 7, before the transaction
// that sets the key (the claim, WATCH and GET went out together before
// it); elsewhere before storeCmd.
func storeHook(r *redis.Driver) string {
	if cmd := storeCmd(r); cmd != "watch" {
		return cmd
	}
	return "multi"
}

// Stage makes the server (or, for answers a server cannot give on cue, the
// fault hook) answer case c for key.
func Stage(h *conformance.Harness, c conformance.Case, key string) error {
	r, f := parts(h.D)
	a := adminOf(h.D)
	payload, done, err := storekit.PlantCase(c, key, func(key string, obj []byte) error { return set(a, key, obj) })
	if done || err != nil {
		return err
	}
	code := redisgen.Code(c.Answer.Code)
	switch {
	case code == redisgen.OK:
	case c.Call == "claim" && code == redisgen.Nil && c.Other:
		// The row's length, other bytes: only comparing the bytes tells
		// it from the row's own object (stores/redis tests the lengths).
		return set(a, key, trailer.Encode(key, payload))
	case c.Call == "claim" && code == redisgen.Nil && c.Exists:
		return set(a, key, trailer.Encode(key, conformance.Filled(conformance.RowBytes, conformance.CaseSeed)))
	case c.Call == "claim" && code == redisgen.Nil:
		return set(a, key, Marker)
	case code == redisgen.OOM && c.Call != "get":
		if c.Call == "store" {
			f.Before(storeHook(r), key, func() { _ = fillMemory(a) })
			h.StagedThrough("a hook that fills memory between claim and store")
			return nil
		}
		return fillMemory(a)
	case c.Call == "store" && (code == redisgen.Lost || code == redisgen.Nil):
		f.Before(storeHook(r), key, func() { _ = a.Del(context.Background(), key).Err() })
		h.StagedThrough("a hook that deletes the marker between claim and store")
	case c.Call == "get" && code == redisgen.Nil:
		return a.Del(context.Background(), key).Err()
	case c.Call == "get" && code == redisgen.Pending:
		return set(a, key, Marker)
	case c.Call == "get" && code == redisgen.Corrupt:
		obj := trailer.Encode(key, payload)
		obj[0] ^= 0xff
		return set(a, key, obj)
	default:
		err, ok := codeError[code]
		if !ok {
			return fmt.Errorf("%s never answers %s: no reply or client error classifies as it", c.Call, code)
		}
		cmd := cmdOf[c.Call]
		if c.Call == "store" {
			cmd = storeCmd(r)
		}
		f.Error(cmd, key, err)
		h.StagedThrough("the fault wrapper's error for " + cmd)
	}
	return nil
}

// Foreign stores, under key, the row another writer without a row key
// would: payload and a valid unkeyed trailer (conformance.Foreign).
func Foreign(d driver.Driver, key string, payload []byte) error {
	return set(adminOf(d), key, trailer.Encode(key, payload))
}

// Suite is the conformance suite over build b, named name, over the
// deployment dep returns (called at each check, so after the server
// started): the scenarios a real server stages, b's spec's generated
// cases, its SDK checks, the integrity check over drivers with a row key,
// the hostile checks through Neighbour, and the checks the driver is known
// to fail. Setup says whether b's
// server runs here: skipped, with why, when it is not installed; a set-up
// error when the user named it (Build.Named) and it is not there.
func (b *Build) Suite(name string, dep func() Deployment, running bool, why string) conformance.Suite {
	keyed := func(t conformance.T) driver.Driver {
		d := dep()
		d.Integrity = storekit.RowKey()
		return Factory(d)(t)
	}
	return conformance.Suite{
		Name: name, SDK: b.Spec.SDKName + " " + strings.Join(b.Spec.SDKVersions, ", ") + " (loopback)",
		Setup: func(conformance.T) (string, error) {
			switch {
			case running:
				return "", nil
			case b.Named():
				return "", errors.New(why)
			}
			return why, nil
		},
		Factory:   func(t conformance.T) driver.Driver { return Factory(dep())(t) },
		Scenarios: Scenarios(), Cases: b.Cases, Stage: Stage, KnownFailures: KnownFailures(),
		SDKChecks: SDKChecks(b),
		Integrity: &conformance.Integrity{Factory: keyed, Plant: Foreign},
		Neighbour: Neighbour{},
	}
}

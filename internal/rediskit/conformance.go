package rediskit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/generated/redisspec"
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
}

// withFaults is a Redis driver and the fault hook on its client.
type withFaults struct {
	*redis.Driver
	faults *Faults
}

func parts(d driver.Driver) (*redis.Driver, *Faults) {
	w := storekit.Unwrap[*withFaults](d)
	return w.Driver, w.faults
}

// Factory returns drivers over dep, each with a fault hook. Each call first
// empties the deployment and lifts any memory limit a previous check set.
func Factory(dep Deployment) conformance.Factory {
	return func(t conformance.T) driver.Driver {
		f := NewFaults()
		d, err := redis.Open(context.Background(), redis.Options{Addrs: dep.Addrs, Cluster: dep.Cluster, Integrity: dep.Integrity, Hooks: []goredis.Hook{f}})
		if err != nil {
			t.Fatal(err)
		}
		if err := eachMaster(d, func(c *goredis.Client) error {
			if err := c.FlushAll(context.Background()).Err(); err != nil {
				return err
			}
			return c.ConfigSet(context.Background(), "maxmemory", "0").Err()
		}); err != nil {
			t.Fatal(err)
		}
		return &withFaults{Driver: d, faults: f}
	}
}

func eachMaster(d *redis.Driver, fn func(*goredis.Client) error) error {
	ctx := context.Background()
	switch c := d.Client().(type) {
	case *goredis.ClusterClient:
		return c.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error { return fn(n) })
	case *goredis.Client:
		return fn(c)
	}
	return errors.New("rediskit: unknown client type")
}

// fillMemory makes every master refuse writes (maxmemory 1, noeviction).
func fillMemory(d *redis.Driver) error {
	return eachMaster(d, func(c *goredis.Client) error {
		ctx := context.Background()
		if err := c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err(); err != nil {
			return err
		}
		return c.ConfigSet(ctx, "maxmemory", "1").Err()
	})
}

// Marker is what another writer's pending claim looks like.
const Marker = "kvblob-pending:another-writer"

func set(d *redis.Driver, key string, v any) error {
	return d.Client().Set(context.Background(), key, v, 0).Err()
}

// Scenarios are what a real server stages with the fault hook's help.
// Unprovable and HoldAccess are not among them: every Redis call ends its
// access on return.
func Scenarios() conformance.Scenarios {
	return conformance.Scenarios{
		HoldGet: func(d driver.Driver, key string) (<-chan struct{}, func()) {
			_, f := parts(d)
			h := f.Hold("get", key)
			return h.Entered, h.Release
		},
		Writing: func(d driver.Driver, key string) func() {
			r, _ := parts(d)
			_ = set(r, key, Marker)
			return func() { _ = r.Client().Del(context.Background(), key).Err() }
		},
		Full: func(d driver.Driver, key string) {
			r, _ := parts(d)
			_ = fillMemory(r)
		},
		// An error reply to the store step, after the claim: the next put
		// fails there, and only it (a key left holding something else
		// would fail every later put too, which is the staging's doing,
		// not the driver's).
		FailPut: func(d driver.Driver, key string) {
			r, f := parts(d)
			f.Error(storeCmd(r), key, codeError[redisspec.Err])
		},
		FailRead: func(d driver.Driver, key string) {
			r, _ := parts(d)
			_ = r.Client().Del(context.Background(), key).Err()
			_ = r.Client().LPush(context.Background(), key, "not a string").Err()
		},
	}
}

// KnownFailures are the conformance checks the Redis driver is known to
// fail, each with why; the suite still runs each and reports it skipped
// while it fails (see conformance.Suite.KnownFailures).
func KnownFailures() map[string]string {
	return map[string]string{}
}

// codeError is the client error that classify maps to each code.
var codeError = map[redisspec.Code]error{
	redisspec.Nil:     goredis.Nil,
	redisspec.OOM:     RedisError("OOM command not allowed when used memory > 'maxmemory'."),
	redisspec.Conn:    ConnError,
	redisspec.Timeout: context.DeadlineExceeded,
	redisspec.Err:     RedisError("ERR injected by rediskit"),
	redisspec.Noperm:  RedisError("NOPERM No permissions to access a key"),
}

// cmdOf is the command each spec call sends first for a key; a store is
// storeCmd's.
var cmdOf = map[string]string{"claim": "set", "get": "get"}

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
	payload, done, err := storekit.PlantCase(c, key, func(key string, obj []byte) error { return set(r, key, obj) })
	if done || err != nil {
		return err
	}
	code := redisspec.Code(c.Answer.Code)
	switch {
	case code == redisspec.OK:
	case c.Call == "claim" && code == redisspec.Nil && c.Other:
		return set(r, key, trailer.Encode(key, payload[:len(payload)/2]))
	case c.Call == "claim" && code == redisspec.Nil && c.Exists:
		return set(r, key, trailer.Encode(key, conformance.Filled(conformance.RowBytes, conformance.CaseSeed)))
	case c.Call == "claim" && code == redisspec.Nil:
		return set(r, key, Marker)
	case code == redisspec.OOM && c.Call != "get":
		if c.Call == "store" {
			f.Before(storeHook(r), key, func() { _ = fillMemory(r) })
			h.StagedThrough("a hook that fills memory between claim and store")
			return nil
		}
		return fillMemory(r)
	case c.Call == "store" && (code == redisspec.Lost || code == redisspec.Nil):
		f.Before(storeHook(r), key, func() { _ = r.Client().Del(context.Background(), key).Err() })
		h.StagedThrough("a hook that deletes the marker between claim and store")
	case c.Call == "get" && code == redisspec.Nil:
		return r.Client().Del(context.Background(), key).Err()
	case c.Call == "get" && code == redisspec.Pending:
		return set(r, key, Marker)
	case c.Call == "get" && code == redisspec.Corrupt:
		obj := trailer.Encode(key, payload)
		obj[0] ^= 0xff
		return set(r, key, obj)
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
	r, _ := parts(d)
	return set(r, key, trailer.Encode(key, payload))
}

// Suite is the conformance suite over build b, named name, over the
// deployment dep returns (called at each check, so after the server
// started): the scenarios a real server stages, b's spec's generated
// cases, its SDK checks, the integrity check over drivers with a row key,
// and the checks the driver is known to fail. Setup says whether b's
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
	}
}

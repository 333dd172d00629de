package redis

import (
	"context"
	"fmt"
	"slices"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	redisgen "github.com/kvblob/kvblob/generated/redis"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
)

// A build is a server build the driver serves: the spec that holds for it
// (one of generated/redis's Specs, each typed: its Calls map every answer)
// and how it replaces a writer's marker with the object, the one step
// whose commands differ between builds, chosen by the spec's variant.
// Every other step sends the same commands to every build, and every
// answer is mapped by the build's own spec.
type build struct {
	spec *redisgen.Spec
	// store sets codes[i] and errs[i] for each row i of idx (see
	// storeObjects and storeIfEq).
	store func(d *Driver, ctx context.Context, rows []driver.Row, idx []int, objs [][]byte, marker string, codes []redisgen.Code, errs []error)
	// watched: on a standalone server whose user may transact, the build
	// stores with WATCH/MULTI/EXEC, so Put sends the claim with the WATCH
	// and GET of each key, in one round trip (putWatched).
	watched bool
}

// buildOf returns the build of spec, its store step picked by the spec's
// variant: a new server build is a spec file (naming a variant below) and
// 'make generate'. One code table serves every build (classify.go
// classifies replies into generated/redis's codes, which the generator
// holds to one value per name across the store's specs).
// TestEverySpecHasABuild holds every generated spec to a variant here.
func buildOf(spec *redisgen.Spec) (build, error) {
	switch spec.Variant {
	case redisgen.VariantWatch:
		return build{spec: spec, store: (*Driver).storeObjects, watched: true}, nil
	case redisgen.VariantIfeq:
		return build{spec: spec, store: (*Driver).storeIfEq}, nil
	}
	return build{}, fmt.Errorf("redis: %s names variant %q, which this driver has no store step for; the driver stores by %q (WATCH/MULTI/EXEC) or %q (SET IFEQ)",
		spec.Source, spec.Variant, redisgen.VariantWatch, redisgen.VariantIfeq)
}

// Specs are the specs of the server builds the driver serves, in the order
// it tries them (generated/redis's Specs).
func Specs() []*rules.Spec {
	all := redisgen.Specs()
	specs := make([]*rules.Spec, len(all))
	for i, s := range all {
		specs[i] = s.Spec
	}
	return specs
}

// pickBuild returns the build whose spec holds for the server that answered
// HELLO with hello, and the server and version it reported
// ("valkey-server 8.1.1", returned with an error too).
func pickBuild(hello map[string]string) (build, string, error) {
	sdk, version := ServerIdentity(hello)
	server := sdk + " " + version
	spec, err := redisgen.Pick(sdk, version)
	if err != nil {
		return build{}, server, err
	}
	b, err := buildOf(spec)
	return b, server, err
}

// pickBuildOf picks the build for the servers that answered HELLO with
// hellos (by address): one server, or every master of a Cluster. A
// Cluster's masters must all be servers one spec holds for: in a rolling
// upgrade from one build to another, a spec picked from one master would
// send commands another cannot run (SET IFEQ to a Valkey 8.0 or a Redis),
// so the driver refuses the Cluster until its masters agree. It returns
// the build and the server and version ("valkey-server 8.1.1").
func pickBuildOf(hellos map[string]map[string]string) (build, string, error) {
	addrs := make([]string, 0, len(hellos))
	for a := range hellos {
		addrs = append(addrs, a)
	}
	slices.Sort(addrs)
	var (
		b     build
		ver   string
		found []string
		first error
		mixed bool
	)
	for i, a := range addrs {
		bi, what, err := pickBuild(hellos[a])
		switch {
		case err != nil:
			what += " (no spec)"
			if first == nil {
				first = err
			}
		case i == 0:
			b, ver = bi, what
			what += " (" + bi.spec.Source + ")"
		default:
			mixed = mixed || bi.spec != b.spec
			what += " (" + bi.spec.Source + ")"
		}
		found = append(found, a+" is "+what)
	}
	if len(addrs) > 1 && (mixed || first != nil) {
		return build{}, "", fmt.Errorf("redis: the Cluster's masters are not all servers one spec holds for: %s. Open it once every master runs one build kvblob holds a spec for (%s)",
			strings.Join(found, "; "), rules.Describe(Specs()...))
	}
	if first != nil {
		return build{}, "", first
	}
	return b, ver, nil
}

// ServerIdentity names the server that answered HELLO with hello (its
// fields, as Hello returns them), as the specs name it: "<server>-server"
// and the version HELLO reports ("valkey-server", "8.1.1") when HELLO names
// a server other than Redis, or has a version field of another server (a
// fork that answers server "redis", as Dragonfly's dragonfly_version);
// ("redis-server", version) only when it is Redis. A server no spec names
// is refused.
//
// HELLO, not INFO: HELLO is what every client sends to connect, so the
// tenant's ACL needs no +info, which would show it every tenant's key
// count (docs/security.md).
func ServerIdentity(hello map[string]string) (sdk, version string) {
	if name := hello["server"]; name != "" && name != "redis" {
		return name + "-server", orUnknown(hello["version"])
	}
	forks := make([]string, 0, 1)
	for k := range hello {
		if name, ok := strings.CutSuffix(k, "_version"); ok && name != "redis" {
			forks = append(forks, name)
		}
	}
	if len(forks) > 0 {
		slices.Sort(forks)
		return forks[0] + "-server", orUnknown(hello[forks[0]+"_version"])
	}
	return "redis-server", orUnknown(hello["version"])
}

// Hello asks c's server for HELLO without a protocol version (which
// changes nothing on the connection) and returns the reply's fields that
// are strings or numbers, by name ("server", "version", "mode", ...).
func Hello(ctx context.Context, c interface {
	Do(ctx context.Context, args ...any) *goredis.Cmd
}) (map[string]string, error) {
	v, err := c.Do(ctx, "hello").Result()
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	add := func(k, v any) {
		switch v.(type) {
		case string, int64:
			fields[fmt.Sprint(k)] = fmt.Sprint(v)
		}
	}
	switch r := v.(type) {
	case map[any]any: // RESP3
		for k, v := range r {
			add(k, v)
		}
	case []any: // RESP2: name, value, name, value, ...
		for i := 0; i+1 < len(r); i += 2 {
			add(r[i], r[i+1])
		}
	default:
		return nil, fmt.Errorf("redis: HELLO answered %T, not a map", v)
	}
	return fields, nil
}

func orUnknown(v string) string {
	if v == "" {
		return "unknown"
	}
	return v
}

// storeIfEq is a Valkey 8.1 store: SET key <object> IFEQ <marker> for each
// row, pipelined. The server answers OK when the key still held this
// writer's marker and nil when it did not; spec/redis-valkey-8.1.yaml maps
// both. It works alike on a Cluster: each command names one key.
func (d *Driver) storeIfEq(ctx context.Context, rows []driver.Row, idx []int, objs [][]byte, marker string, codes []redisgen.Code, errs []error) {
	pipe := d.c.Pipeline()
	sets := make([]*goredis.StatusCmd, len(idx))
	for k, i := range idx {
		sets[k] = goredis.NewStatusCmd(ctx, "set", rows[i].Key, objs[i], "ifeq", marker)
		_ = pipe.Process(ctx, sets[k])
	}
	_, _ = pipe.Exec(ctx)
	for k, i := range idx {
		codes[i], errs[i] = classify(sets[k].Err())
	}
}

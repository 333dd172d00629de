package redis

import (
	"context"
	"fmt"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	gen "github.com/kvblob/kvblob/generated/redis"
	"github.com/kvblob/kvblob/generated/valkey81"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
)

// A build is a server build the driver serves: the spec that holds for it
// and how it replaces a writer's marker with the object, the one step whose
// commands differ between them. Every other step sends the same commands to
// every build, and every answer is mapped by the build's own spec.
type build struct {
	spec *rules.Spec
	// store sets codes[i] and errs[i] for each row i of idx (see
	// storeObjects and storeIfEq).
	store func(d *Driver, ctx context.Context, rows []driver.Row, idx []int, objs [][]byte, marker string, codes []gen.Code, errs []error)
}

// builds are the servers kvblob holds a spec for. One code table serves
// them all (classify.go classifies replies into generated/redis's codes), so
// a spec added here must give each code it shares the same value; a test
// holds every build to that.
var builds = []build{
	{spec: gen.Spec, store: (*Driver).storeObjects},
	{spec: valkey81.Spec, store: (*Driver).storeIfEq},
}

// Specs are the specs of the server builds the driver serves, in the order
// it tries them.
func Specs() []*rules.Spec {
	specs := make([]*rules.Spec, len(builds))
	for i, b := range builds {
		specs[i] = b.spec
	}
	return specs
}

// calls are the driver's resolved rules, one per call it makes.
type calls struct {
	claim, store, get *rules.CallRule
}

// pickBuild returns the build whose spec holds for the server that answered
// INFO server with info, and its call rules.
func pickBuild(info string) (build, calls, error) {
	sdk, version := ServerIdentity(info)
	spec, err := rules.Pick("redis", sdk, version, Specs()...)
	if err != nil {
		return build{}, calls{}, err
	}
	var b build
	for _, b = range builds {
		if b.spec == spec {
			break
		}
	}
	var c calls
	for _, r := range []struct {
		name string
		to   **rules.CallRule
	}{{"claim", &c.claim}, {"store", &c.store}, {"get", &c.get}} {
		if *r.to, err = spec.Call(r.name); err != nil {
			return build{}, calls{}, fmt.Errorf("redis: %w", err)
		}
	}
	return b, c, nil
}

// ServerIdentity names the server that answered INFO server with info, as
// the specs name it: ("valkey-server", its valkey_version) for a Valkey,
// ("redis-server", its redis_version) otherwise. A Valkey reports a
// redis_version too (7.2.4, for clients that parse it); it is not a Redis of
// that version, and is never taken for one.
func ServerIdentity(info string) (sdk, version string) {
	if infoField(info, "server_name") == "valkey" {
		return "valkey-server", orUnknown(infoField(info, "valkey_version"))
	}
	return "redis-server", orUnknown(infoField(info, "redis_version"))
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
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
func (d *Driver) storeIfEq(ctx context.Context, rows []driver.Row, idx []int, objs [][]byte, marker string, codes []gen.Code, errs []error) {
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

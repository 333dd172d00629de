package redis

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	redisgen "github.com/kvblob/kvblob/generated/redis"
)

type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassifyTurnsRepliesIntoSpecCodes(t *testing.T) {
	cases := []struct {
		err  error
		want redisgen.Code
	}{
		{nil, redisgen.OK},
		{goredis.Nil, redisgen.Nil},
		{replyErr("OOM command not allowed when used memory > 'maxmemory'."), redisgen.OOM},
		{replyErr("WRONGTYPE Operation against a key holding the wrong kind of value"), redisgen.Err},
		{replyErr("CLUSTERDOWN The cluster is down"), redisgen.Err},
		{replyErr("NOPERM No permissions to access a key"), redisgen.Noperm},
		{replyErr("NOPERM this user has no permissions to run the 'flushall' command"), redisgen.Noperm},
		{io.EOF, redisgen.Conn},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, redisgen.Conn},
		{goredis.ErrClosed, redisgen.Conn},
		{context.DeadlineExceeded, redisgen.Timeout},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, redisgen.Timeout},
		{errors.New("something else"), redisgen.Err},
	}
	for _, c := range cases {
		got, _ := classify(c.err)
		assert.Equal(t, c.want, got, "%v", c.err)
	}
}

// TestNopermSaysWhatToGrant: a NOPERM reply that names a command (each
// build's wording) says to grant it, and one about a key says the key is
// outside the user's patterns; the server's reply is kept either way.
func TestNopermSaysWhatToGrant(t *testing.T) {
	for _, c := range []struct{ reply, want string }{
		{"NOPERM this user has no permissions to run the 'eval' command", "does not grant the eval command the driver needs (add +eval;"},
		{"NOPERM User tenantA has no permissions to run the 'getrange' command", "does not grant the getrange command the driver needs (add +getrange;"},
		{"NOPERM this user has no permissions to run the 'cluster|slots' command", "(add +cluster|slots;"},
		{"NOPERM this user has no permissions to access one of the keys used as arguments", "the key is outside the user's key patterns"},
		{"NOPERM No permissions to access a key", "the key is outside the user's key patterns"},
	} {
		code, err := classify(replyErr(c.reply))
		assert.Equal(t, redisgen.Noperm, code)
		assert.Contains(t, err.Error(), c.want)
		assert.Contains(t, err.Error(), c.reply)
	}
}

// TestServerIdentity pins how the driver names a server from its HELLO
// reply and which spec it picks: a Valkey is named by its server field and
// version, a fork that calls itself redis by its own version field, and
// any server no spec holds for is refused with an error that names every
// spec.
func TestServerIdentity(t *testing.T) {
	hello := func(kv ...string) map[string]string {
		m := map[string]string{"proto": "3", "id": "7", "mode": "standalone", "role": "master"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, c := range []struct {
		hello              map[string]string
		sdk, version, spec string
	}{
		{hello("server", "redis", "version", "7.0.15"), "redis-server", "7.0.15", "spec/redis-7.yaml"},
		{hello("server", "valkey", "version", "8.1.1"), "valkey-server", "8.1.1", "spec/redis-valkey-8.1.yaml"},
		{hello("server", "valkey", "version", "8.0.1"), "valkey-server", "8.0.1", ""},
		{hello("server", "redis", "version", "6.2.14"), "redis-server", "6.2.14", ""},
		{hello("server", "redis", "version", "8.0.2"), "redis-server", "8.0.2", ""},
		{hello(), "redis-server", "unknown", ""},
		{hello("version", "7.0.15"), "redis-server", "7.0.15", "spec/redis-7.yaml"},
		// Forks that call themselves redis, with a version of their own.
		{hello("server", "redis", "version", "7.4.0", "dragonfly_version", "df-v1.25.0"), "dragonfly-server", "df-v1.25.0", ""},
		{hello("server", "newfork", "version", "7.2.4"), "newfork-server", "7.2.4", ""},
	} {
		sdk, v := ServerIdentity(c.hello)
		assert.Equal(t, c.sdk+" "+c.version, sdk+" "+v)
		b, _, err := pickBuild(c.hello)
		if c.spec == "" {
			assert.ErrorContains(t, err, "redis: "+c.sdk+" "+c.version+" has no spec; kvblob holds specs for redis-server 7.x (spec/redis-7.yaml); valkey-server 8.1.x (spec/redis-valkey-8.1.yaml)")
			continue
		}
		if assert.NoError(t, err) {
			assert.Equal(t, c.spec, b.spec.Source)
		}
	}
}

// TestClusterMastersMustAgree: a Cluster whose masters are different
// builds (a rolling upgrade) is refused, naming each master, since the
// spec picked from one would send commands another cannot run; one whose
// masters agree opens with their spec.
func TestClusterMastersMustAgree(t *testing.T) {
	redis7 := map[string]string{"server": "redis", "version": "7.0.15"}
	valkey81 := map[string]string{"server": "valkey", "version": "8.1.1"}
	valkey80 := map[string]string{"server": "valkey", "version": "8.0.1"}

	b, ver, err := pickBuildOf(map[string]map[string]string{"a:1": valkey81, "b:2": valkey81, "c:3": valkey81})
	require.NoError(t, err)
	assert.Equal(t, "spec/redis-valkey-8.1.yaml valkey-server 8.1.1", b.spec.Source+" "+ver)

	_, _, err = pickBuildOf(map[string]map[string]string{"a:1": valkey81, "b:2": valkey80, "c:3": valkey81})
	assert.ErrorContains(t, err, "redis: the Cluster's masters are not all servers one spec holds for: a:1 is valkey-server 8.1.1 (spec/redis-valkey-8.1.yaml); b:2 is valkey-server 8.0.1 (no spec); c:3 is valkey-server 8.1.1 (spec/redis-valkey-8.1.yaml)")

	_, _, err = pickBuildOf(map[string]map[string]string{"a:1": redis7, "b:2": valkey81})
	assert.ErrorContains(t, err, "a:1 is redis-server 7.0.15 (spec/redis-7.yaml); b:2 is valkey-server 8.1.1 (spec/redis-valkey-8.1.yaml)")

	_, _, err = pickBuildOf(map[string]map[string]string{"": valkey80})
	assert.ErrorContains(t, err, "redis: valkey-server 8.0.1 has no spec")
}

// TestEverySpecHasABuild: every spec of store redis (generated/redis's
// Specs) names a variant the driver has a store step for, so a server
// build whose spec is added with 'make generate' is served with no edit
// of the driver, or this test names the variant that needs one. (One code
// table serving every build is the generator's rule: gen.CheckSet refuses
// a code name with two values across a store's specs.)
func TestEverySpecHasABuild(t *testing.T) {
	require.NotEmpty(t, redisgen.Specs())
	for _, spec := range redisgen.Specs() {
		b, err := buildOf(spec)
		if assert.NoError(t, err, spec.Source) {
			assert.Same(t, spec, b.spec)
			assert.NotNil(t, b.store, spec.Source)
		}
	}
	_, err := buildOf(&redisgen.Spec{Spec: redisgen.Redis7().Spec, Variant: "lua"})
	assert.ErrorContains(t, err, `spec/redis-7.yaml names variant "lua", which this driver has no store step for`)
}

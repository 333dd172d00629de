package redis

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"syscall"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/generated/redisspec"
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
		want redisspec.Code
	}{
		{nil, redisspec.OK},
		{goredis.Nil, redisspec.Nil},
		{replyErr("OOM command not allowed when used memory > 'maxmemory'."), redisspec.OOM},
		{replyErr("WRONGTYPE Operation against a key holding the wrong kind of value"), redisspec.Err},
		{replyErr("CLUSTERDOWN The cluster is down"), redisspec.Err},
		{replyErr("NOPERM No permissions to access a key"), redisspec.Noperm},
		{replyErr("NOPERM this user has no permissions to run the 'flushall' command"), redisspec.Noperm},
		{io.EOF, redisspec.Conn},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, redisspec.Conn},
		{goredis.ErrClosed, redisspec.Conn},
		{context.DeadlineExceeded, redisspec.Timeout},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, redisspec.Timeout},
		{errors.New("something else"), redisspec.Err},
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
		assert.Equal(t, redisspec.Noperm, code)
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
		b, _, _, err := pickBuild(c.hello)
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

	b, _, ver, err := pickBuildOf(map[string]map[string]string{"a:1": valkey81, "b:2": valkey81, "c:3": valkey81})
	require.NoError(t, err)
	assert.Equal(t, "spec/redis-valkey-8.1.yaml valkey-server 8.1.1", b.spec.Source+" "+ver)

	_, _, _, err = pickBuildOf(map[string]map[string]string{"a:1": valkey81, "b:2": valkey80, "c:3": valkey81})
	assert.ErrorContains(t, err, "redis: the Cluster's masters are not all servers one spec holds for: a:1 is valkey-server 8.1.1 (spec/redis-valkey-8.1.yaml); b:2 is valkey-server 8.0.1 (no spec); c:3 is valkey-server 8.1.1 (spec/redis-valkey-8.1.yaml)")

	_, _, _, err = pickBuildOf(map[string]map[string]string{"a:1": redis7, "b:2": valkey81})
	assert.ErrorContains(t, err, "a:1 is redis-server 7.0.15 (spec/redis-7.yaml); b:2 is valkey-server 8.1.1 (spec/redis-valkey-8.1.yaml)")

	_, _, _, err = pickBuildOf(map[string]map[string]string{"": valkey80})
	assert.ErrorContains(t, err, "redis: valkey-server 8.0.1 has no spec")
}

// TestBuildsShareOneCodeTable holds every spec the driver serves to the
// code values of generated/redisspec, which classify.go classifies into: a
// code two specs name has one value, so a classified reply means the same
// to each; and every spec names each call the driver makes.
func TestBuildsShareOneCodeTable(t *testing.T) {
	for _, spec := range Specs() {
		for name, v := range spec.Codes {
			c := slices.IndexFunc(redisspec.Codes(), func(c redisspec.Code) bool { return c.String() == name })
			if assert.GreaterOrEqual(t, c, 0, "%s: code %s is not in generated/redisspec's table, which the driver classifies into", spec.Source, name) {
				assert.Equal(t, int64(redisspec.Codes()[c]), v, "%s: code %s", spec.Source, name)
			}
		}
		for _, call := range []string{"claim", "store", "get"} {
			_, err := spec.Call(call)
			assert.NoError(t, err)
		}
	}
}

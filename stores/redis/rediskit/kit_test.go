package rediskit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/generated/redis/rediscases"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/trailer"
)

// needServer starts a redis-server for t, stopped at its cleanup; it skips
// t where none is installed, and fails it under CI=true.
func needServer(t *testing.T) *Server {
	t.Helper()
	storekit.NeedInstalled(t, Available)
	s, err := Start()
	require.NoError(t, err)
	t.Cleanup(s.Stop)
	return s
}

// TestFaultsAnswerWhatTheyWereGiven: a client with the fault hook answers
// the next pipelined command of a name and key with the error Error gave,
// or the reply Reply gave, once each, and then as the server does; a function
// Before gave runs before a transaction's commands reach the server, and
// commands without a key (MULTI, EXEC) pass. (Tried: the staged error
// dropped answers the server's reply; a command of no argument taken as
// having a key panics.)
func TestFaultsAnswerWhatTheyWereGiven(t *testing.T) {
	s := needServer(t)
	f := NewFaults()
	c := goredis.NewClient(&goredis.Options{Addr: s.Addr})
	defer c.Close()
	c.AddHook(f)
	ctx := context.Background()

	// get sends GET k in a pipeline, as the driver sends its commands.
	get := func() *goredis.StringCmd {
		var cmd *goredis.StringCmd
		_, _ = c.Pipelined(ctx, func(p goredis.Pipeliner) error { cmd = p.Get(ctx, "k"); return nil })
		return cmd
	}
	f.Error("get", "k", RedisError("ERR staged"))
	assert.EqualError(t, get().Err(), "ERR staged", "the staged error")
	assert.ErrorIs(t, get().Err(), goredis.Nil, "the server's answer, once the error was used")

	f.Reply("get", "k", "staged")
	v, err := get().Result()
	assert.NoError(t, err)
	assert.Equal(t, "staged", v, "the staged reply")

	ran := false
	f.Before("set", "k", func() { ran = true })
	_, err = c.TxPipelined(ctx, func(p goredis.Pipeliner) error { return p.Set(ctx, "k", "v", 0).Err() })
	require.NoError(t, err)
	assert.True(t, ran, "the function staged before the transaction's SET")
	assert.Equal(t, "v", c.Get(ctx, "k").Val())
}

// TestCloseClosesTheSetUpClientOfItsOwn: a kit driver's Close closes the
// driver, and its set-up client too when that is a client of its own (a
// driver connecting as an ACL user), never leaving it open. (Tried: the
// set-up client closed only when it is the driver's own leaves it open.)
func TestCloseClosesTheSetUpClientOfItsOwn(t *testing.T) {
	s := needServer(t)
	d, err := redis.Open(context.Background(), redis.Options{Addrs: []string{s.Addr}})
	require.NoError(t, err)
	admin := goredis.NewClient(&goredis.Options{Addr: s.Addr})
	w := &withFaults{Driver: d, faults: NewFaults(), admin: admin}
	require.NoError(t, w.Close())
	assert.ErrorIs(t, admin.Ping(context.Background()).Err(), goredis.ErrClosed, "the set-up client of its own after Close")
}

// TestStageLeavesWhatEachGetCaseFinds: for a get, Stage leaves under the
// key what the case's answer finds on the server itself: nothing for NIL,
// another writer's marker for PENDING, the row's object with a byte
// changed for CORRUPT. (Tried: NIL's case taken for every get's answer
// but NIL, or for every get, deletes the key of PENDING and CORRUPT.)
func TestStageLeavesWhatEachGetCaseFinds(t *testing.T) {
	s := needServer(t)
	factory := Factory(Deployment{Addrs: []string{s.Addr}})
	row := trailer.Encode("p/v1/0a", conformance.Filled(conformance.RowBytes, 5))
	for _, tc := range []struct {
		id   string
		want func(got []byte, err error)
	}{
		{"get/NIL", func(got []byte, err error) { assert.ErrorIs(t, err, goredis.Nil, "no object: %q", got) }},
		{"get/PENDING", func(got []byte, err error) {
			require.NoError(t, err)
			assert.True(t, trailer.IsMarker(got), "a marker: %q", got)
		}},
		{"get/CORRUPT", func(got []byte, err error) {
			require.NoError(t, err)
			require.Len(t, got, len(row), "the row's object")
			assert.NotEqual(t, row, got, "with a byte changed")
		}},
	} {
		t.Run(tc.id, func(t *testing.T) {
			c := storekit.CaseOf(rediscases.Redis7(), tc.id)
			d := factory(t)
			defer d.Close()
			require.NoError(t, Stage(&conformance.Harness{T: t, Ctx: context.Background(), D: d}, c, "p/v1/0a"))
			got, err := adminOf(d).Get(context.Background(), "p/v1/0a").Bytes()
			tc.want(got, err)
		})
	}
}

// TestAClusterThatCannotFormLeavesNoNodeRunning: StartClusterWith stops
// the nodes it started when redis-cli cannot join them (one node is no
// cluster: it wants three masters), so nothing of the failed start is
// left. (Tried: the nodes left running leave their watchers' goroutines.)
func TestAClusterThatCannotFormLeavesNoNodeRunning(t *testing.T) {
	needServer(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, err := StartClusterWith(1, Config{})
	if c != nil {
		c.Stop()
	}
	require.Error(t, err, "a cluster of one node")
	assert.Contains(t, err.Error(), "--cluster create")
}

// TestModuleRootIsTheFolderOfKvblobsGoMod: from a package's folder (where
// a test runs), moduleRoot finds kvblob's go.mod above it, where 'make
// deps' puts Valkey 8.1. (Tried: a go.mod read as not kvblob's finds no
// root.)
func TestModuleRootIsTheFolderOfKvblobsGoMod(t *testing.T) {
	root, ok := moduleRoot()
	require.True(t, ok, "no module root above the package's folder")
	_, err := os.Stat(filepath.Join(root, "stores", "redis", "rediskit", "build.go"))
	assert.NoError(t, err, "the root %s holds this package", root)
	assert.False(t, errors.Is(statErr(filepath.Join(root, "go.mod")), os.ErrNotExist))
}

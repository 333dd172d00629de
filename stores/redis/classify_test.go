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

	gen "github.com/kvblob/kvblob/generated/redis"
	"github.com/kvblob/kvblob/generated/valkey81"
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
		want gen.Code
	}{
		{nil, gen.OK},
		{goredis.Nil, gen.Nil},
		{replyErr("OOM command not allowed when used memory > 'maxmemory'."), gen.OOM},
		{replyErr("WRONGTYPE Operation against a key holding the wrong kind of value"), gen.Err},
		{replyErr("CLUSTERDOWN The cluster is down"), gen.Err},
		{replyErr("NOPERM No permissions to access a key"), gen.Noperm},
		{replyErr("NOPERM this user has no permissions to run the 'flushall' command"), gen.Noperm},
		{io.EOF, gen.Conn},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, gen.Conn},
		{goredis.ErrClosed, gen.Conn},
		{context.DeadlineExceeded, gen.Timeout},
		{&net.OpError{Op: "read", Err: timeoutErr{}}, gen.Timeout},
		{errors.New("something else"), gen.Err},
	}
	for _, c := range cases {
		got, _ := classify(c.err)
		assert.Equal(t, c.want, got, "%v", c.err)
	}
}

// TestServerIdentity pins how the driver names a server and which spec it
// picks: a Valkey is named by its valkey_version, never by the
// redis_version it reports beside it, and any server no spec holds for is
// refused with an error that names every spec.
func TestServerIdentity(t *testing.T) {
	for _, c := range []struct {
		info, sdk, version, spec string
	}{
		{"# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n", "redis-server", "7.0.15", "spec/redis-7.yaml"},
		{"# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.1.1\r\n", "valkey-server", "8.1.1", "spec/redis-valkey-8.1.yaml"},
		{"# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:8.0.1\r\n", "valkey-server", "8.0.1", ""},
		{"# Server\r\nredis_version:6.2.14\r\n", "redis-server", "6.2.14", ""},
		{"# Server\r\nredis_version:8.0.2\r\n", "redis-server", "8.0.2", ""},
		{"# Server\r\n", "redis-server", "unknown", ""},
	} {
		sdk, v := ServerIdentity(c.info)
		assert.Equal(t, c.sdk+" "+c.version, sdk+" "+v)
		b, _, err := pickBuild(c.info)
		if c.spec == "" {
			assert.ErrorContains(t, err, "redis: "+c.sdk+" "+c.version+" has no spec; kvblob holds specs for redis-server 7.x (spec/redis-7.yaml); valkey-server 8.1.x (spec/redis-valkey-8.1.yaml)")
			continue
		}
		if assert.NoError(t, err) {
			assert.Equal(t, c.spec, b.spec.Source)
		}
	}
}

// TestBuildsShareOneCodeTable holds every spec the driver serves to the
// code values of generated/redis, which classify.go classifies into: a
// code the specs both name has one value, so a classified reply means the
// same to each.
func TestBuildsShareOneCodeTable(t *testing.T) {
	names := map[string]int64{}
	for _, c := range gen.Codes {
		names[c.String()] = int64(c)
	}
	for _, c := range valkey81.Codes {
		v, ok := names[c.String()]
		if assert.True(t, ok, "valkey81 code %s is not in generated/redis's table, which the driver classifies into", c) {
			assert.Equal(t, v, int64(c), "code %s", c)
		}
	}
	for _, b := range builds {
		for _, call := range []string{"claim", "store", "get"} {
			_, err := b.spec.Call(call)
			assert.NoError(t, err)
		}
	}
}

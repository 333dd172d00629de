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

func TestServerVersionIsReadFromInfo(t *testing.T) {
	assert.Equal(t, "7.0.15", serverVersion("# Server\r\nredis_version:7.0.15\r\nredis_mode:standalone\r\n"))
	assert.Equal(t, "unknown", serverVersion("# Server\r\n"))
	assert.True(t, gen.SupportsVersion("7"))
	assert.False(t, gen.SupportsVersion("6"))
}

package redis

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kvblob/kvblob/generated/redisspec"
)

// classify turns a go-redis reply error into a code of generated/redisspec's
// table, which every spec the driver serves shares (builds.go). It returns
// the error too, so a FAULT can carry its text. What each code means for a
// row is the picked spec's, not this function's.
func classify(err error) (redisspec.Code, error) {
	var netErr net.Error
	var redisErr goredis.Error
	switch {
	case err == nil:
		return redisspec.OK, nil
	case errors.Is(err, goredis.Nil):
		return redisspec.Nil, nil
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return redisspec.Timeout, err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, goredis.ErrClosed),
		errors.Is(err, net.ErrClosed), errors.As(err, new(*net.OpError)):
		return redisspec.Conn, err
	case errors.As(err, &redisErr) && strings.HasPrefix(err.Error(), "OOM "):
		return redisspec.OOM, err
	case errors.As(err, &redisErr) && strings.HasPrefix(err.Error(), "NOPERM"):
		return redisspec.Noperm, err
	}
	return redisspec.Err, err
}

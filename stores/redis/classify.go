package redis

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	goredis "github.com/redis/go-redis/v9"

	redisgen "github.com/kvblob/kvblob/generated/redis"
)

// classify turns a go-redis reply error into a code of generated/redis's
// table, which every spec the driver serves shares (builds.go). It returns
// the error too, so a FAULT can carry its text. What each code means for a
// row is the picked spec's, not this function's.
func classify(err error) (redisgen.Code, error) {
	var netErr net.Error
	var redisErr goredis.Error
	switch {
	case err == nil:
		return redisgen.OK, nil
	case errors.Is(err, goredis.Nil):
		return redisgen.Nil, nil
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return redisgen.Timeout, err
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, goredis.ErrClosed),
		errors.Is(err, net.ErrClosed), errors.As(err, new(*net.OpError)):
		return redisgen.Conn, err
	case errors.As(err, &redisErr) && strings.HasPrefix(err.Error(), "OOM "):
		return redisgen.OOM, err
	case errors.As(err, &redisErr) && strings.HasPrefix(err.Error(), "NOPERM"):
		return redisgen.Noperm, explainNoperm(err)
	case errors.As(err, &redisErr) && strings.HasPrefix(err.Error(), "BUSY "):
		// A FAULT (the spec's otherwise) that says whose doing it is.
		return redisgen.Err, fmt.Errorf("the server is running a script past its busy-reply-threshold, another client's (this driver's scripts end at once; docs/security.md): %w", err)
	}
	return redisgen.Err, err
}

// explainNoperm says what a NOPERM reply asks of whoever configures the
// ACL user: the server refuses a command the user's ACL does not grant
// (Redis 7.0: "NOPERM this user has no permissions to run the 'eval'
// command"; Valkey 8.1: "NOPERM User tenantA has no permissions to run the
// 'eval' command") as it refuses a key outside the user's patterns ("...
// access one of the keys used as arguments", "No permissions to access a
// key"), and the two need different fixes.
func explainNoperm(err error) error {
	msg := err.Error()
	if _, rest, ok := strings.Cut(msg, "permissions to run the '"); ok {
		if cmd, _, ok := strings.Cut(rest, "'"); ok {
			return fmt.Errorf("the user's ACL does not grant the %s command the driver needs (add +%s; docs/security.md lists a tenant's commands): %w", cmd, cmd, err)
		}
	}
	if strings.Contains(msg, "key") {
		return fmt.Errorf("the key is outside the user's key patterns: %w", err)
	}
	return err
}

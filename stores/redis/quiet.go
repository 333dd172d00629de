package redis

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// DefaultDownFor is the default Options.DownFor.
const DefaultDownFor = time.Second

// routeOnce installs routed as go-redis's process-wide logger, once.
var routeOnce sync.Once

// routed is go-redis's logger once SetClientLogger was called: a line
// logged with a driver's command context goes to that driver's
// Options.Logger, any other (the pool logs its dials on a context of its
// own) to SetClientLogger's logger; both at warn level
// (docs/operating.md).
type routed struct{}

func (routed) Printf(ctx context.Context, format string, v ...any) {
	l, ok := ctx.Value(loggerKey{}).(*zerolog.Logger)
	if !ok {
		l = clientLogger.Load()
	}
	l.Warn().Str("line", strings.TrimSpace(fmt.Sprintf(format, v...))).Msg("redis: go-redis client line")
}

var clientLogger atomic.Pointer[zerolog.Logger]

func init() {
	nop := zerolog.Nop()
	clientLogger.Store(&nop)
}

// SetClientLogger routes the go-redis client's own lines, which it
// otherwise prints to stderr: a line logged on one of a driver's commands
// goes to that driver's Options.Logger, and any other (the connection
// pool's dial failures and housekeeping) to l.
//
// go-redis has one logger per process, so this replaces it for every
// go-redis client in the process, the embedder's own included; that is
// why Open never does it, and a program calls it once, in main, if at
// all. A later call changes only l. Each driver logs its server's
// reachability to Options.Logger either way.
func SetClientLogger(l zerolog.Logger) {
	clientLogger.Store(&l)
	routeOnce.Do(func() { goredis.SetLogger(routed{}) })
}

type loggerKey struct{}

// guard is the hook Open adds first: it tags each command's context with
// the driver's logger (so the client's log lines reach it), and after a
// failed dial it fails every dial for DownFor at once with that dial's
// error, so a call to a server that is down costs no network round trip
// and no retry back-off, whatever the number of rows and calls.
type guard struct {
	log     *zerolog.Logger
	downFor time.Duration
	now     func() time.Time

	mu        sync.Mutex
	lastErr   error     // the last dial's error, nil once one succeeded
	failedAt  time.Time // when it failed
	downSince time.Time // the first failure since the last success
}

func (g *guard) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if g.downFor > 0 {
			g.mu.Lock()
			err, at := g.lastErr, g.failedAt
			g.mu.Unlock()
			if err != nil && g.now().Sub(at) < g.downFor {
				return nil, &downError{err: err, at: at}
			}
		}
		c, err := next(ctx, network, addr)
		g.mu.Lock()
		wasDown, since := g.lastErr != nil, g.downSince
		switch {
		case err != nil && ctx.Err() == nil: // a caller's own deadline says nothing of the server
			if !wasDown {
				g.downSince = g.now()
			}
			g.lastErr, g.failedAt = err, g.now()
		case err == nil:
			g.lastErr = nil
		}
		g.mu.Unlock()
		switch {
		case err != nil && !wasDown && ctx.Err() == nil:
			g.log.Warn().Str("addr", addr).Str("error", err.Error()).Int64("down_for_ms", g.downFor.Milliseconds()).Msg("redis: server unreachable")
		case err == nil && wasDown:
			g.log.Info().Str("addr", addr).Int64("down_ms", g.now().Sub(since).Milliseconds()).Msg("redis: server reachable again")
		}
		return c, err
	}
}

func (g *guard) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		return next(context.WithValue(ctx, loggerKey{}, g.log), cmd)
	}
}

func (g *guard) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		return next(context.WithValue(ctx, loggerKey{}, g.log), cmds)
	}
}

// downError is a dial not attempted because the last one failed recently.
// It unwraps to that dial's error, so it classifies as that error does (a
// connection error).
type downError struct {
	err error
	at  time.Time
}

func (e *downError) Error() string {
	return fmt.Sprintf("server unreachable: not dialled, the last dial %v ago failed: %v", time.Since(e.at).Round(time.Millisecond), e.err)
}

func (e *downError) Unwrap() error { return e.err }

func newGuard(opt Options) *guard {
	l := opt.Logger
	g := &guard{log: &l, downFor: opt.DownFor, now: time.Now}
	if g.downFor == 0 {
		g.downFor = DefaultDownFor
	}
	return g
}

package redis_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/redis"
)

// loggerChild marks the process TestOpenLeavesGoRedisLoggerAlone runs its
// check in: go-redis's logger is one per process and can be set only, so
// the check needs a process in which nothing set it before.
const loggerChild = "KVBLOB_REDIS_LOGGER_CHILD"

type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) Printf(_ context.Context, format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, fmt.Sprintf(format, v...))
}

// TestOpenLeavesGoRedisLoggerAlone: an embedder that gave go-redis a
// logger of its own keeps it after opening a driver: its own client's
// lines still reach it. (Open used to replace go-redis's process-wide
// logger, and the embedder's clients went silent.)
func TestOpenLeavesGoRedisLoggerAlone(t *testing.T) {
	redis7.Need(t)
	if os.Getenv(loggerChild) != "1" {
		exe, err := os.Executable()
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, exe, "-test.run=^TestOpenLeavesGoRedisLoggerAlone$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), loggerChild+"=1")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		require.Contains(t, string(out), "--- PASS: TestOpenLeavesGoRedisLoggerAlone", "%s", out)
		return
	}
	mine := &lines{}
	goredis.SetLogger(mine)
	d, err := redis.Open(context.Background(), redis.Options{Addrs: []string{redis7.Value().Addr}})
	require.NoError(t, err)
	defer func() {
		require.True(t, d.Drain(t.Context()))
		require.NoError(t, d.Close())
	}()

	// go-redis logs, on the caller's context, that it truncates an expiry
	// under a millisecond; the embedder's own client, the embedder's log.
	own := goredis.NewClient(&goredis.Options{Addr: redis7.Value().Addr})
	defer own.Close()
	require.NoError(t, own.Set(context.Background(), "embedder-key", "v", 500*time.Microsecond).Err())
	mine.mu.Lock()
	defer mine.mu.Unlock()
	assert.True(t, len(mine.got) == 1 && strings.Contains(mine.got[0], "truncating to 1ms"), "the embedder's logger got %q", mine.got)
}

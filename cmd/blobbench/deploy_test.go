package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/rediskit"
)

// TestAgainstARedisYouRun points blobbench at a redis-server the test
// starts on loopback, as a user points it at theirs: it refuses a prefix
// that holds a key, benches an empty one, and leaves no key of its own
// behind, with or without -force.
func TestAgainstARedisYouRun(t *testing.T) {
	if ok, why := rediskit.Available(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no Redis server: %s", why)
		}
		t.Skip(why)
	}
	srv, err := rediskit.Start()
	require.NoError(t, err)
	defer srv.Stop()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, c.Set(ctx, "theirs/v1/00", "a user's row", 0).Err())
	keys := func() []string {
		ks, err := c.Keys(ctx, "*").Result()
		require.NoError(t, err)
		return ks
	}

	var out, errb bytes.Buffer
	assert.Equal(t, 1, run([]string{"-quick", "-redis", srv.Addr, "-prefix", "theirs", "-out", t.TempDir()}, &out, &errb))
	assert.Contains(t, errb.String(), `holds keys under "theirs/"`)
	assert.Contains(t, errb.String(), "-force")
	assert.Equal(t, []string{"theirs/v1/00"}, keys(), "a refused run writes nothing")

	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run([]string{"-quick", "-redis", srv.Addr, "-prefix", "bench", "-out", t.TempDir()}, &out, &errb), errb.String())
	f := `\d+\.\d+ \(\d+\.\d+–\d+\.\d+\)`
	at := func(size string) string {
		return ` publish_vs_memcpy@` + size + `=` + f + ` fetch_vs_memcpy@` + size + `=` + f +
			` publish_vs_pipeline@` + size + `=` + f + ` fetch_vs_pipeline@` + size + `=` + f
	}
	assert.Regexp(t, regexp.MustCompile(`(?m)^ratios\[redis\]: workers=2`+at("64KiB")+at("1MiB")+` fetch_p99_loaded_vs_idle=`+f+` publish_loaded_vs_alone=`+f+`$`), out.String())
	assert.NotContains(t, out.String(), "ratios[memory]", "only the store given is benched")
	assert.Contains(t, errb.String(), "blobbench: redis", "progress goes to stderr")
	assert.Equal(t, []string{"theirs/v1/00"}, keys(), "the run deletes every key it wrote")

	out.Reset()
	errb.Reset()
	require.Equal(t, 0, run([]string{"-quick", "-redis", srv.Addr, "-prefix", "theirs", "-force", "-stores", "redis", "-out", t.TempDir()}, &out, &errb), errb.String())
	assert.Equal(t, []string{"theirs/v1/00"}, keys(), "-force deletes only what the run wrote")
	v, err := c.Get(ctx, "theirs/v1/00").Result()
	require.NoError(t, err)
	assert.Equal(t, "a user's row", v)
}

// TestAgainstAValkeyYouRun: a Valkey 8.1 given as -redis is benched and
// named as the build it is, not as Redis.
func TestAgainstAValkeyYouRun(t *testing.T) {
	if ok, why := rediskit.Valkey81.Available(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but no Valkey 8.1: %s", why)
		}
		t.Skip(why)
	}
	srv, err := rediskit.StartWith(rediskit.Config{Build: rediskit.Valkey81})
	require.NoError(t, err)
	defer srv.Stop()
	var out, errb bytes.Buffer
	require.Equal(t, 0, run([]string{"-quick", "-redis", srv.Addr, "-prefix", "bench", "-out", t.TempDir()}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "ratios[redis-valkey-8.1]: workers=2 publish_vs_memcpy@64KiB=")
	assert.NotContains(t, out.String(), "ratios[redis]:")
}

// TestAFailedRunDeletesWhatItWrote makes the run fail midway (the server
// refuses writes once a small memory limit is reached) and checks that it
// still deletes what it wrote.
func TestAFailedRunDeletesWhatItWrote(t *testing.T) {
	if ok, why := rediskit.Available(); !ok {
		t.Skip(why)
	}
	srv, err := rediskit.Start()
	require.NoError(t, err)
	defer srv.Stop()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	defer c.Close()
	ctx := context.Background()
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "8mb").Err())
	require.NoError(t, c.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
	var out, errb bytes.Buffer
	assert.Equal(t, 1, run([]string{"-quick", "-redis", srv.Addr, "-out", t.TempDir()}, &out, &errb))
	assert.Contains(t, errb.String(), "deleting the")
	t.Log(errb.String())
	n, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "a failed run leaves no key behind")
}

// TestCtrlCDeletesWhatItWrote interrupts a blobbench process mid-run and
// checks that it waits for its calls in flight, deletes every key it
// wrote and exits 130.
func TestCtrlCDeletesWhatItWrote(t *testing.T) {
	if ok, why := rediskit.Available(); !ok {
		t.Skip(why)
	}
	srv, err := rediskit.Start()
	require.NoError(t, err)
	defer srv.Stop()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr})
	defer c.Close()
	ctx := context.Background()

	cmd := exec.Command(os.Args[0], "-redis", srv.Addr, "-row-kib", "256", "-workers", "2", "-reps", "50", "-out", t.TempDir())
	cmd.Env = append(os.Environ(), "BLOBBENCH_RUN_MAIN=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	lines := bufio.NewScanner(stderr)
	var log strings.Builder
	for lines.Scan() { // wait until it is writing
		log.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "blobbench: redis 256 KiB") {
			break
		}
	}
	for { // until a key of its own is in the store
		n, err := c.DBSize(ctx).Result()
		require.NoError(t, err)
		if n > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	for lines.Scan() {
		log.WriteString(lines.Text() + "\n")
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "%v\n%s", err, log.String())
	assert.Equal(t, 130, exit.ExitCode(), log.String())
	assert.Contains(t, log.String(), "deleting the")
	n, err := c.DBSize(ctx).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "an interrupted run leaves no key behind\n%s", log.String())
}

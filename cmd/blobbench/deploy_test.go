package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
	"github.com/kvblob/kvblob/stores/trailer"
)

// runWithin is run, bounded: a quick run takes seconds, and a phase whose
// hand-off deadlocks (a fetch that never waits for its pong) then fails
// its test in two minutes, naming the run, instead of holding the test
// binary to its -timeout and then CI's.
func runWithin(t *testing.T, args []string, stdout, stderr io.Writer) int {
	t.Helper()
	return bound.Value(t, 2*time.Minute, "blobbench "+strings.Join(args, " "), func() int { return run(args, stdout, stderr) })
}

// TestAgainstARedisYouRun points blobbench at a redis-server the test
// starts on loopback, as a user points it at theirs: it refuses a prefix
// that holds a key, benches an empty one, and leaves no key of its own
// behind, with or without -force. The bench run is given -steps, so the
// same run shows that every bandwidth rep runs its rounds (a run of its
// own cost as much CPU as the rest of this test).
func TestAgainstARedisYouRun(t *testing.T) {
	storekit.NeedInstalled(t, rediskit.Available)
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
	assert.Equal(t, 1, runWithin(t, []string{"-quick", "-redis", srv.Addr, "-prefix", "theirs", "-out", t.TempDir()}, &out, &errb))
	assert.Contains(t, errb.String(), `holds keys under "theirs/"`)
	assert.Contains(t, errb.String(), "-force")
	assert.Equal(t, []string{"theirs/v1/00"}, keys(), "a refused run writes nothing")

	out.Reset()
	errb.Reset()
	require.Equal(t, 0, runWithin(t, []string{"-quick", "-redis", srv.Addr, "-prefix", "bench", "-out", t.TempDir(), "-steps"}, &out, &errb), errb.String())
	t.Run("each rep runs its rounds", func(t *testing.T) { assertEachRepRanItsRounds(t, errb.String()) })
	f := `\d+\.\d+ \(\d+\.\d+–\d+\.\d+\)`
	at := func(size string) string {
		return ` publish_vs_memcpy@` + size + `=` + f + ` fetch_vs_memcpy@` + size + `=` + f +
			` publish_vs_pipeline@` + size + `=` + f + ` fetch_vs_pipeline@` + size + `=` + f +
			` publish_keyed_vs_off@` + size + `=` + f + ` fetch_keyed_vs_off@` + size + `=` + f +
			` publish_keyed_vs_tag_bound@` + size + `=` + f + ` fetch_keyed_vs_tag_bound@` + size + `=` + f +
			` tag_bound_gb_s@` + size + `=` + f + ` tag_only_gb_s@` + size + `=` + f +
			` pipeline_publish_vs_tag_bound@` + size + `=` + f + ` pipeline_fetch_vs_tag_bound@` + size + `=` + f
	}
	assert.Regexp(t, regexp.MustCompile(`(?m)^ratios\[redis\]: workers=2`+at("64KiB")+at("1MiB")+` fetch_p99_loaded_vs_idle=`+f+` publish_loaded_vs_alone=`+f+`$`), out.String())
	assert.NotContains(t, out.String(), "ratios[memory]", "only the store given is benched")
	assert.Contains(t, errb.String(), "blobbench: redis", "progress goes to stderr")
	assert.Equal(t, []string{"theirs/v1/00"}, keys(), "the run deletes every key it wrote")

	out.Reset()
	errb.Reset()
	// What -force deletes does not depend on the sizes: one of each.
	require.Equal(t, 0, runWithin(t, []string{"-quick", "-redis", srv.Addr, "-prefix", "theirs", "-force", "-stores", "redis", "-row-kib", "64", "-workers", "1", "-out", t.TempDir()}, &out, &errb), errb.String())
	assert.Equal(t, []string{"theirs/v1/00"}, keys(), "-force deletes only what the run wrote")
	v, err := c.Get(ctx, "theirs/v1/00").Result()
	require.NoError(t, err)
	assert.Equal(t, "a user's row", v)
}

// TestAgainstAValkeyYouRun: a Valkey 8.1 given as -redis is benched and
// named as the build it is, not as Redis (at one row size and worker
// count: the name does not depend on them).
func TestAgainstAValkeyYouRun(t *testing.T) {
	storekit.NeedInstalled(t, rediskit.Valkey81.Available)
	srv, err := rediskit.StartWith(rediskit.Config{Build: rediskit.Valkey81})
	require.NoError(t, err)
	defer srv.Stop()
	var out, errb bytes.Buffer
	require.Equal(t, 0, runWithin(t, []string{"-quick", "-redis", srv.Addr, "-prefix", "bench", "-row-kib", "64", "-workers", "2", "-out", t.TempDir()}, &out, &errb), errb.String())
	assert.Contains(t, out.String(), "ratios[redis-valkey-8.1]: workers=2 publish_vs_memcpy@64KiB=")
	assert.NotContains(t, out.String(), "ratios[redis]:")
}

// TestAFailedRunDeletesWhatItWrote makes the run fail midway (the server
// refuses writes once a small memory limit is reached, within the first
// rep of 1 MiB rows) and checks that it still deletes what it wrote.
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
	assert.Equal(t, 1, runWithin(t, []string{"-quick", "-redis", srv.Addr, "-row-kib", "1024", "-workers", "1", "-out", t.TempDir()}, &out, &errb))
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

// pipelines records the pipelines clients send, by "client:command":
// each one's length, and how many were in flight at once. The first want
// of each wait until want of them are in flight (at most 10 s, then
// gaveUp names it), so a baseline that sends fewer at once is seen.
type pipelines struct {
	mu       sync.Mutex
	sent     map[string][]int // each pipeline's length
	inFlight map[string]int
	most     map[string]int
	want     map[string]int
	reached  map[string]chan struct{}
	gaveUp   []string
}

// on is the hook that records client's pipelines under its name.
func (p *pipelines) on(client string) goredis.Hook { return clientHook{p, client} }

type clientHook struct {
	p      *pipelines
	client string
}

func (h clientHook) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (h clientHook) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }
func (h clientHook) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	p := h.p
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		switch cmds[0].Name() {
		case "hello", "auth", "client": // a new connection's set-up
			return next(ctx, cmds)
		}
		name := h.client + ":" + cmds[0].Name()
		for _, c := range cmds {
			if h.client+":"+c.Name() != name {
				name = h.client + ":mixed"
			}
		}
		p.mu.Lock()
		p.sent[name] = append(p.sent[name], len(cmds))
		p.inFlight[name]++
		p.most[name] = max(p.most[name], p.inFlight[name])
		reached := p.reached[name]
		if p.inFlight[name] == p.want[name] && reached != nil {
			close(reached)
			p.reached[name] = nil
		}
		p.mu.Unlock()
		if reached != nil {
			select {
			case <-reached:
			case <-time.After(10 * time.Second): // a bound on a wait for an event, not a pause
				p.mu.Lock()
				p.gaveUp = append(p.gaveUp, name)
				p.reached[name] = nil
				p.mu.Unlock()
			}
		}
		defer func() {
			p.mu.Lock()
			p.inFlight[name]--
			p.mu.Unlock()
		}()
		return next(ctx, cmds)
	}
}

// TestThePipelineBaselineDoesTheDriversWorkLikeForLike: the raw pipeline
// the redis ratios divide by sends perCall keys per pipeline, SETs on the
// driver's publish client and GETs on its fetch client, putConc and
// getConc pipelines at once (each reached), and reads every reply into a
// buffer it kept, allocating none per row.
func TestThePipelineBaselineDoesTheDriversWorkLikeForLike(t *testing.T) {
	if ok, why := rediskit.Available(); !ok {
		t.Skip(why)
	}
	srv, err := rediskit.Start()
	require.NoError(t, err)
	defer srv.Stop()
	rec := &pipelines{sent: map[string][]int{}, inFlight: map[string]int{}, most: map[string]int{}}
	d, err := redis.Open(context.Background(), redis.Options{Addrs: []string{srv.Addr}})
	require.NoError(t, err)
	d.Client().AddHook(rec.on("publish"))
	d.FetchClient().AddHook(rec.on("fetch"))
	defer func() {
		require.True(t, d.Drain(context.Background()))
		require.NoError(t, d.Close())
	}()
	base, err := pipelineOf(d)
	require.NoError(t, err)

	const rowBytes, rows, perCall, putConc, getConc = 256 << 10, 24, 4, 2, 3
	keys, objs := make([]string, rows), make([][]byte, rows)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench/v1/%02d", i)
		objs[i] = plainObject(nil, keys[i], bytes.Repeat([]byte{byte(i)}, rowBytes))
	}
	for rep := range 2 {
		rec.mu.Lock()
		clear(rec.sent)
		clear(rec.most)
		rec.want = map[string]int{"publish:set": putConc, "fetch:get": getConc}
		rec.reached = map[string]chan struct{}{"publish:set": make(chan struct{}), "fetch:get": make(chan struct{})}
		rec.mu.Unlock()
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		_, err = base.run(keys, objs, perCall, putConc, getConc)
		runtime.ReadMemStats(&ms1)
		require.NoError(t, err)

		rec.mu.Lock()
		assert.Empty(t, rec.gaveUp, "rep %d: fewer pipelines in flight than asked", rep)
		assert.Equal(t, map[string][]int{"publish:set": {4, 4, 4, 4, 4, 4}, "fetch:get": {4, 4, 4, 4, 4, 4}}, rec.sent,
			"rep %d: perCall keys per pipeline, SETs on the driver's publish client, GETs on its fetch client", rep)
		assert.Equal(t, map[string]int{"publish:set": putConc, "fetch:get": getConc}, rec.most, "rep %d: pipelines in flight at once", rep)
		rec.mu.Unlock()
		if rep > 0 { // the reply buffers are made on the first run, and kept
			assert.Less(t, ms1.TotalAlloc-ms0.TotalAlloc, uint64(rowBytes), "a reply read into a fresh allocation (%d rows of %d bytes)", rows, rowBytes)
		}
	}
}

// TestAPlainObjectIsTheObjectTheDriverStores: the bytes a store's own
// client sends for a row are its payload and trailer (trailer.Encode's),
// built in the caller's buffer when it is large enough, so a rep reuses
// the one before's memory.
func TestAPlainObjectIsTheObjectTheDriverStores(t *testing.T) {
	payload := bytes.Repeat([]byte("row bytes "), 100)
	for _, c := range []struct {
		name  string
		dst   []byte
		reuse bool
	}{
		{"no buffer yet", nil, false},
		{"a buffer too small", make([]byte, 10), false},
		{"the buffer of the rep before", make([]byte, len(payload)+trailer.Size), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := plainObject(c.dst, "k/v1/00", payload)
			assert.Equal(t, trailer.Encode("k/v1/00", payload), obj)
			got, err := trailer.Check(obj, "k/v1/00")
			require.NoError(t, err)
			assert.Equal(t, payload, got)
			assert.Equal(t, c.reuse, len(c.dst) > 0 && &obj[0] == &c.dst[0], "built in the caller's buffer")
		})
	}
}

// assertEachRepRanItsRounds: every bandwidth rep of a Redis store runs
// shortStepRounds rounds of the driver's steps and its pipeline's, and
// -steps prints each round's times, the pipeline's beside the driver's;
// log is the stderr of a -quick -steps run of both row sizes and worker
// counts. (Tried: dropping openRedis's rounds leaves one round a rep and
// fails it.)
func assertEachRepRanItsRounds(t *testing.T, log string) {
	round := regexp.MustCompile(`\[publish [0-9.]+ fetch [0-9.]+ pipeline put [0-9.]+ get [0-9.]+\]`)
	var lines int
	for _, line := range strings.Split(log, "\n") {
		if !strings.HasPrefix(line, "steps redis ") {
			continue
		}
		lines++
		assert.Len(t, round.FindAllString(line, -1), shortStepRounds, line)
	}
	// -quick: 2 row sizes x 2 worker counts x (1 rep + the warm-up).
	assert.Equal(t, 8, lines, log)
}

package redis_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
)

// dialCounter counts the dials that reach the network.
type dialCounter struct{ n atomic.Int64 }

func (d *dialCounter) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.n.Add(1)
		return next(ctx, network, addr)
	}
}
func (d *dialCounter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }
func (d *dialCounter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}

// captureStderr points fd 2 at a pipe until the returned function, which
// restores it and returns what was written.
func captureStderr(t *testing.T) func() string {
	t.Helper()
	saved, err := syscall.Dup(2)
	require.NoError(t, err)
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.NoError(t, syscall.Dup3(int(w.Fd()), 2, 0))
	got := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		got <- string(b)
	}()
	return func() string {
		_ = syscall.Dup3(saved, 2, 0)
		_ = syscall.Close(saved)
		_ = w.Close()
		s := <-got
		_ = r.Close()
		return s
	}
}

// deadPublish publishes rows rows, one per driver call, through a backend
// over a driver whose server was killed after Open, and returns the dials
// that reached the network, what the driver's logger got and how long the
// publish took.
func deadPublish(t *testing.T, rows int, downFor time.Duration) (dials int64, logged string, took time.Duration) {
	t.Helper()
	own, err := rediskit.Start()
	require.NoError(t, err)
	defer own.Stop()
	var logs bytes.Buffer
	count := &dialCounter{}
	d, err := redis.Open(context.Background(), redis.Options{Addrs: []string{own.Addr}, Hooks: []goredis.Hook{count},
		Logger: zerolog.New(&logs), DownFor: downFor, DialTimeout: time.Second})
	require.NoError(t, err)
	lender, err := hostmem.NewLender("dead", driver.Layout{SlotBytes: 4 << 10, Slots: rows})
	require.NoError(t, err)
	hold, err := lender.Hold()
	require.NoError(t, err)
	bind, err := backend.Bind(t.Context(), hold.Regions(), d, hold)
	require.NoError(t, err)
	be, err := backend.New(bind, backend.Config{Workers: 3, RowsPerBatch: 1, Prefix: "dead"})
	require.NoError(t, err)

	own.Kill()
	// Close the pooled connection of Open's INFO, so the publish dials.
	d.Client().(*goredis.Client).Conn().Close()
	v := make(backend.View, rows)
	for i := range v {
		v[i] = backend.ViewRow{Name: []byte{byte(i)}, Spans: []driver.Span{hold.Regions()[0].Slot(i)}}
	}
	dialsBefore := count.n.Load()
	start := time.Now()
	a, err := be.Publish(t.Context(), v)
	require.NoError(t, err)
	out, err := a.Wait(context.Background())
	require.NoError(t, err)
	took = time.Since(start)
	dials = count.n.Load() - dialsBefore
	for i, r := range out.Results {
		assert.Equal(t, driver.Fault, r.Status, "row %d", i)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, be.Shutdown(ctx))
	require.NoError(t, d.Close())
	require.NoError(t, lender.Close())
	return dials, logs.String(), took
}

// awaitPoolProbes waits (at most 5 s) for the goroutines go-redis's pool
// starts to probe a server after PoolSize failed dials: each notices the
// pool closed only after its 1 s sleep.
func awaitPoolProbes(t *testing.T, ignore goleak.Option) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := goleak.Find(ignore)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left after Close: %v", err)
		}
	}
}

// TestADeadServerIsQuietAndBounded publishes to a server that died after
// Open: every row faults, nothing reaches stderr once the program routed
// go-redis's lines (SetClientLogger), and the dials that reach the network do not grow with
// the rows (after one failed dial the guard fails the others at once).
func TestADeadServerIsQuietAndBounded(t *testing.T) {
	redis7.Need(t)
	// go-redis prints its pool's dial failures to stderr unless a program
	// routes them; this is the call docs/operating.md gives for that.
	redis.SetClientLogger(zerolog.Nop())
	ignore := goleak.IgnoreCurrent()
	restore := captureStderr(t)
	d8, log8, took8 := deadPublish(t, 8, time.Minute)
	d64, log64, took64 := deadPublish(t, 64, time.Minute)
	stderr := restore()
	awaitPoolProbes(t, ignore)
	t.Logf("8 rows: %d dials in %v; 64 rows: %d dials in %v", d8, took8, d64, took64)
	assert.Empty(t, stderr, "a publish to a dead server printed to stderr")
	assert.Equal(t, 1, strings.Count(log64, "redis: server unreachable"), "one warning per outage: %s", log64)
	assert.Equal(t, 1, strings.Count(log8, "redis: server unreachable"), "one warning per outage: %s", log8)
	// At most one dial per publishing worker raced the first failure.
	assert.LessOrEqual(t, d64, int64(3), "dials to a dead server grew with the rows")
	assert.LessOrEqual(t, d8, int64(3))
}

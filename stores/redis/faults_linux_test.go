package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
)

// The real-server fault tests: a backend over the driver over a
// redis-server of the test's own, and a fault staged just before one row's
// command leaves the client (the fault hook runs it on the caller's
// goroutine, so the fault is in place when the command goes out: no sleep).
// Each test checks what must hold whatever the fault did:
//
//   - no READY row is wrong: a fetch's READY row holds the bytes published;
//     a publish's READY row reads back whole once the server is healthy;
//   - a fetch row that is not READY left its destination untouched;
//   - Shutdown(ctx) returns within its budget, and nothing leaks.
const (
	faultRows  = 24
	faultBytes = 16 << 10
	prefix     = "flt"
	poison     = 0xEE
	budget     = 5 * time.Second
)

type faultFx struct {
	srv    *rediskit.Server
	faults *rediskit.Faults
	d      *redis.Driver
	lender *hostmem.Lender
	be     *backend.Backend
	slots  *driver.Region
}

func faultKey(i int) string { return fmt.Sprintf("%s/v1/%x", prefix, []byte{byte(i)}) }

// newFaultFx starts a server of build b with extra arguments and a
// backend over it. ReadTimeout is short: only it ends a call to a frozen
// server.
func newFaultFx(t *testing.T, b *rediskit.Build, extra ...string) *faultFx {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	srv, err := rediskit.StartWith(rediskit.Config{Build: b, Extra: extra})
	require.NoError(t, err)
	f := &faultFx{srv: srv, faults: rediskit.NewFaults()}
	f.d, err = redis.Open(context.Background(), redis.Options{Addrs: []string{srv.Addr}, Hooks: []goredis.Hook{f.faults},
		DialTimeout: time.Second, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond, DownFor: -1})
	require.NoError(t, err)
	f.lender, err = hostmem.NewLender("flt", driver.Layout{SlotBytes: faultBytes, Slots: 2 * faultRows})
	require.NoError(t, err)
	hold, err := f.lender.Hold()
	require.NoError(t, err)
	f.slots = hold.Regions()[0]
	bind, err := backend.Bind(t.Context(), hold.Regions(), f.d, hold)
	require.NoError(t, err)
	f.be, err = backend.New(bind, backend.Config{Workers: 3, RowsPerBatch: 4, Prefix: prefix})
	require.NoError(t, err)
	for i := 0; i < faultRows; i++ {
		b := f.slots.Slot(i).Bytes()
		for j := range b {
			b[j] = byte(i*7 + j*13 + 1)
		}
	}
	t.Cleanup(func() {
		_ = srv.Thaw()
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		start := time.Now()
		err := f.be.Shutdown(ctx)
		assert.NoError(t, err, "Shutdown did not finish within its %v budget", budget)
		assert.NoError(t, ctx.Err(), "Shutdown returned after its budget (%v)", time.Since(start))
		assert.NoError(t, f.d.Close())
		assert.NoError(t, f.lender.Close())
		srv.Stop()
		awaitPoolProbes(t, ignore)
	})
	return f
}

func (f *faultFx) view(first int) backend.View {
	v := make(backend.View, faultRows)
	for i := range v {
		v[i] = backend.ViewRow{Name: []byte{byte(i)}, Spans: []driver.Span{f.slots.Slot(first + i)}}
	}
	return v
}

func (f *faultFx) run(t *testing.T, fetch bool) backend.Outcome {
	t.Helper()
	var a *backend.Attempt
	var err error
	if fetch {
		for i := faultRows; i < 2*faultRows; i++ {
			b := f.slots.Slot(i).Bytes()
			for j := range b {
				b[j] = poison
			}
		}
		a, err = f.be.Fetch(t.Context(), f.view(faultRows))
	} else {
		a, err = f.be.Publish(t.Context(), f.view(0))
	}
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := a.Wait(ctx)
	require.NoError(t, err)
	select {
	case <-a.Quiesced():
	default:
		t.Error("every Redis call ends its access on return, yet the attempt has not quiesced")
	}
	return out
}

// checkFetch: every READY row holds its published bytes, every other row's
// destination is untouched.
func (f *faultFx) checkFetch(t *testing.T, out backend.Outcome) (ready int) {
	t.Helper()
	for i, r := range out.Results {
		got, want := f.slots.Slot(faultRows+i).Bytes(), f.slots.Slot(i).Bytes()
		if r.Status == driver.Ready {
			ready++
			assert.True(t, bytes.Equal(got, want), "row %d READY with the wrong bytes", i)
			continue
		}
		assert.Equal(t, -1, firstWritten(got), "row %d is %v but its destination was written", i, r.Status)
	}
	return ready
}

// checkPublished fetches the rows from a healthy server: each row the
// publish called READY must read back READY and whole.
func (f *faultFx) checkPublished(t *testing.T, pub backend.Outcome) {
	t.Helper()
	out := f.run(t, true)
	f.checkFetch(t, out)
	for i, r := range pub.Results {
		if r.Status == driver.Ready {
			assert.Equal(t, driver.Ready, out.Results[i].Status, "row %d published READY but reads %v", i, out.Results[i])
		}
	}
}

// firstWritten is the index of the first byte that is not poison, or -1.
func firstWritten(b []byte) int {
	for i, c := range b {
		if c != poison {
			return i
		}
	}
	return -1
}

func statuses(out backend.Outcome) map[driver.Status]int {
	m := map[driver.Status]int{}
	for _, r := range out.Results {
		m[r.Status]++
	}
	return m
}

// TestRealServerFaults runs each fault over a server of each build: on
// Valkey 8.1 the publish's store step is SET IFEQ, on Redis 7 WATCH and
// MULTI/EXEC.
func TestRealServerFaults(t *testing.T) {
	for _, b := range rediskit.Builds {
		t.Run(b.Name, func(t *testing.T) {
			if b == rediskit.Valkey81 {
				valkey81.Need(t)
			} else {
				redis7.Need(t)
			}
			realServerFaults(t, b)
		})
	}
}

func realServerFaults(t *testing.T, b *rediskit.Build) {
	t.Run("frozen mid-publish", func(t *testing.T) {
		f := newFaultFx(t, b)
		f.faults.BeforeAny(faultKey(9), func() { require.NoError(t, f.srv.Freeze()) })
		pub := f.run(t, false)
		require.NoError(t, f.srv.Thaw())
		t.Logf("publish: %v", statuses(pub))
		assert.NotZero(t, statuses(pub)[driver.Fault], "the frozen server faulted no row")
		f.checkPublished(t, pub)
	})
	t.Run("frozen mid-fetch", func(t *testing.T) {
		f := newFaultFx(t, b)
		pub := f.run(t, false)
		require.Equal(t, faultRows, statuses(pub)[driver.Ready])
		f.faults.BeforeAny(faultKey(9), func() { require.NoError(t, f.srv.Freeze()) })
		out := f.run(t, true)
		require.NoError(t, f.srv.Thaw())
		t.Logf("fetch: %v", statuses(out))
		assert.Less(t, f.checkFetch(t, out), faultRows, "the frozen server faulted no row")
	})
	t.Run("killed mid-publish, restarted on its port", func(t *testing.T) {
		f := newFaultFx(t, b)
		f.faults.BeforeAny(faultKey(9), f.srv.Kill)
		pub := f.run(t, false)
		require.NoError(t, f.srv.Restart())
		t.Logf("publish: %v", statuses(pub))
		assert.NotZero(t, statuses(pub)[driver.Fault])
		// The server lost everything: nothing may read READY but what a
		// publish after the restart stored.
		out := f.run(t, true)
		assert.Zero(t, f.checkFetch(t, out), "a row reads READY from a server that restarted empty")
		pub = f.run(t, false)
		require.Equal(t, faultRows, statuses(pub)[driver.Ready], "the restarted server took no publish: %v", statuses(pub))
		f.checkPublished(t, pub)
	})
	t.Run("killed mid-fetch, restarted on its port", func(t *testing.T) {
		f := newFaultFx(t, b)
		require.Equal(t, faultRows, statuses(f.run(t, false))[driver.Ready])
		f.faults.BeforeAny(faultKey(9), f.srv.Kill)
		out := f.run(t, true)
		t.Logf("fetch: %v", statuses(out))
		assert.Less(t, f.checkFetch(t, out), faultRows)
		require.NoError(t, f.srv.Restart())
		assert.Zero(t, f.checkFetch(t, f.run(t, true)))
	})
	t.Run("full with noeviction", func(t *testing.T) {
		// Room for a few rows beside the server's own ~1 MiB.
		f := newFaultFx(t, b, "--maxmemory", "1200kb", "--maxmemory-policy", "noeviction")
		pub := f.run(t, false)
		t.Logf("publish: %v", statuses(pub))
		assert.NotZero(t, statuses(pub)[driver.Declined], "a full server declined no row")
		assert.Zero(t, statuses(pub)[driver.Fault], "a full server is not a fault")
		f.checkPublished(t, pub)
	})
	t.Run("CLIENT PAUSE mid-publish and mid-fetch", func(t *testing.T) {
		f := newFaultFx(t, b)
		pause := func(mode string) func() {
			return func() {
				reply, err := f.srv.Command("CLIENT PAUSE 1500 " + mode)
				require.NoError(t, err)
				require.Equal(t, "+OK", reply)
			}
		}
		unpause := func() {
			reply, err := f.srv.Command("CLIENT UNPAUSE")
			require.NoError(t, err)
			require.Equal(t, "+OK", reply)
		}
		f.faults.BeforeAny(faultKey(9), pause("WRITE"))
		pub := f.run(t, false)
		unpause()
		t.Logf("publish: %v", statuses(pub))
		assert.NotZero(t, statuses(pub)[driver.Fault], "a paused server faulted no row")
		f.checkPublished(t, pub)

		require.Equal(t, faultRows, statuses(f.run(t, false))[driver.Ready], "a publish after UNPAUSE")
		f.faults.BeforeAny(faultKey(9), pause("ALL"))
		out := f.run(t, true)
		unpause()
		t.Logf("fetch: %v", statuses(out))
		assert.Less(t, f.checkFetch(t, out), faultRows, "a paused server faulted no row")
	})
}

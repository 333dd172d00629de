package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
	"github.com/kvblob/kvblob/stores/trailer"
)

// The package's servers, of each build: a redis-server 7 and a Valkey
// 8.1 on loopback, started before the tests, and a three-node Cluster of
// each, started by the first test that needs it (most tests, and the
// gate's run, need none). A test takes one with Need, which skips it when
// the build is not installed, and fails it under CI=true (make deps,
// which .ci/run runs, installs redis-server and fetches Valkey 8.1).
var (
	redis7, valkey81 = standaloneOf(rediskit.Redis7), standaloneOf(rediskit.Valkey81)
	clusters         = map[*rediskit.Build]*storekit.Owned[*rediskit.Cluster]{
		rediskit.Redis7: clusterOwned(rediskit.Redis7), rediskit.Valkey81: clusterOwned(rediskit.Valkey81),
	}
)

func TestMain(m *testing.M) {
	owned := []storekit.Owner{redis7, valkey81, clusters[rediskit.Redis7], clusters[rediskit.Valkey81]}
	for _, k := range secureKinds {
		owned = append(owned, secures[k])
	}
	storekit.MainOwning(m, owned...)
}

func standaloneOf(b *rediskit.Build) *storekit.Owned[*rediskit.Server] {
	start := func() (*rediskit.Server, error) { return rediskit.StartWith(rediskit.Config{Build: b}) }
	return storekit.Own(b.Available, start, func(s *rediskit.Server) error { s.Stop(); return nil })
}

func clusterOwned(b *rediskit.Build) *storekit.Owned[*rediskit.Cluster] {
	start := func() (*rediskit.Cluster, error) { return rediskit.StartClusterWith(3, rediskit.Config{Build: b}) }
	return storekit.Own(b.Available, start, func(c *rediskit.Cluster) error { c.Stop(); return nil }).Lazily()
}

// clusterOf returns build b's Cluster, started at the first call; it
// skips t when the build is not installed, and fails it when the Cluster
// cannot start.
func clusterOf(t testing.TB, b *rediskit.Build) *rediskit.Cluster { return clusters[b].Need(t) }

func standalone() rediskit.Deployment {
	return rediskit.Deployment{Addrs: []string{redis7.Value().Addr}}
}

func clustered(t testing.TB) rediskit.Deployment {
	return rediskit.Deployment{Addrs: clusterOf(t, rediskit.Redis7).Addrs(), Cluster: true}
}

type fx struct {
	d   *redis.Driver
	r   *hostmem.Mapping
	reg driver.Registration
}

func newFx(t *testing.T, addr string, hooks ...*rediskit.Faults) *fx {
	t.Helper()
	opt := redis.Options{Addrs: []string{addr}}
	for _, h := range hooks {
		opt.Hooks = append(opt.Hooks, h)
	}
	d, err := redis.Open(context.Background(), opt)
	require.NoError(t, err)
	r, err := hostmem.Map("slots", driver.Layout{SlotBytes: 64 << 10, Slots: 16})
	require.NoError(t, err)
	reg, err := d.Register(r.Region)
	require.NoError(t, err)
	t.Cleanup(func() {
		if d.Drain(conformance.Within(5*time.Second)) && d.Unregister(reg) == nil {
			_ = d.Close()
			_ = r.Close()
		}
	})
	return &fx{d: d, r: r, reg: reg}
}

// TestAServerKilledMidFetchIsAFault kills the server while a fetch's
// command is on its way: every row is a FAULT, none is READY, and no
// destination byte changed.
func TestAServerKilledMidFetchIsAFault(t *testing.T) {
	redis7.Need(t)
	own, err := rediskit.Start()
	require.NoError(t, err)
	defer own.Stop()
	faults := rediskit.NewFaults()
	f := newFx(t, own.Addr, faults)
	var rows, dst []driver.Row
	for i := 0; i < 8; i++ {
		key := fmt.Sprintf("kill/v1/%02x", i)
		rows = append(rows, driver.Row{Key: key, Spans: []driver.Span{f.r.Slot(i)}})
		dst = append(dst, driver.Row{Key: key, Spans: []driver.Span{f.r.Slot(8 + i)}})
	}
	op, err := f.d.Put(context.Background(), rows)
	require.NoError(t, err)
	res, _ := op.Poll()
	for _, r := range res {
		require.Equal(t, driver.Ready, r.Status)
	}
	for _, r := range dst {
		b := r.Spans[0].Bytes()
		for j := range b {
			b[j] = 0xEE
		}
	}
	faults.Before("getrange", rows[0].Key, own.Kill)
	op, err = f.d.Get(context.Background(), dst, driver.Hint{})
	require.NoError(t, err, "a dead server is a row fault, never an error")
	res, _ = op.Poll()
	for i, r := range res {
		assert.Equal(t, driver.Fault, r.Status, "row %d", i)
		assert.NotEmpty(t, r.Text)
		for _, b := range dst[i].Spans[0].Bytes() {
			if b != 0xEE {
				t.Fatalf("row %d: a faulted row's destination was written", i)
			}
		}
	}
	assert.True(t, op.AccessEnded())
}

func TestOpenChecksTheServer(t *testing.T) {
	redis7.Need(t)
	d, err := redis.Open(context.Background(), redis.Options{Addrs: []string{redis7.Value().Addr}})
	require.NoError(t, err)
	assert.Regexp(t, `^redis-server 7\.`, d.ServerVersion())
	assert.Equal(t, rediskit.Redis7.Spec, d.Spec())
	require.True(t, d.Drain(conformance.Within(time.Second)))
	require.NoError(t, d.Close())

	_, err = redis.Open(context.Background(), redis.Options{})
	assert.ErrorContains(t, err, "no address")
	port, _ := freeClosedPort()
	_, err = redis.Open(context.Background(), redis.Options{Addrs: []string{port}, DialTimeout: time.Second})
	assert.ErrorContains(t, err, "HELLO at")
}

func freeClosedPort() (string, error) {
	s, err := rediskit.Start()
	if err != nil {
		return "", err
	}
	s.Stop()
	return s.Addr, nil
}

// TestGetOfAnObjectLargerThanTheRow reads, in one call, rows whose keys
// hold objects longer than the row (one whole, one corrupt) among rows
// the driver stored: Get reads each key with GETRANGE bounded by the row's
// length. The long objects answer as the spec says (FAULT, destination
// untouched: the payload length differs) and the rows after them are
// still delivered whole.
func TestGetOfAnObjectLargerThanTheRow(t *testing.T) {
	for _, b := range []struct {
		name string
		need func(testing.TB) *rediskit.Server
		dep  func(testing.TB) rediskit.Deployment
	}{
		{"redis7", redis7.Need, func(testing.TB) rediskit.Deployment { return standalone() }},
		{"redis7-cluster", redis7.Need, clustered},
		{"valkey81", valkey81.Need, func(testing.TB) rediskit.Deployment {
			return rediskit.Deployment{Addrs: []string{valkey81.Value().Addr}}
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			b.need(t)
			dep := b.dep(t)
			ctx := context.Background()
			d, err := redis.Open(ctx, redis.Options{Addrs: dep.Addrs, Cluster: dep.Cluster})
			require.NoError(t, err)
			r, err := hostmem.Map("slots", driver.Layout{SlotBytes: 64 << 10, Slots: 16})
			require.NoError(t, err)
			reg, err := d.Register(r.Region)
			require.NoError(t, err)
			defer func() {
				require.True(t, d.Drain(conformance.Within(5*time.Second)))
				require.NoError(t, d.Unregister(reg))
				require.NoError(t, d.Close())
				require.NoError(t, r.Close())
			}()
			const n = 6
			var src, dst []driver.Row
			for i := 0; i < n; i++ {
				key := fmt.Sprintf("large-%s-%d/v1/%02x", b.name, time.Now().UnixNano(), i)
				src = append(src, driver.Row{Key: key, Spans: []driver.Span{r.Slot(i)}})
				dst = append(dst, driver.Row{Key: key, Spans: []driver.Span{r.Slot(n + i)}})
				fill := r.Slot(i).Bytes()
				for j := range fill {
					fill[j] = byte(i*13 + j)
				}
				fill = r.Slot(n + i).Bytes()
				for j := range fill {
					fill[j] = 0xEE
				}
			}
			const whole, corrupt = 1, 3 // keys that hold objects longer than their rows
			var stored []driver.Row
			for i, row := range src {
				if i != whole && i != corrupt {
					stored = append(stored, row)
				}
			}
			op, err := d.Put(ctx, stored)
			require.NoError(t, err)
			res, _ := op.Poll()
			for i, r := range res {
				require.Equal(t, driver.Ready, r.Status, "put %d", i)
			}
			long := bytes.Repeat([]byte{7}, 100<<10)
			require.NoError(t, d.Client().Set(ctx, src[whole].Key, trailer.Encode(src[whole].Key, long), 0).Err())
			bad := trailer.Encode(src[corrupt].Key, long)
			bad[10] ^= 0xff
			require.NoError(t, d.Client().Set(ctx, src[corrupt].Key, bad, 0).Err())

			op, err = d.Get(ctx, dst, driver.Hint{})
			require.NoError(t, err)
			res, _ = op.Poll()
			for i, got := range res {
				if i == whole || i == corrupt {
					assert.Equal(t, driver.Fault, got.Status, "row %d: %v", i, got)
					assert.Equal(t, bytes.Repeat([]byte{0xEE}, 64<<10), dst[i].Spans[0].Bytes(), "row %d: a faulted row's destination was written", i)
					continue
				}
				assert.Equal(t, driver.Ready, got.Status, "row %d: %v", i, got)
				assert.Equal(t, src[i].Spans[0].Bytes(), dst[i].Spans[0].Bytes(), "row %d", i)
			}
			assert.Contains(t, res[whole].Text, "length differs")
			for _, row := range src {
				_ = d.Client().Del(ctx, row.Key).Err()
			}
		})
	}
}

package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/redis"
)

// TestAnOversizedValueIsRefusedByItsLength: a neighbour plants a 64 MiB
// value at a 4 KiB row's key (with SETRANGE, so that neither the test nor
// the network holds it). A get of the row is a FAULT (the payload length
// differs from the row), destination untouched, and a put of it a FAULT
// (the key holds what is not this row), and neither reads the value: the
// call allocates less than 1 MiB and the servers send less than 1 MiB
// (INFO stats total_net_output_bytes), on a server and a Cluster of each
// build.
func TestAnOversizedValueIsRefusedByItsLength(t *testing.T) {
	const planted = 64 << 20
	const bound = 1 << 20
	for _, b := range builds() {
		for _, cluster := range []bool{false, true} {
			name := b.build.Name + "/" + map[bool]string{false: "standalone", true: "cluster"}[cluster]
			t.Run(name, func(t *testing.T) {
				b.owned.Need(t)
				ctx := context.Background()
				addrs := []string{b.owned.Value().Addr}
				if cluster {
					addrs = clusterOf(t, b.build).Addrs()
				}
				var nodes []*goredis.Client
				for _, a := range addrs {
					n := goredis.NewClient(&goredis.Options{Addr: a})
					t.Cleanup(func() { _ = n.Close() })
					nodes = append(nodes, n)
				}
				var neighbour goredis.UniversalClient = nodes[0]
				if cluster {
					neighbour = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
					t.Cleanup(func() { _ = neighbour.Close() })
				}
				sent := func() int64 {
					var total int64
					for _, n := range nodes {
						info, err := n.Info(ctx, "stats").Result()
						require.NoError(t, err)
						for _, line := range strings.Split(info, "\n") {
							if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_net_output_bytes:"); ok {
								x, err := strconv.ParseInt(v, 10, 64)
								require.NoError(t, err)
								total += x
							}
						}
					}
					return total
				}

				a := openTenant(t, redis.Options{Addrs: addrs, Cluster: cluster})
				key := fmt.Sprintf("huge/v1/%x", time.Now().UnixNano())
				require.NoError(t, neighbour.SetRange(ctx, key, planted-1, "x").Err())
				t.Cleanup(func() { _ = neighbour.Del(ctx, key).Err() })
				require.Equal(t, int64(planted), neighbour.StrLen(ctx, key).Val())

				for _, op := range []struct {
					name string
					call func() []driver.Result
					want string
				}{
					{"get", func() []driver.Result { return a.get(t, a.row(key, 1)) }, "length differs"},
					{"put", func() []driver.Result { return a.put(t, a.row(key, 0)) }, "longer than any object"},
				} {
					a.fill(0, 5)
					a.fill(1, 0xEE)
					before := bytes.Clone(a.r.Slot(1).Bytes())
					var m0, m1 runtime.MemStats
					out := sent()
					runtime.ReadMemStats(&m0)
					res := op.call()
					runtime.ReadMemStats(&m1)
					out = sent() - out
					allocated := m1.TotalAlloc - m0.TotalAlloc

					require.Equal(t, driver.Fault, res[0].Status, "%s: %v", op.name, res[0])
					assert.Contains(t, res[0].Text, op.want, op.name)
					assert.Equal(t, before, a.r.Slot(1).Bytes(), "%s: the destination was written", op.name)
					assert.Less(t, allocated, uint64(bound), "%s allocated %d bytes for a 4 KiB row whose key holds %d", op.name, allocated, planted)
					assert.Less(t, out, int64(bound), "%s: the servers sent %d bytes for a 4 KiB row whose key holds %d", op.name, out, planted)
					t.Logf("%s: %v; allocated %d bytes, servers sent %d", op.name, res[0], allocated, out)
				}
				assert.Equal(t, int64(planted), neighbour.StrLen(ctx, key).Val(), "the neighbour's value is left as it was")
			})
		}
	}
}

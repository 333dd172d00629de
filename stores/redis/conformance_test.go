package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
)

// builds are the server builds the package owns.
func builds() []struct {
	build *rediskit.Build
	owned *storekit.Owned[*rediskit.Server]
} {
	return []struct {
		build *rediskit.Build
		owned *storekit.Owned[*rediskit.Server]
	}{{rediskit.Redis7, redis7}, {rediskit.Valkey81, valkey81}}
}

// TestConformance runs the suite over one server of each build, with its
// own spec's generated cases and SDK checks: "redis" on redis-server 7 and
// "redis-valkey-8.1" on Valkey 8.1, the Redis rows of the gate's table.
func TestConformance(t *testing.T) {
	for _, b := range builds() {
		dep := func() rediskit.Deployment { return rediskit.Deployment{Addrs: []string{b.owned.Value().Addr}} }
		conformance.Run(t, b.build.Suite(b.build.Store, dep, b.owned.Value() != nil, b.owned.Why()))
	}
}

// TestConformanceOverACluster runs it over a three-node Cluster of each
// build (its SDK checks ask one server, so they run in TestConformance
// alone).
func TestConformanceOverACluster(t *testing.T) {
	for _, b := range builds() {
		var c *rediskit.Cluster
		if b.owned.Value() != nil {
			c = clusterOf(t, b.build)
		}
		dep := func() rediskit.Deployment { return rediskit.Deployment{Addrs: c.Addrs(), Cluster: true} }
		s := b.build.Suite(b.build.Store+"-cluster", dep, c != nil, b.owned.Why())
		s.SDKChecks = nil
		conformance.Run(t, s)
	}
}

// TestValkey81IsPickedByTheServer: over Valkey 8.1, standalone and
// Cluster, the driver picks spec/redis-valkey-8.1.yaml, which stores with
// SET IFEQ.
func TestValkey81IsPickedByTheServer(t *testing.T) {
	valkey81.Need(t)
	for _, dep := range [][]string{{valkey81.Value().Addr}, clusterOf(t, rediskit.Valkey81).Addrs()} {
		d, err := redis.Open(context.Background(), redis.Options{Addrs: dep, Cluster: len(dep) > 1})
		require.NoError(t, err)
		assert.Equal(t, rediskit.Valkey81.Spec, d.Spec(), "the driver picked %s", d.Spec())
		assert.Regexp(t, `^valkey-server 8\.1\.`, d.ServerVersion())
		require.True(t, d.Drain(conformance.Within(time.Second)))
		require.NoError(t, d.Close())
	}
}

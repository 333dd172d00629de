package redis_test

import (
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/redis/rediskit"
)

// TestStartedServersListenOnLoopbackOnly checks every socket each server
// this package starts listens on, plain and TLS, standalone and Cluster
// (whose nodes also listen on the cluster bus): 127.0.0.1 only, never
// 0.0.0.0, :: or another interface.
func TestStartedServersListenOnLoopbackOnly(t *testing.T) {
	redis7.Need(t)
	check := func(t *testing.T, servers ...*rediskit.Server) {
		for _, s := range servers {
			addrs, err := s.Listening()
			require.NoError(t, err)
			require.NotEmpty(t, addrs, "the server at %s listens on nothing /proc shows", s.Addr)
			for _, a := range addrs {
				assert.Equal(t, netip.MustParseAddr("127.0.0.1"), a.Addr(), "the server at %s listens on %s", s.Addr, a)
			}
			t.Logf("%s listens on %v", s.Addr, addrs)
		}
	}
	t.Run("standalone", func(t *testing.T) { check(t, redis7.Value()) })
	t.Run("cluster", func(t *testing.T) { check(t, clusterOf(t, rediskit.Redis7).Nodes...) })
	t.Run("tls-standalone", func(t *testing.T) { check(t, sharedSecure(t, rediskit.Redis7, false).servers...) })
	t.Run("tls-cluster", func(t *testing.T) { check(t, sharedSecure(t, rediskit.Redis7, true).servers...) })
	// Valkey 8.1 runs through a wrapper that execs it: the process checked
	// is the server itself.
	t.Run("valkey-standalone", func(t *testing.T) { valkey81.Need(t); check(t, valkey81.Value()) })
	t.Run("valkey-cluster", func(t *testing.T) { valkey81.Need(t); check(t, clusterOf(t, rediskit.Valkey81).Nodes...) })
	t.Run("valkey-tls-cluster", func(t *testing.T) { check(t, sharedSecure(t, rediskit.Valkey81, true).servers...) })
}

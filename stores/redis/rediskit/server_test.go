package rediskit

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAClusterNodeHasABusPortOfItsOwn: each node of a Cluster is given a
// free cluster bus port (--cluster-port), so a node never depends on its
// client port + 10000 being free (another process's port, or past 65535
// when the kernel named a client port above 55535: both failed starts
// under load).
func TestAClusterNodeHasABusPortOfItsOwn(t *testing.T) {
	for _, b := range []*Build{Redis7, Valkey81} {
		t.Run(b.Name, func(t *testing.T) {
			if ok, why := b.Available(); !ok {
				if os.Getenv("CI") == "true" {
					t.Fatalf("CI=true but no server: %s", why)
				}
				t.Skip(why)
			}
			c, err := StartClusterWith(3, Config{Build: b})
			require.NoError(t, err)
			defer c.Stop()
			for _, n := range c.Nodes {
				bus := clusterPort(t, n)
				assert.NotZero(t, bus, "node %s runs on the default bus port", n.Addr)
				assert.NotEqual(t, n.Port+10000, bus, "node %s", n.Addr)
			}
		})
	}
}

// clusterPort reads the node's cluster-port setting (CONFIG GET answers a
// two-element array: the name, then the value).
func clusterPort(t *testing.T, s *Server) int {
	t.Helper()
	c, err := dial(s.Addr, s.TLS)
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("CONFIG GET cluster-port\r\n"))
	require.NoError(t, err)
	r := bufio.NewReader(c)
	var lines []string // *2, $12, cluster-port, $N, the value
	for len(lines) < 5 {
		line, err := r.ReadString('\n')
		require.NoError(t, err, "after %q", lines)
		lines = append(lines, strings.TrimSpace(line))
	}
	port, err := strconv.Atoi(lines[4])
	require.NoError(t, err, "%q", lines)
	return port
}

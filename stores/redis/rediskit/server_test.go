package rediskit

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/internal/bound"
)

// TestAClusterNodeHasABusPortOfItsOwn: each node of a Cluster is given a
// free cluster bus port (--cluster-port), so a node never depends on its
// client port + 10000 being free (another process's port, or past 65535
// when the kernel named a client port above 55535: both failed starts
// under load).
func TestAClusterNodeHasABusPortOfItsOwn(t *testing.T) {
	for _, b := range []*Build{Redis7, Valkey81} {
		t.Run(b.Name, func(t *testing.T) {
			storekit.NeedInstalled(t, b.Available)
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

// TestACommandGivesUpOnASilentServer: a command to a server that accepts
// the connection and never answers fails with a timeout once commandWait
// has passed, so a readiness probe goes on to its next try instead of
// waiting for good. (Tried: without the connection's deadline the command
// waits until the listener closes it, and fails the bound.)
func TestACommandGivesUpOnASilentServer(t *testing.T) {
	defer func(d time.Duration) { commandWait = d }(commandWait)
	commandWait = 100 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	accepted := make(chan net.Conn, 1)
	go func() {
		defer close(accepted)
		if c, err := ln.Accept(); err == nil {
			accepted <- c // held open, never answered
		}
	}()
	defer func() {
		ln.Close()
		if c, ok := <-accepted; ok {
			c.Close()
		}
	}()
	err = bound.Value(t, 10*time.Second, "a command to a silent server", func() error {
		_, err := Command(ln.Addr().String(), "PING")
		return err
	})
	var ne net.Error
	require.ErrorAs(t, err, &ne, "the command fails")
	assert.True(t, ne.Timeout(), "on its deadline: %v", err)

	// And it closed its connection: a probe tries again and again, and
	// each try would otherwise leave a descriptor (and the server a
	// client) behind.
	srv, ok := <-accepted
	require.True(t, ok, "the server accepted the command's connection")
	defer srv.Close()
	sent := bound.Value(t, 10*time.Second, "the server reading the command's connection to its end", func() string {
		b, err := io.ReadAll(srv)
		assert.NoError(t, err, "the connection ends in EOF")
		return string(b)
	})
	assert.Equal(t, "PING\r\n", sent)
}

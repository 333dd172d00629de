// Package redistest starts real redis-server processes on loopback for
// tests (one server, or a three-node Cluster), and wires the Redis driver
// into the conformance suite: a factory over a running deployment, the
// scenarios it can stage, and the stager of generated/redis's cases.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Available reports whether redis-server (and redis-cli, for Cluster) are
// installed, and if not, what to do.
func Available() (bool, string) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		return false, "redis-server is not installed (apt-get install redis-server)"
	}
	return true, ""
}

// Server is one redis-server on 127.0.0.1, without persistence.
type Server struct {
	Addr string
	cmd  *exec.Cmd
	dir  string
	once sync.Once
	done chan struct{}
}

// freePort asks the kernel for a free loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts a redis-server with extra arguments and waits until it
// answers PING (at most 10 s).
func Start(extra ...string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "kvblob-redis-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--daemonize", "no", "--logfile", filepath.Join(dir, "redis.log")}, extra...)
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("redistest: starting redis-server: %w", err)
	}
	s := &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd, dir: dir, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()
	if err := waitFor(s.Addr, "PING", "+PONG", 10*time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		s.Stop()
		return nil, fmt.Errorf("%w\nredis.log:\n%s", err, log)
	}
	return s, nil
}

// Kill kills the server at once, as a crash would.
func (s *Server) Kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

// Stop kills the server and removes its folder.
func (s *Server) Stop() {
	s.once.Do(func() {
		s.Kill()
		os.RemoveAll(s.dir)
	})
}

// Command sends one inline command and returns the first reply line.
func Command(addr, command string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := fmt.Fprintf(c, "%s\r\n", command); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// waitFor sends command until the reply starts with want or d passes. It
// paces its retries while a process starts; it synchronises nothing else.
func waitFor(addr, command, want string, d time.Duration) error {
	deadline := time.Now().Add(d)
	var last string
	var lastErr error
	for time.Now().Before(deadline) {
		last, lastErr = Command(addr, command)
		if lastErr == nil && strings.HasPrefix(last, want) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("redistest: %s at %s did not answer %q within %v (last %q, %v)", command, addr, want, d, last, lastErr)
}

// Cluster is a Redis Cluster of masters on loopback, without replicas.
type Cluster struct {
	Nodes []*Server
}

// Addrs returns the nodes' addresses.
func (c *Cluster) Addrs() []string {
	var a []string
	for _, n := range c.Nodes {
		a = append(a, n.Addr)
	}
	return a
}

// StartCluster starts n cluster-enabled servers, joins them with
// redis-cli --cluster create, and waits until every node reports
// cluster_state:ok.
func StartCluster(n int) (*Cluster, error) {
	if _, err := exec.LookPath("redis-cli"); err != nil {
		return nil, errors.New("redistest: redis-cli is not installed (it comes with redis-tools)")
	}
	c := &Cluster{}
	for i := 0; i < n; i++ {
		s, err := Start("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000")
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command("redis-cli", args...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, s := range c.Nodes {
		if err := waitForClusterOK(s.Addr, 20*time.Second); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

func waitForClusterOK(addr string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			fmt.Fprintf(c, "CLUSTER INFO\r\n")
			buf := make([]byte, 4096)
			n, _ := c.Read(buf)
			c.Close()
			if strings.Contains(string(buf[:n]), "cluster_state:ok") {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("redistest: the cluster node at %s did not reach cluster_state:ok within %v", addr, d)
}

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes {
		s.Stop()
	}
}

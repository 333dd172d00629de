// Package rediskit starts real servers on loopback for tests (one server,
// or a three-node Cluster) of each build the Redis driver serves (Builds:
// redis-server 7, Valkey 8.1), and wires the driver into the conformance
// suite: a factory over a running deployment, the scenarios it can stage,
// the stager of each build's generated cases, and the SDK checks that ask
// a live server for what its spec relies on.
package rediskit

import (
	"bufio"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/driver"
)

// Available reports whether redis-server (Redis7) is installed, and if
// not, what to do.
func Available() (bool, string) { return Redis7.Available() }

// Server is one redis-server on 127.0.0.1, without persistence, run by
// storekit: Freeze, Thaw, Kill, Restart, Stop and Listening are its.
type Server struct {
	*storekit.Server
	// TLS is the certificates the server serves with (nil: plain TCP);
	// Addr is then the TLS port, and the server has no plain port.
	TLS *storekit.Certs
}

// Config is what StartWith starts.
type Config struct {
	// Build is the server build to run (nil: Redis7).
	Build *Build
	// TLS, when set, serves TLS only (--port 0, --tls-port), with these
	// certificates, and asks every client for a certificate the CA signed;
	// a Cluster's nodes talk TLS to each other too.
	TLS *storekit.Certs
	// Users are ACL users beside the default one (which stays open, for the
	// tests' set-up): each a name and its rules, as TenantUser returns.
	Users [][]string
	// Extra are more redis-server arguments.
	Extra []string

	// clusterBus gives the server a cluster bus port of its own
	// (--cluster-port, a free port), instead of the default client port +
	// 10000, which may be taken, or past 65535.
	clusterBus bool
}

// TenantUser is an ACL user limited to the keys under prefix (the
// pattern of its stem, prefix/v1/*, which matches no other prefix's keys:
// driver.Stem.Pattern) and to the commands the driver sends, standalone
// or on a Cluster (TenantRules); its password is given to the server as
// its SHA-256, so no process listing shows it. It panics on a prefix
// driver.KeyStem refuses: a test's own mistake.
func TenantUser(name, password, prefix string, cluster bool) []string {
	stem, err := driver.KeyStem(prefix)
	if err != nil {
		panic(err)
	}
	sum := sha256.Sum256([]byte(password))
	return append([]string{name, "on", "#" + hex.EncodeToString(sum[:]), "~" + stem.Pattern(), "resetchannels"}, TenantRules(cluster)...)
}

// TenantCommands are the ACL command rules every tenant needs: the
// driver's data commands, GETRANGE (its only read, bounded by the row's
// length), SET, DEL, and the transactions that replace a marker with an
// object and delete a marker (WATCH, MULTI, EXEC, DISCARD, UNWATCH). What
// connecting sends, HELLO and AUTH, every user may run. No +eval: a tenant
// who may run a script can run one forever, and every other tenant's rows
// then FAULT with BUSY. No +info: INFO shows every tenant's key count
// (Open names the server from HELLO). docs/security.md quotes these
// lists, one ACL SETUSER line each (TestTheDocumentedTenantACL holds the
// two alike). (go-redis's CLIENT SETINFO is refused, harmlessly.)
var TenantCommands = []string{"-@all", "+getrange", "+set", "+del", "+watch", "+multi", "+exec", "+discard", "+unwatch"}

// ClusterCommands are what a tenant adds on a Cluster: the Cluster
// client's topology reads.
var ClusterCommands = []string{"+cluster|slots", "+cluster|shards", "+cluster|nodes", "+cluster|info", "+readonly"}

// ClusterScriptCommands are what a tenant adds on a Cluster for the
// compare-and-set scripts (EVAL, and the GET they call; the ACL holds a
// script's commands too): a transaction there needs every key in one
// slot. Redis 7 stores with the script; Valkey 8.1 stores with SET IFEQ and
// only deletes a failed store's marker with a script (without +eval that
// marker expires after Options.PendingTTL instead).
var ClusterScriptCommands = []string{"+eval", "+get"}

// TenantRules are the command rules of a tenant, standalone or on a
// Cluster.
func TenantRules(cluster bool) []string {
	rules := slices.Clone(TenantCommands)
	if cluster {
		rules = append(append(rules, ClusterCommands...), ClusterScriptCommands...)
	}
	return rules
}

// Start starts a redis-server with extra arguments and waits until it
// answers PING (at most 10 s).
func Start(extra ...string) (*Server, error) { return StartWith(Config{Extra: extra}) }

// StartWith starts a redis-server as cfg says, bound to 127.0.0.1 only,
// and waits until it answers PING (at most 10 s).
func StartWith(cfg Config) (*Server, error) {
	var mu sync.Mutex
	buses := map[string]int{} // dir -> bus port: a restart keeps it
	args := func(host string, port int, dir string) []string {
		// Loopback only: every port the server opens (client, TLS, cluster
		// bus) binds the addresses of --bind.
		args := []string{"--bind", host, "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no", "--logfile", ""}
		if t := cfg.TLS; t != nil {
			args = append(args, "--port", "0", "--tls-port", strconv.Itoa(port), "--tls-cert-file", t.ServerCertFile,
				"--tls-key-file", t.ServerKey, "--tls-ca-cert-file", t.CAFile, "--tls-auth-clients", "yes",
				"--tls-cluster", "yes", "--tls-replication", "yes")
		} else {
			args = append(args, "--port", strconv.Itoa(port))
		}
		if cfg.clusterBus {
			mu.Lock()
			bus, ok := buses[dir]
			if !ok {
				bus, _ = storekit.FreePort() // 0 on failure: the server's default, and a log line if it fails
				buses[dir] = bus
			}
			mu.Unlock()
			args = append(args, "--cluster-port", strconv.Itoa(bus))
		}
		for _, u := range cfg.Users {
			args = append(append(args, "--user"), u...)
		}
		return append(args, cfg.Extra...)
	}
	ready := func(addr string) error {
		reply, err := command1(addr, cfg.TLS, "PING")
		if err == nil && !strings.HasPrefix(reply, "+PONG") {
			err = fmt.Errorf("PING answered %q", reply)
		}
		return err
	}
	sp, err := cfg.build().server(args, ready)
	if err != nil {
		return nil, err
	}
	p, err := storekit.Start(sp)
	if err != nil {
		return nil, fmt.Errorf("rediskit: %w", err)
	}
	return &Server{Server: p, TLS: cfg.TLS}, nil
}

func (c Config) build() *Build {
	if c.Build == nil {
		return Redis7
	}
	return c.Build
}

// Command sends one inline command to a plain-TCP server and returns the
// first reply line.
func Command(addr, command string) (string, error) { return command1(addr, nil, command) }

// Command sends one inline command (over TLS, with the client certificate,
// when the server serves TLS) and returns the first reply line.
func (s *Server) Command(command string) (string, error) { return command1(s.Addr, s.TLS, command) }

// dial connects to addr, over TLS with the client certificate when certs
// is set.
func dial(addr string, certs *storekit.Certs) (net.Conn, error) {
	if certs == nil {
		return net.DialTimeout("tcp", addr, time.Second)
	}
	cfg, err := certs.ClientConfig()
	if err != nil {
		return nil, err
	}
	return tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", addr, cfg)
}

// commandWait bounds a command's whole exchange: a server that accepted
// the connection but never answers (stopped, or a port another process
// took) fails the command, and a readiness probe tries again, instead of
// waiting for good. Tests shorten it.
var commandWait = 5 * time.Second

func command1(addr string, certs *storekit.Certs, command string) (string, error) {
	c, err := dial(addr, certs)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(commandWait))
	if _, err := fmt.Fprintf(c, "%s\r\n", command); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
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
func StartCluster(n int) (*Cluster, error) { return StartClusterWith(n, Config{}) }

// StartClusterWith is StartCluster with every node started as cfg says.
func StartClusterWith(n int, cfg Config) (*Cluster, error) {
	cli, why := cfg.build().CLI()
	if why != "" {
		return nil, errors.New("rediskit: " + why)
	}
	c := &Cluster{}
	node := cfg
	node.clusterBus = true
	node.Extra = append([]string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"}, cfg.Extra...)
	for i := 0; i < n; i++ {
		s, err := StartWith(node)
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
	}
	var args []string
	if t := cfg.TLS; t != nil {
		args = []string{"--tls", "--cacert", t.CAFile, "--cert", t.ClientCertFile, "--key", t.ClientKey}
	}
	args = append(append(args, "--cluster", "create"), c.Addrs()...)
	args = append(args, "--cluster-replicas", "0", "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		c.Stop()
		return nil, fmt.Errorf("rediskit: %s --cluster create: %v\n%s", cli, err, out)
	}
	for _, s := range c.Nodes {
		if err := s.waitForClusterOK(20 * time.Second); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

func (s *Server) waitForClusterOK(d time.Duration) error {
	addr := s.Addr
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		c, err := dial(addr, s.TLS)
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
	return fmt.Errorf("rediskit: the cluster node at %s did not reach cluster_state:ok within %v", addr, d)
}

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, s := range c.Nodes {
		s.Stop()
	}
}

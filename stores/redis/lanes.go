package redis

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// A Redis server runs the commands of one connection in order, on one
// thread: a GET sent on a connection behind a 4 MiB publish pipeline
// waits for the server to read and run every SET of it first. So, unless
// Options.FetchesShareConns is set, fetches and publishes take separate
// lanes:
//
//   - a get goes out on a client of its own (its own connections), so no
//     publish pipeline is ever queued ahead of it on one connection;
//   - with Options.PublishesYield, a publish's connection writes in
//     slices of yieldBytes, and before
//     each slice waits while any get of this driver is in flight, so the
//     server has little of this driver's publish bytes to read while it
//     serves a get. A writer waits for the gets in flight when it asks,
//     and is woken when they are all done: gets back to back let each
//     publish connection in for one slice between them, and a slice waits
//     at most maxYield, so publishes slow down only while gets are in
//     flight, and never stop.
//
// The lanes are this driver's alone: a publish of another process is not
// held back by this driver's gets. Yielding is off by default: measured on
// two cores (docs/operating.md, "Scale"), a fetch's tail next to
// publishes is the same when the publishes go to another server
// altogether, so what it waits for is CPU time (a thread's wake-up on a
// busy machine), not the server's queue; yielding shortens it only by
// taking that time from the publishes.

// yieldBytes is the slice a publish connection writes between looks at
// the gets in flight: small enough that a get waits for little of it
// (two streams' slices are a quarter of a 1 MiB reply), large enough that
// a 4 MiB pipeline is a few dozen writes.
const yieldBytes = 128 << 10

// maxYield bounds a slice's wait: gets back to back would otherwise hold
// the publishes to a slice between each two of them.
var maxYield = 250 * time.Microsecond

// fetchGate counts the gets in flight, for the publish connections to
// yield to.
type fetchGate struct {
	mu       sync.Mutex
	inFlight int
	idle     chan struct{} // closed when inFlight fell to 0
	// waiting, set by tests, is called when a writer is about to wait.
	waiting func()
}

// enter counts a get in flight; leave ends it.
func (g *fetchGate) enter() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight == 0 {
		g.idle = make(chan struct{})
	}
	g.inFlight++
}

func (g *fetchGate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inFlight--; g.inFlight == 0 {
		close(g.idle)
	}
}

// wait returns once no get is in flight (at once when none is), or after
// maxYield.
func (g *fetchGate) wait() {
	g.mu.Lock()
	idle, n, waiting := g.idle, g.inFlight, g.waiting
	g.mu.Unlock()
	if n > 0 {
		if waiting != nil {
			waiting()
		}
		t := time.NewTimer(maxYield)
		defer t.Stop()
		select {
		case <-idle:
		case <-t.C:
		}
	}
}

// yieldingConn is a publish connection: it writes in slices of
// yieldBytes, each after the gets in flight are done. A get is bounded by
// the client's read timeout, so a wait is too; the write deadline go-redis
// set still bounds the write.
type yieldingConn struct {
	net.Conn
	gate *fetchGate
}

func (c *yieldingConn) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		c.gate.wait()
		k := min(len(p), yieldBytes)
		m, err := c.Conn.Write(p[:k])
		n += m
		if err != nil {
			return n, err
		}
		p = p[k:]
	}
	return n, nil
}

// yielding is base, its connections yielding to gate's gets when gate is
// set.
func yielding(base func(context.Context, string, string) (net.Conn, error), gate *fetchGate) func(context.Context, string, string) (net.Conn, error) {
	if gate == nil {
		return base
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := base(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &yieldingConn{Conn: c, gate: gate}, nil
	}
}

// newClient is a client of the deployment opt names, dialling with dial.
// go-redis dials with Dialer when it is set, and reads TLSConfig (nil for
// a plain deployment) only to know the connection is TLS.
func newClient(opt Options, tlsConfig *tls.Config, dial func(context.Context, string, string) (net.Conn, error)) goredis.UniversalClient {
	if opt.Cluster {
		return goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: opt.Addrs, Username: opt.Username, Password: opt.Password,
			TLSConfig: tlsConfig, Dialer: dial, DialTimeout: opt.DialTimeout, DialerRetries: 1,
			ReadTimeout: opt.ReadTimeout, WriteTimeout: opt.WriteTimeout, MaxRetries: -1, MaxRedirects: 8})
	}
	// No retries: a retried compare-and-set whose first reply was lost
	// would answer LOST for an object it stored.
	return goredis.NewClient(&goredis.Options{Addr: opt.Addrs[0], Username: opt.Username, Password: opt.Password,
		TLSConfig: tlsConfig, Dialer: dial, DialTimeout: opt.DialTimeout, DialerRetries: 1,
		ReadTimeout: opt.ReadTimeout, WriteTimeout: opt.WriteTimeout, MaxRetries: -1})
}

// unique is c, and g when it is another client.
func unique(c, g goredis.UniversalClient) []goredis.UniversalClient {
	if g == c {
		return []goredis.UniversalClient{c}
	}
	return []goredis.UniversalClient{c, g}
}

// Command demo is kvblob's real use in two processes: a prefill process
// publishes one request's KV rows from its host slots into Redis, and a
// decode process fetches them into slots of its own, as two serving
// runtimes on two machines would. Each process embeds runtime/backend over
// an instrumented Redis driver, serves its metrics at /metrics on
// 127.0.0.1 while it runs (-metrics-addr), and prints what moved, how fast,
// and the series a scrape of its /metrics shows.
//
//	go run ./cmd/demo                 # starts redis-server on loopback, stops it after
//	go run ./cmd/demo -redis HOST:PORT # a Redis the user runs (add -cluster for Redis Cluster)
//
// By default the request is 64 rows of 256 KiB (-rows, -row-bytes), each
// process runs 2 backend workers (-workers), and a driver call carries at
// most 16 rows (-batch-rows); -timeout (1m0s) bounds the whole run.
//
// The demo writes only keys under a prefix of its own
// (kvblob-demo-<random>), and deletes them before it exits, whether the
// run succeeded or not. It re-executes itself with -role publish and
// -role fetch for the two processes.
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/runtime/metrics"
	"github.com/kvblob/kvblob/stores/redis"
)

// childEnv marks a process the demo started for one role.
const childEnv = "KVBLOB_DEMO_CHILD"

func main() { os.Exit(runMain()) }

// runMain is the process's body, as main and the test binary's children
// run it. Ctrl-C or a closed pipe still ends in the clean-up: keys
// deleted, the server stopped.
func runMain() int {
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdout, os.Stderr)
}

type config struct {
	role     string
	redis    string
	cluster  bool
	prefix   string
	rows     int
	rowBytes int64
	workers  int
	batch    int
	timeout  time.Duration
	// metricsAddr is where each process serves /metrics: loopback only.
	metricsAddr string
	// hold keeps the fetching process serving /metrics after the rows
	// moved, until the demo is stopped (Ctrl-C, SIGTERM).
	hold bool
	// stopped ends when the demo is stopped: a signal, not -timeout.
	stopped context.Context
	// serving, when set (a test's), is called with the /metrics URL once
	// the rows moved, while the process still serves it.
	serving func(metricsURL string)
}

func parse(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.redis, "redis", "", "host:port of a Redis to use (default: start redis-server on loopback)")
	fs.BoolVar(&c.cluster, "cluster", false, "the -redis address is a Redis Cluster seed node")
	fs.IntVar(&c.rows, "rows", 64, "rows (KV blocks) of the request")
	fs.Int64Var(&c.rowBytes, "row-bytes", 256<<10, "bytes of one row")
	fs.IntVar(&c.workers, "workers", 2, "backend workers in each process")
	fs.IntVar(&c.batch, "batch-rows", 16, "rows of one driver call (0: all in one)")
	fs.DurationVar(&c.timeout, "timeout", time.Minute, "bound on the whole run")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "127.0.0.1:0", "loopback host:port each process serves /metrics on while it runs (port 0: a free one; it prints the address)")
	fs.BoolVar(&c.hold, "serve", false, "after the rows moved, keep serving the fetching process's /metrics until stopped (Ctrl-C), for a scraper or a browser; -timeout bounds the rest")
	fs.StringVar(&c.role, "role", "", "internal: publish or fetch (the demo starts these itself)")
	fs.StringVar(&c.prefix, "prefix", "", "internal: the key prefix of this run")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("demo: unexpected arguments %q", fs.Args())
	case c.rows < 1 || c.rows > 1<<16:
		return c, fmt.Errorf("demo: -rows is %d; want 1 to 65536", c.rows)
	case c.rowBytes < 1 || c.rowBytes > 64<<20:
		return c, fmt.Errorf("demo: -row-bytes is %d; want 1 to 64 MiB", c.rowBytes)
	case c.workers < 1:
		return c, fmt.Errorf("demo: -workers is %d; want 1 or more", c.workers)
	case c.batch < 0:
		return c, fmt.Errorf("demo: -batch-rows is %d; want 0 (no bound) or more", c.batch)
	case !loopback(c.metricsAddr):
		return c, fmt.Errorf("demo: -metrics-addr is %q; want a loopback host:port (127.0.0.1:PORT or [::1]:PORT): the demo serves nothing beyond this machine", c.metricsAddr)
	case c.role != "" && (c.redis == "" || c.prefix == ""):
		return c, errors.New("demo: -role is the demo's own; run the demo without it")
	}
	return c, nil
}

// run is main's body; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	c.stopped = ctx
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	switch c.role {
	case "":
		err = orchestrate(ctx, c, stdout, stderr)
	case "publish", "fetch":
		err = serve(ctx, c, stdout, stderr)
	default:
		err = fmt.Errorf("demo: unknown -role %q", c.role)
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// redisSpec runs redis-server on loopback without persistence.
var redisSpec = storekit.Spec{
	Binary:  "redis-server",
	Install: "make demo installs it; or apt-get install redis-server",
	Args: func(host string, port int, dir string) []string {
		return []string{"--bind", host, "--port", strconv.Itoa(port), "--save", "", "--appendonly", "no",
			"--dir", dir, "--daemonize", "no"}
	},
	Ready: ping,
}

func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", strings.TrimSpace(line))
	}
	return nil
}

// orchestrate starts Redis unless given one, runs the publishing and the
// fetching process one after the other, and cleans up.
func orchestrate(ctx context.Context, c config, stdout, stderr io.Writer) (err error) {
	if c.redis == "" {
		srv, err := storekit.Start(redisSpec)
		if err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		defer func() {
			srv.Stop()
			fmt.Fprintf(stdout, "demo: stopped the redis-server it started at %s\n", srv.Addr)
		}()
		if err := srv.LoopbackOnly(); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		c.redis = srv.Addr
		fmt.Fprintf(stdout, "demo: started redis-server at %s (pid %d, loopback only)\n", srv.Addr, srv.PID())
	} else {
		fmt.Fprintf(stdout, "demo: using the Redis at %s\n", c.redis)
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	c.prefix = "kvblob-demo-" + hex.EncodeToString(id[:])
	fmt.Fprintf(stdout, "demo: request %q: %d rows of %s under prefix %s\n", requestID, c.rows, size(c.rowBytes), c.prefix)

	defer func() {
		n, cerr := cleanup(context.WithoutCancel(ctx), c)
		if cerr != nil {
			err = errors.Join(err, cerr)
			return
		}
		fmt.Fprintf(stdout, "demo: deleted %d keys under %s/\n", n, c.prefix)
	}()
	for _, role := range []string{"publish", "fetch"} {
		if err := child(ctx, c, role, stdout, stderr); err != nil {
			return err
		}
	}
	return nil
}

// child runs the demo itself in role, its output passed through.
func child(ctx context.Context, c config, role string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"-role", role, "-redis", c.redis, "-prefix", c.prefix, "-rows", strconv.Itoa(c.rows),
		"-row-bytes", strconv.FormatInt(c.rowBytes, 10), "-workers", strconv.Itoa(c.workers), "-batch-rows", strconv.Itoa(c.batch),
		"-timeout", c.timeout.String(), "-metrics-addr", c.metricsAddr}
	if c.cluster {
		args = append(args, "-cluster")
	}
	if c.hold && role == "fetch" {
		// It serves until stopped: -timeout no longer bounds it.
		args, ctx = append(args, "-serve"), c.stopped
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	// Stopped, the process is asked to finish (shut its backend down,
	// release its memory) before it is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Stdout, cmd.Stderr = stdout, stderr
	start := time.Now()
	if err := cmd.Run(); err != nil && !(c.hold && cmd.ProcessState != nil && cmd.ProcessState.Success()) {
		// (A process serving until stopped that then exits 0 finished
		// well: Run answers the ctx's error all the same.)
		return fmt.Errorf("demo: the %s process failed: %w", role, err)
	}
	fmt.Fprintf(stdout, "demo: the %s process (start to exit) took %v\n", role, time.Since(start).Round(time.Millisecond))
	return nil
}

// requestID names the request whose rows move; a row's name is the
// request's and the block's number.
const requestID = "req-42"

func rowName(i int) []byte { return fmt.Appendf(nil, "%s/block-%05d", requestID, i) }

// fill writes row i's bytes: a pattern the fetching process can recompute.
func fill(b []byte, prefix string, i int) {
	h := fnv.New64a()
	h.Write([]byte(prefix))
	x := h.Sum64() ^ uint64(i+1)*0x9E3779B97F4A7C15
	var w [8]byte
	for off := 0; off < len(b); off += 8 {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		binary.LittleEndian.PutUint64(w[:], x)
		copy(b[off:], w[:])
	}
}

// cleanup deletes every key the run may have written.
func cleanup(ctx context.Context, c config) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d, err := redis.Open(ctx, redis.Options{Addrs: []string{c.redis}, Cluster: c.cluster})
	if err != nil {
		return 0, fmt.Errorf("demo: cleaning up: %w", err)
	}
	defer func() {
		d.Drain(ctx)
		_ = d.Close()
	}()
	stem, err := driver.KeyStem(c.prefix)
	if err != nil {
		return 0, err
	}
	deleted := 0
	for i := 0; i < c.rows; i++ { // one by one: in a Cluster the keys live on different nodes
		key, err := stem.Key(rowName(i))
		if err != nil {
			return deleted, err
		}
		n, err := d.Client().Del(ctx, key).Result()
		if err != nil {
			return deleted, fmt.Errorf("demo: deleting %s: %w", key, err)
		}
		deleted += int(n)
	}
	return deleted, nil
}

// serve is one serving process: it lends host slots to a backend over an
// instrumented Redis driver, and publishes or fetches the request's rows.
func serve(ctx context.Context, c config, stdout, stderr io.Writer) error {
	who := fmt.Sprintf("%s[%d]", c.role, os.Getpid())
	log := zerolog.New(zerolog.ConsoleWriter{Out: stderr, NoColor: true}).Level(zerolog.WarnLevel).
		With().Timestamp().Str("process", who).Logger()

	rdb, err := redis.Open(ctx, redis.Options{Addrs: []string{c.redis}, Cluster: c.cluster})
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	drivers := metrics.NewDrivers(metrics.Options{Logger: log})
	d := drivers.Instrument(rdb, "redis")

	lender, err := hostmem.NewLender(c.role, driver.Layout{SlotBytes: c.rowBytes, Slots: c.rows})
	if err != nil {
		return err
	}
	hold, err := lender.Hold()
	if err != nil {
		return err
	}
	bind, err := backend.Bind(ctx, hold.Regions(), d, hold)
	if err != nil {
		return err // the hold stays out: the lender's memory is kept
	}
	be, err := backend.New(bind, backend.Config{Workers: c.workers, RowsPerBatch: c.batch, Prefix: c.prefix, Logger: log.With().Str("store", "redis").Logger()})
	if err != nil {
		return err
	}
	reg.MustRegister(drivers, metrics.NewBackendCollector("redis", be))
	metricsURL, stopServing, err := serveMetrics(c.metricsAddr, reg)
	if err != nil {
		return err
	}
	defer stopServing()
	fmt.Fprintf(stdout, "%s: serving /metrics at %s while it runs\n", who, metricsURL)

	slots := hold.Regions()[0]
	view := make(backend.View, c.rows)
	for i := range view {
		view[i] = backend.ViewRow{Name: rowName(i), Spans: []driver.Span{slots.Slot(i)}}
		if c.role == "publish" {
			fill(slots.Slot(i).Bytes(), c.prefix, i)
		}
	}

	start := time.Now()
	var a *backend.Attempt
	if c.role == "publish" {
		a, err = be.Publish(ctx, view)
	} else {
		a, err = be.Fetch(ctx, view)
	}
	if err != nil {
		return err
	}
	o, err := a.Wait(ctx)
	if err != nil {
		return err
	}
	if err := a.WaitQuiesced(ctx); err != nil { // the slots are ours again only once quiesced
		return fmt.Errorf("%s: the slots are still in use (%w); keeping them", who, err)
	}
	took := time.Since(start)

	counts := map[driver.Status]int{}
	for _, r := range o.Results {
		counts[r.Status]++
	}
	total := int64(c.rows) * c.rowBytes
	fmt.Fprintf(stdout, "%s: %s %d rows x %s = %s in %v (%s/s): %s\n", who, map[string]string{"publish": "published", "fetch": "fetched"}[c.role],
		c.rows, size(c.rowBytes), size(total), took.Round(time.Microsecond), size(int64(float64(total)/took.Seconds())), summary(counts))
	var failed error
	if o.InOrder != c.rows {
		failed = fmt.Errorf("%s: only the first %d of %d rows were delivered: %w", who, o.InOrder, c.rows, o.Err)
	}
	if c.role == "fetch" && failed == nil {
		match := 0
		want := make([]byte, c.rowBytes)
		for i := range view {
			fill(want, c.prefix, i)
			if bytes.Equal(slots.Slot(i).Bytes(), want) {
				match++
			}
		}
		fmt.Fprintf(stdout, "%s: %d of %d rows match what the publishing process wrote\n", who, match, c.rows)
		if match != c.rows {
			failed = fmt.Errorf("%s: %d rows differ from what was published", who, c.rows-match)
		}
	}
	if c.serving != nil {
		c.serving(metricsURL)
	}
	if err := printMetrics(ctx, stdout, who, metricsURL); err != nil {
		return err
	}
	if c.hold {
		fmt.Fprintf(stdout, "%s: serving /metrics at %s until stopped (Ctrl-C)\n", who, metricsURL)
		<-c.stopped.Done()
		// Stopped: the shutdown below still gets its own bound.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
	}

	// Shutdown never closes the driver. An error means a store may still
	// touch the slots: keep the lender's memory (never Close it).
	if err := be.Shutdown(ctx); err != nil {
		return errors.Join(failed, fmt.Errorf("%s: keeping the lender's memory: %w", who, err))
	}
	if err := errors.Join(rdb.Close(), lender.Close()); err != nil {
		return errors.Join(failed, err)
	}
	return failed
}

func summary(counts map[driver.Status]int) string {
	var parts []string
	for s := driver.Ready; s <= driver.Cancelled; s++ {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

// loopback reports whether addr is a host:port on the loopback interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveMetrics serves reg at /metrics on addr (loopback), and returns its
// URL and a function that stops serving and waits for the server to end.
func serveMetrics(addr string, reg *prometheus.Registry) (string, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("demo: serving /metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln) // ErrServerClosed once stopped
	}()
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
		<-done
	}
	return "http://" + ln.Addr().String() + "/metrics", stop, nil
}

// printMetrics scrapes url, as Prometheus would, and prints the samples
// that are not zero (no histogram buckets: their _sum and _count say
// enough here).
func printMetrics(ctx context.Context, w io.Writer, who, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("demo: scraping %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("demo: scraping %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("demo: scraping %s: %s: %s", url, resp.Status, body)
	}
	for _, line := range strings.Split(string(body), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if line == "" || line[0] == '#' || i < 0 || strings.Contains(line[:i], "_bucket{") {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil && v != 0 {
			fmt.Fprintf(w, "%s:   %s\n", who, line)
		}
	}
	return nil
}

// size prints n bytes in binary units.
func size(n int64) string {
	for _, u := range []struct {
		unit  string
		bytes int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.bytes {
			return strings.TrimSuffix(strconv.FormatFloat(float64(n)/float64(u.bytes), 'f', 1, 64), ".0") + " " + u.unit
		}
	}
	return strconv.FormatInt(n, 10) + " B"
}

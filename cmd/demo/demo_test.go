package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/conformance/storekit"
)

// TestMain makes the test binary the demo's child processes too: the demo
// re-executes os.Executable(), which here is this binary.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(runMain())
	}
	goleak.VerifyTestMain(m)
}

func needRedis(t *testing.T) {
	t.Helper()
	storekit.NeedInstalled(t, func() (bool, string) { return storekit.Available(redisSpec) })
}

func demo(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := run(ctx, append([]string{"-rows", "8", "-row-bytes", "65536", "-batch-rows", "3"}, args...), &stdout, &stderr)
	t.Logf("stdout:\n%sstderr:\n%s", stdout.String(), stderr.String())
	require.Equal(t, 0, code, "the demo failed")
	return stdout.String()
}

// TestDemoStartsRedisMovesRowsAndCleansUp runs the demo as make demo does:
// it starts redis-server on loopback, moves the rows between two
// processes, deletes its keys and stops the server.
func TestDemoStartsRedisMovesRowsAndCleansUp(t *testing.T) {
	needRedis(t)
	out := demo(t)
	addr := regexp.MustCompile(`started redis-server at (127\.0\.0\.1:\d+) \(pid \d+, loopback only\)`).FindStringSubmatch(out)
	require.NotNil(t, addr, "the demo says where it started redis-server")
	assert.Regexp(t, `publish\[\d+\]: published 8 rows x 64 KiB = 512 KiB in .*: 8 READY`, out)
	assert.Regexp(t, `fetch\[\d+\]: fetched 8 rows x 64 KiB = 512 KiB in .*: 8 READY`, out)
	assert.Regexp(t, `fetch\[\d+\]: 8 of 8 rows match what the publishing process wrote`, out)
	assert.Regexp(t, `publish\[\d+\]: serving /metrics at http://127\.0\.0\.1:\d+/metrics while it runs`, out)
	assert.Regexp(t, `fetch\[\d+\]:   kvblob_driver_bytes_total\{op="get",store="redis"\} 524288`, out, "the printed series come from a scrape of the process's /metrics")
	assert.Regexp(t, `fetch\[\d+\]:   kvblob_driver_rows_total\{op="get",result="ready",store="redis"\} 8`, out)
	assert.Regexp(t, `publish\[\d+\]:   kvblob_backend_batches_settled_total\{store="redis"\} 3`, out)
	assert.Contains(t, out, "demo: deleted 8 keys under kvblob-demo-")
	assert.Contains(t, out, "demo: stopped the redis-server it started at "+addr[1])
	conn, err := net.DialTimeout("tcp", addr[1], time.Second)
	if err == nil {
		conn.Close()
	}
	assert.Error(t, err, "the redis-server the demo started still answers at %s", addr[1])
}

// TestDemoUsesAGivenRedisAndLeavesItClean runs the demo against a Redis it
// did not start: it writes only under its own prefix, deletes every key it
// wrote, and leaves the server running.
func TestDemoUsesAGivenRedisAndLeavesItClean(t *testing.T) {
	needRedis(t)
	srv, err := storekit.Start(redisSpec)
	require.NoError(t, err)
	defer srv.Stop()
	require.NoError(t, srv.LoopbackOnly())
	out := demo(t, "-redis", srv.Addr)
	assert.Contains(t, out, "demo: using the Redis at "+srv.Addr)
	assert.Regexp(t, `fetch\[\d+\]: 8 of 8 rows match`, out)
	assert.NotContains(t, out, "stopped the redis-server")
	require.NoError(t, ping(srv.Addr), "the demo left the given server running")
	assert.Equal(t, "0", command(t, srv.Addr, "DBSIZE"), "the demo deleted every key it wrote")
}

// TestDemoRefusesItsOwnFlagsFromUsers keeps -role internal.
func TestDemoRefusesItsOwnFlagsFromUsers(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"-role", "fetch"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-role is the demo's own")
}

// command sends one inline command and returns the reply's value.
func command(t *testing.T, addr, cmd string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(5*time.Second)))
	_, err = conn.Write([]byte(cmd + "\r\n"))
	require.NoError(t, err)
	buf := make([]byte, 64)
	n, err := conn.Read(buf)
	require.NoError(t, err)
	return strings.TrimLeft(strings.TrimSpace(string(buf[:n])), ":+")
}

// TestDemoServesMetricsThatPassTheLint runs each of the demo's two
// processes as make demo does (in this test's process, to reach it while
// it runs), scrapes the /metrics it serves on loopback while it serves
// it, and lints the scrape as promtool check metrics does (promlint, the
// same rules): every problem fails the test.
func TestDemoServesMetricsThatPassTheLint(t *testing.T) {
	needRedis(t)
	srv, err := storekit.Start(redisSpec)
	require.NoError(t, err)
	defer srv.Stop()
	require.NoError(t, srv.LoopbackOnly())
	var stderr bytes.Buffer
	c, err := parse([]string{"-redis", srv.Addr, "-rows", "4", "-row-bytes", "4096"}, &stderr)
	require.NoError(t, err)
	c.prefix = "kvblob-demo-lint"
	defer func() {
		_, err := cleanup(context.Background(), c)
		assert.NoError(t, err)
	}()
	for _, role := range []string{"publish", "fetch"} {
		c.role = role
		scraped := false
		c.serving = func(url string) {
			assert.Regexp(t, `^http://127\.0\.0\.1:\d+/metrics$`, url, "served on loopback")
			resp, err := http.Get(url)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			problems, err := promlint.New(bytes.NewReader(body)).Lint()
			require.NoError(t, err, "the scrape parses as the text format")
			assert.Empty(t, problems, "the lint's problems with %s's /metrics", role)
			for _, family := range []string{"kvblob_driver_rows_total", "kvblob_driver_bytes_total", "kvblob_backend_attempts_total", "kvblob_driver_call_seconds"} {
				if !strings.Contains(string(body), "# TYPE "+family+" ") {
					t.Errorf("%s's /metrics has no family %s", role, family)
				}
			}
			scraped = true
		}
		var stdout bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := serve(ctx, c, &stdout, &stderr)
		cancel()
		t.Logf("%s:\n%s%s", role, stdout.String(), stderr.String())
		require.NoError(t, err)
		require.True(t, scraped, "the %s process served /metrics while it ran", role)
	}
}

// TestDemoServesMetricsOnLoopbackOnly refuses a -metrics-addr beyond this
// machine.
func TestDemoServesMetricsOnLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:9100", ":9100", "example.com:9100"} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), []string{"-metrics-addr", addr}, &stdout, &stderr), addr)
		assert.Contains(t, stderr.String(), "want a loopback host:port")
	}
}

// TestServeKeepsMetricsUpUntilStopped: with -serve, the fetching process
// keeps serving /metrics after the rows moved, however long past -timeout,
// until the demo is stopped; then it shuts down and the demo cleans up and
// exits 0.
func TestServeKeepsMetricsUpUntilStopped(t *testing.T) {
	needRedis(t)
	const timeout = 5 * time.Second
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	start := time.Now()
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"-rows", "4", "-row-bytes", "4096", "-timeout", timeout.String(), "-serve"}, pw, &stderr)
		pw.Close()
	}()
	serving := regexp.MustCompile(`fetch\[\d+\]: serving /metrics at (http://127\.0\.0\.1:\d+/metrics) until stopped`)
	var out strings.Builder
	sc := bufio.NewScanner(pr)
	url := ""
	for url == "" && sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if m := serving.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		stop()
		<-code
		t.Fatalf("no serving line:\n%s%s", out.String(), stderr.String())
	}
	// Past -timeout, the server still answers: scrape until a second past
	// it, each scrape a full answer.
	for deadline := start.Add(timeout + time.Second); time.Now().Before(deadline); {
		resp, err := http.Get(url)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Contains(t, string(body), "kvblob_")
	}
	stop()
	go io.Copy(&out, pr) //nolint:errcheck // drains the rest until run closes the pipe
	assert.Equal(t, 0, <-code, "%s", stderr.String())
	_, err := http.Get(url)
	assert.Error(t, err, "still serving after the demo ended")
}

// TestAFetchOfRowsNeverPublishedSaysHowFewWereDelivered: the fetching
// process over a Redis that holds none of the request's rows delivers
// none of them, and fails saying how many of how many were delivered (not
// that the bytes differ: none were read).
func TestAFetchOfRowsNeverPublishedSaysHowFewWereDelivered(t *testing.T) {
	needRedis(t)
	srv, err := storekit.Start(redisSpec)
	require.NoError(t, err)
	defer srv.Stop()
	require.NoError(t, srv.LoopbackOnly())
	var stdout, stderr bytes.Buffer
	c, err := parse([]string{"-redis", srv.Addr, "-rows", "4", "-row-bytes", "4096"}, &stderr)
	require.NoError(t, err)
	c.prefix, c.role = "kvblob-demo-unpublished", "fetch"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = serve(ctx, c, &stdout, &stderr)
	t.Logf("%s%s", stdout.String(), stderr.String())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "only the first 0 of 4 rows were delivered")
	assert.NotContains(t, stdout.String(), "rows match", "no row was delivered to compare")
}

// TestTheFlagsBoundsTakeTheirEdges: each flag's least and greatest allowed
// values are taken (-batch-rows 0 is "no bound", not an error), and one
// past either is refused naming the flag. (Tried: -rows' > 1<<16 as >=
// refuses 65536.)
func TestTheFlagsBoundsTakeTheirEdges(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" for accepted
	}{
		{[]string{"-batch-rows", "0"}, ""},
		{[]string{"-batch-rows", "-1"}, "-batch-rows is -1"},
		{[]string{"-rows", "1"}, ""},
		{[]string{"-rows", "0"}, "-rows is 0"},
		{[]string{"-rows", "65536"}, ""},
		{[]string{"-rows", "65537"}, "-rows is 65537"},
		{[]string{"-row-bytes", "1"}, ""},
		{[]string{"-row-bytes", "0"}, "-row-bytes is 0"},
		{[]string{"-row-bytes", "67108864"}, ""},
		{[]string{"-row-bytes", "67108865"}, "-row-bytes is 67108865"},
		{[]string{"-workers", "1"}, ""},
		{[]string{"-workers", "0"}, "-workers is 0"},
	} {
		var stderr bytes.Buffer
		_, err := parse(c.args, &stderr)
		if c.want == "" {
			assert.NoError(t, err, c.args)
			continue
		}
		if assert.Error(t, err, c.args) {
			assert.Contains(t, err.Error(), c.want)
		}
	}
}

// TestTheDocStatesTheFlagsDefaults: the command's doc states the request's
// size, the workers, the rows of a driver call and the bound on the run
// that a run without flags has, so a reader of the doc knows what the
// demo moves without reading -help.
func TestTheDocStatesTheFlagsDefaults(t *testing.T) {
	var stderr bytes.Buffer
	c, err := parse(nil, &stderr)
	require.NoError(t, err)
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	doc := strings.Join(strings.Fields(f.Doc.Text()), " ")
	want := fmt.Sprintf("By default the request is %d rows of %s (-rows, -row-bytes), each process runs %d backend workers (-workers), and a driver call carries at most %d rows (-batch-rows); -timeout (%v) bounds the whole run.",
		c.rows, size(c.rowBytes), c.workers, c.batch, c.timeout)
	assert.Contains(t, doc, want, "cmd/demo's doc does not state the flags' defaults")
}

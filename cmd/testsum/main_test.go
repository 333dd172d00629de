package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

const stream = `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"a log\n"}
{"Action":"pass","Package":"p","Test":"TestA","Elapsed":0.1}
{"Action":"run","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: boom\n"}
{"Action":"fail","Package":"p","Test":"TestB","Elapsed":0.1}
{"Action":"skip","Package":"p","Test":"TestC","Elapsed":0}
{"Action":"fail","Package":"p","Elapsed":0.2}
{"Action":"skip","Package":"q"}
{"Action":"pass","Package":"r","Elapsed":0.3}
`

func TestCountsAndShowsFailures(t *testing.T) {
	var out bytes.Buffer
	code := run(strings.NewReader(stream), &out)
	assert.Equal(t, 1, code)
	s := out.String()
	assert.Contains(t, s, "--- FAIL: TestB (p)\n    b_test.go:9: boom\n")
	assert.NotContains(t, s, "a log", "a passing test's output is not shown")
	assert.Contains(t, s, "FAIL\tp\t0.200s\n")
	assert.Contains(t, s, "?   \tq\t[no test files]\n")
	assert.Contains(t, s, "ok  \tr\t0.300s\n")
	assert.True(t, strings.HasSuffix(s, "tests: 1 passed, 1 failed, 1 skipped\n"))
	assert.NotContains(t, s, "packages failed", "a failed test explains its package's failure")
}

func TestAPackageFailureWithoutATestFails(t *testing.T) {
	var out bytes.Buffer
	in := `{"Action":"output","Package":"p","Output":"panic: TestMain\n"}
{"Action":"fail","Package":"p","Elapsed":0.1}
`
	assert.Equal(t, 1, run(strings.NewReader(in), &out))
	assert.Contains(t, out.String(), "panic: TestMain")
	assert.Contains(t, out.String(), "testsum: 1 packages failed (a build error, a panic, or a TestMain that failed)\ntests: 0 passed, 0 failed, 0 skipped", "no failed test explains it: the line says what failed")
}

func TestAllPassing(t *testing.T) {
	var out bytes.Buffer
	in := `{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Elapsed":0.1}
`
	assert.Equal(t, 0, run(strings.NewReader(in), &out))
	assert.True(t, strings.HasSuffix(out.String(), "tests: 1 passed, 0 failed, 0 skipped\n"))
}

// TestSkipsAreNamedAndGroupedByReasonBeforeTheTotals: every skipped test
// is named under the reason it logged, the largest group first, and the
// totals line stays the last line.
func TestSkipsAreNamedAndGroupedByReasonBeforeTheTotals(t *testing.T) {
	in := `{"Action":"run","Package":"kv/stores/redis","Test":"TestDriver"}
{"Action":"output","Package":"kv/stores/redis","Test":"TestDriver","Output":"=== RUN   TestDriver\n"}
{"Action":"output","Package":"kv/stores/redis","Test":"TestDriver","Output":"    redis_test.go:40: redis-server not found (apt-get install redis-server)\n"}
{"Action":"output","Package":"kv/stores/redis","Test":"TestDriver","Output":"--- SKIP: TestDriver (0.00s)\n"}
{"Action":"skip","Package":"kv/stores/redis","Test":"TestDriver","Elapsed":0}
{"Action":"output","Package":"kv/stores/redis","Test":"TestFaults","Output":"    faults_test.go:12: redis-server not found (apt-get install redis-server)\n"}
{"Action":"skip","Package":"kv/stores/redis","Test":"TestFaults","Elapsed":0}
{"Action":"output","Package":"kv/cmd/demo","Test":"TestDemo","Output":"    demo_test.go:9: redis-server not found (apt-get install redis-server)\n"}
{"Action":"skip","Package":"kv/cmd/demo","Test":"TestDemo","Elapsed":0}
{"Action":"output","Package":"kv/conformance","Test":"TestSuite/hold","Output":"    suite.go:88: a log line first\n"}
{"Action":"output","Package":"kv/conformance","Test":"TestSuite/hold","Output":"    suite.go:90: the store stages no HoldAccess scenario\n"}
{"Action":"output","Package":"kv/conformance","Test":"TestSuite/hold","Output":"        (Scenarios.HoldAccess is nil)\n"}
{"Action":"output","Package":"kv/conformance","Test":"TestSuite/hold","Output":"    --- SKIP: TestSuite/hold (0.00s)\n"}
{"Action":"skip","Package":"kv/conformance","Test":"TestSuite/hold","Elapsed":0}
{"Action":"skip","Package":"kv/conformance","Test":"TestQuiet","Elapsed":0}
{"Action":"pass","Package":"kv/conformance","Test":"TestSuite","Elapsed":0}
{"Action":"pass","Package":"kv/conformance","Elapsed":0.1}
{"Action":"pass","Package":"kv/stores/redis","Elapsed":0.1}
{"Action":"pass","Package":"kv/cmd/demo","Elapsed":0.1}
`
	var out bytes.Buffer
	assert.Equal(t, 0, run(strings.NewReader(in), &out))
	s := out.String()
	want := `skipped 3: redis-server not found (apt-get install redis-server)
    kv/cmd/demo: TestDemo
    kv/stores/redis: TestDriver, TestFaults
skipped 1: (no reason given)
    kv/conformance: TestQuiet
skipped 1: the store stages no HoldAccess scenario (Scenarios.HoldAccess is nil)
    kv/conformance: TestSuite/hold
tests: 1 passed, 0 failed, 5 skipped
`
	assert.True(t, strings.HasSuffix(s, want), "got:\n%s", s)
}

// TestProgressWhileSilent: testsum says at once that it waits, and at each
// tick with nothing else printed since the last one, how long the run has
// taken, how many packages are done and which run; a tick after a package
// line prints nothing. Sends on unbuffered channels order the events: the
// loop takes the next only after it handled the last.
func TestProgressWhileSilent(t *testing.T) {
	src, tick := make(chan []byte), make(chan time.Time)
	var out, prog bytes.Buffer
	clock := time.Unix(0, 0)
	done := make(chan int)
	pr := progress{w: &prog, tick: tick, start: clock}
	go func() { done <- summarize(src, &out, pr) }()
	send := func(s string) { src <- []byte(s) }
	advance := func(d time.Duration) { clock = clock.Add(d); tick <- clock }

	advance(30 * time.Second) // nothing has started
	send(`{"Action":"start","Package":"kv/a"}`)
	send(`{"Action":"start","Package":"kv/b"}`)
	advance(30 * time.Second)
	send(`{"Action":"pass","Package":"kv/a","Test":"TestX"}`)
	send(`{"Action":"pass","Package":"kv/a","Elapsed":1}`)
	advance(30 * time.Second) // a package line was printed: quiet
	advance(30 * time.Second)
	send(`{"Action":"pass","Package":"kv/b","Elapsed":1}`)
	close(src)
	assert.Equal(t, 0, <-done)

	got := strings.Split(strings.TrimSuffix(prog.String(), "\n"), "\n")
	want := []string{
		"testsum: waiting for go test (a fresh -race build takes minutes before the first package reports); a line every 30s",
		"testsum: 30s: 0 packages done; running: none yet: go test is still building",
		"testsum: 1m0s: 0 packages done; running: kv/a, kv/b",
		"testsum: 2m0s: 1 packages done; running: kv/b",
	}
	assert.Equal(t, want, got)
	assert.True(t, strings.HasSuffix(out.String(), "tests: 1 passed, 0 failed, 0 skipped\n"))
}

func TestProgressLineNamesAFewRunningPackages(t *testing.T) {
	running := map[string]bool{"d": true, "a": true, "c": true, "b": true, "e": true}
	assert.Equal(t, "testsum: 1m5s: 7 packages done; running: a, b, c and 2 more", progressLine(65*time.Second, 7, running))
}

// TestALineLongerThanTheBoundIsReported: go test's output is read in
// lines of up to 16 MiB; a longer one ends the reading, and testsum says
// so rather than summarizing a cut stream as whole.
func TestALineLongerThanTheBoundIsReported(t *testing.T) {
	long := `{"Action":"output","Package":"p","Output":"` + strings.Repeat("x", 1<<24) + `"}` + "\n"
	var out bytes.Buffer
	run(strings.NewReader(long), &out)
	assert.Contains(t, out.String(), "testsum: reading go test's output: bufio.Scanner: token too long")
}

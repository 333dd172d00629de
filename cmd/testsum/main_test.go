package main

import (
	"bytes"
	"fmt"
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

// TestWhatFailsTheRun: the run fails (exit 1) when a test, a package or a
// build failed, each alone too (go test's output can end before the
// package lines that follow a failed test or build); when no failed test
// explains the failure, the line before the totals counts the packages
// that failed, each once. The build streams are go test -json's own.
func TestWhatFailsTheRun(t *testing.T) {
	const packagesFailed = "testsum: %d packages failed (a build error, a panic, or a TestMain that failed)\n"
	for _, c := range []struct {
		name, in string
		code     int
		tail     string // the output's end
	}{{
		name: "all passed",
		in: `{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Elapsed":0.1}
`,
		tail: "ok  \tp\t0.100s\ntests: 1 passed, 0 failed, 0 skipped\n",
	}, {
		name: "a package failed with no failed test",
		in: `{"Action":"output","Package":"p","Output":"panic: TestMain\n"}
{"Action":"fail","Package":"p","Elapsed":0.1}
`,
		code: 1,
		tail: "panic: TestMain\nFAIL\tp\t0.100s\n" + fmt.Sprintf(packagesFailed, 1) + "tests: 0 passed, 0 failed, 0 skipped\n",
	}, {
		name: "a failed test and no package line",
		in: `{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:1: boom\n"}
{"Action":"fail","Package":"p","Test":"TestA"}
`,
		code: 1,
		tail: "--- FAIL: TestA (p)\n    a_test.go:1: boom\ntests: 0 passed, 1 failed, 0 skipped\n",
	}, {
		name: "a failed build and no package line",
		in: `{"ImportPath":"m/p [m/p.test]","Action":"build-output","Output":"p/p.go:2:12: undefined: x\n"}
{"ImportPath":"m/p [m/p.test]","Action":"build-fail"}
`,
		code: 1,
		tail: "p/p.go:2:12: undefined: x\n" + fmt.Sprintf(packagesFailed, 1) + "tests: 0 passed, 0 failed, 0 skipped\n",
	}, {
		name: "a test binary that did not build",
		in: `{"ImportPath":"m/p [m/p.test]","Action":"build-output","Output":"# m/p [m/p.test]\n"}
{"ImportPath":"m/p [m/p.test]","Action":"build-output","Output":"p/p.go:2:12: undefined: x\n"}
{"ImportPath":"m/p [m/p.test]","Action":"build-fail"}
{"Action":"start","Package":"m/p"}
{"Action":"output","Package":"m/p","Output":"FAIL\tm/p [build failed]\n"}
{"Action":"fail","Package":"m/p","Elapsed":0,"FailedBuild":"m/p [m/p.test]"}
`,
		code: 1,
		tail: "# m/p [m/p.test]\np/p.go:2:12: undefined: x\nFAIL\tm/p\t0.000s\n" + fmt.Sprintf(packagesFailed, 1) + "tests: 0 passed, 0 failed, 0 skipped\n",
	}, {
		name: "two packages that did not build and one importing one of them",
		in: `{"ImportPath":"m/p","Action":"build-output","Output":"# m/p\n"}
{"ImportPath":"m/p","Action":"build-fail"}
{"Action":"start","Package":"m/p"}
{"Action":"output","Package":"m/p","Output":"FAIL\tm/p [build failed]\n"}
{"Action":"fail","Package":"m/p","Elapsed":0,"FailedBuild":"m/p"}
{"ImportPath":"m/q","Action":"build-output","Output":"# m/q\n"}
{"ImportPath":"m/q","Action":"build-fail"}
{"Action":"start","Package":"m/q"}
{"Action":"start","Package":"m/r"}
{"Action":"output","Package":"m/r","Output":"FAIL\tm/r [build failed]\n"}
{"Action":"fail","Package":"m/r","Elapsed":0,"FailedBuild":"m/p"}
{"Action":"output","Package":"m/q","Output":"FAIL\tm/q [build failed]\n"}
{"Action":"fail","Package":"m/q","Elapsed":0,"FailedBuild":"m/q"}
`,
		code: 1,
		tail: fmt.Sprintf(packagesFailed, 3) + "tests: 0 passed, 0 failed, 0 skipped\n",
	}} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			assert.Equal(t, c.code, run(strings.NewReader(c.in), &out))
			assert.True(t, strings.HasSuffix(out.String(), c.tail), "got:\n%s", out.String())
			if !strings.Contains(c.tail, "packages failed") {
				assert.NotContains(t, out.String(), "packages failed")
			}
		})
	}
}

// TestSkipsAreNamedAndGroupedByReasonBeforeTheTotals: every skipped test
// is named under the reason it logged, the largest group first, and the
// totals line stays the last line. No order asked for is the input's: the
// largest group's reason sorts between the others, its packages and their
// tests arrive in reverse.
func TestSkipsAreNamedAndGroupedByReasonBeforeTheTotals(t *testing.T) {
	in := `{"Action":"output","Package":"kv/stores/redis","Test":"TestFaults","Output":"    faults_test.go:12: redis-server not found (apt-get install redis-server)\n"}
{"Action":"skip","Package":"kv/stores/redis","Test":"TestFaults","Elapsed":0}
{"Action":"run","Package":"kv/stores/redis","Test":"TestDriver"}
{"Action":"output","Package":"kv/stores/redis","Test":"TestDriver","Output":"=== RUN   TestDriver\n"}
{"Action":"output","Package":"kv/stores/redis","Test":"TestDriver","Output":"    redis_test.go:40: redis-server not found (apt-get install redis-server)\n"}
{"Action":"output","Package":"kv/stores/redis","Test":"TestDriver","Output":"--- SKIP: TestDriver (0.00s)\n"}
{"Action":"skip","Package":"kv/stores/redis","Test":"TestDriver","Elapsed":0}
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

// TestProgressLineNamesAFewRunningPackages: the line names the first three
// running packages by name and counts the rest; three are named alone.
func TestProgressLineNamesAFewRunningPackages(t *testing.T) {
	for _, c := range []struct {
		running []string
		want    string
	}{
		{nil, "none yet: go test is still building"},
		{[]string{"a"}, "a"},
		{[]string{"c", "a", "b"}, "a, b, c"},
		{[]string{"d", "a", "c", "b"}, "a, b, c and 1 more"},
		{[]string{"d", "a", "c", "b", "e"}, "a, b, c and 2 more"},
	} {
		running := map[string]bool{}
		for _, p := range c.running {
			running[p] = true
		}
		assert.Equal(t, "testsum: 1m5s: 7 packages done; running: "+c.want, progressLine(65*time.Second, 7, running), "running %v", c.running)
	}
}

// TestLinesAreReadUpToTheBound: go test's output is read in lines of up
// to 16 MiB (a test may log a large value in one line; bufio's default
// bound is 64 KiB): a line of 1 MiB is read whole (a line that is not an
// event is passed through), a line past 16 MiB ends the reading, and
// testsum says so rather than summarizing a cut stream as whole. (A line
// just under 16 MiB takes 10 s under -race on a busy machine.)
func TestLinesAreReadUpToTheBound(t *testing.T) {
	t.Run("under", func(t *testing.T) {
		line := strings.Repeat("x", 1<<20) + "\n"
		var out bytes.Buffer
		run(strings.NewReader(line), &out)
		assert.True(t, strings.HasPrefix(out.String(), line), "the line is not passed through whole")
		assert.NotContains(t, out.String(), "testsum: reading go test's output")
	})
	t.Run("over", func(t *testing.T) {
		long := `{"Action":"output","Package":"p","Output":"` + strings.Repeat("x", 1<<24) + `"}` + "\n"
		var out bytes.Buffer
		run(strings.NewReader(long), &out)
		assert.Contains(t, out.String(), "testsum: reading go test's output: bufio.Scanner: token too long")
	})
}

// TestAFailedPackageShowsItsOwnOutputNotGoTestsLines: a failed package's
// output outside its tests (a panic, a TestMain's log) is printed before
// its FAIL line; go test's own lines about the package (its result, the
// coverage) are not, since testsum prints its own result line. Each case
// sends one of go test's lines among the package's output.
func TestAFailedPackageShowsItsOwnOutputNotGoTestsLines(t *testing.T) {
	for _, goTests := range []string{
		"=== RUN   TestA\n",
		"PASS\n",
		"FAIL\n",
		"ok  \tp\t0.100s\n",
		"FAIL\tp [build failed]\n",
		"?   \tp\t[no test files]\n",
		"coverage: 50.0% of statements\n",
	} {
		t.Run(strings.TrimSpace(goTests), func(t *testing.T) {
			var in strings.Builder
			for _, o := range []string{"panic: TestMain\n", goTests, "exit status 2\n"} {
				fmt.Fprintf(&in, `{"Action":"output","Package":"p","Output":%q}`+"\n", o)
			}
			in.WriteString(`{"Action":"fail","Package":"p","Elapsed":0.1}` + "\n")
			var out bytes.Buffer
			assert.Equal(t, 1, run(strings.NewReader(in.String()), &out))
			want := "panic: TestMain\nexit status 2\nFAIL\tp\t0.100s\n"
			assert.True(t, strings.HasPrefix(out.String(), want), "got:\n%s", out.String())
		})
	}
}

// TestOutputGoesWithTheResultThatFollowsIt: a result prints the output
// sent since the last result of the same package or test, never an
// earlier run's again; a stream may hold one package run twice (two go
// test runs piped into one testsum).
func TestOutputGoesWithTheResultThatFollowsIt(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
	}{{
		name: "a package",
		in: `{"Action":"output","Package":"p","Output":"panic: first\n"}
{"Action":"fail","Package":"p","Elapsed":0.1}
{"Action":"output","Package":"p","Output":"panic: second\n"}
{"Action":"fail","Package":"p","Elapsed":0.2}
`,
		want: "panic: first\nFAIL\tp\t0.100s\npanic: second\nFAIL\tp\t0.200s\n",
	}, {
		name: "a test",
		in: `{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:1: first\n"}
{"Action":"fail","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:1: second\n"}
{"Action":"fail","Package":"p","Test":"TestA"}
`,
		want: "--- FAIL: TestA (p)\n    a_test.go:1: first\n--- FAIL: TestA (p)\n    a_test.go:1: second\n",
	}} {
		t.Run(c.name, func(t *testing.T) {
			var out bytes.Buffer
			assert.Equal(t, 1, run(strings.NewReader(c.in), &out))
			assert.True(t, strings.HasPrefix(out.String(), c.want), "got:\n%s", out.String())
		})
	}
}

// TestSkipReasonIsTheLastLoggedMessage: a skip's reason is the message it
// logged last (t.Skip's), its head cut and its continuation lines joined;
// a skip that logged nothing, or an empty last message, gave none.
func TestSkipReasonIsTheLastLoggedMessage(t *testing.T) {
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{nil, noReason},
		{[]string{"not a log line\n"}, noReason},
		{[]string{"    a_test.go:9: no server\n"}, "no server"},
		{[]string{"    a_test.go:8: a log first\n", "    a_test.go:9: no server\n"}, "no server"},
		{[]string{"    a_test.go:9: no server\n", "        (install one)\n", "\n"}, "no server (install one)"},
		{[]string{"    a_test.go:8: a log first\n", "    a_test.go:9: \n"}, noReason},
	} {
		assert.Equal(t, c.want, skipReason(c.lines), "lines %q", c.lines)
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"

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
}

func TestAPackageFailureWithoutATestFails(t *testing.T) {
	var out bytes.Buffer
	in := `{"Action":"output","Package":"p","Output":"panic: TestMain\n"}
{"Action":"fail","Package":"p","Elapsed":0.1}
`
	assert.Equal(t, 1, run(strings.NewReader(in), &out))
	assert.Contains(t, out.String(), "panic: TestMain")
	assert.Contains(t, out.String(), "tests: 0 passed, 0 failed, 0 skipped")
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

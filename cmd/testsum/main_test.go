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

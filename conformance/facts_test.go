package conformance

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseFact(t *testing.T) {
	cases := []struct {
		line       string
		key, value string
		ok         bool
	}{
		{"    suite.go:212: conformance: sdk: redis-server 7.x (loopback)\n", FactSDK, "redis-server 7.x (loopback)", true},
		{"        suite.go:9: conformance: spec: spec/memory.yaml:40:5\n", FactSpec, "spec/memory.yaml:40:5", true},
		{"    roundtrip.go:80: conformance: round trip: 16 x 256 KiB in 9.2ms\n", FactRoundTrip, "16 x 256 KiB in 9.2ms", true},
		{"    suite.go:1: conformance: code enum: ErrorCode", FactCodeEnum, "ErrorCode", true},
		{"    suite.go:1: conformance: skip: versitygw is not installed (go install x: y)\n", FactSkip, "versitygw is not installed (go install x: y)", true},
		{"    suite.go:1: conformance: setup: ", "", "", false},                        // a key with no value is no fact
		{"    suite.go:1: conformance: colour: blue\n", "", "", false},                 // an unknown key
		{"    checks.go:88: put of row \"a\": got FAULT, want READY\n", "", "", false}, // a check's failure
		{"conformance: sdk: x\n", "", "", false},                                       // printed, not logged
		{"            continued: conformance: sdk: x\n", "", "", false},                // a continuation line
		{"=== RUN   TestConformance/memory\n", "", "", false},
	}
	for _, c := range cases {
		key, value, ok := ParseFact(c.line)
		assert.Equal(t, c.ok, ok, "%q", c.line)
		assert.Equal(t, c.key, key, "%q", c.line)
		assert.Equal(t, c.value, value, "%q", c.line)
	}
	k, v, ok := ParseFact("    x.go:1: " + FactLine(FactStore, "redis-valkey-8.1") + "\n")
	assert.True(t, ok)
	assert.Equal(t, [2]string{FactStore, "redis-valkey-8.1"}, [2]string{k, v})
}

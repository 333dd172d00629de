package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
)

// TestOnATerminalProgressIsOneLineRewritten: on a terminal (and not
// -v), a store's progress is one line, rewritten in place ("\r"); every
// other line the gate writes (a failed check, a store's end) starts on a
// line of its own, after the progress line, never glued to its end.
// Elsewhere (a file, a CI log) no progress line is written at all.
func TestOnATerminalProgressIsOneLineRewritten(t *testing.T) {
	s := (&stream{}).store("memory", conformance.FactSDK, "kvblob-memory 1", conformance.FactChecks, "3").
		check("memory", "a", "pass", kind("check")).
		check("memory", "b", "fail", kind("check"), "get of row \"a\": got FAULT, want READY").
		check("memory", "c", "pass", kind("check")).
		end("memory", "fail")
	for _, tty := range []bool{true, false} {
		var events, stderr bytes.Buffer
		require.NoError(t, s.goTest("", nil, nil, &events))
		c := newCollector(&stderr, false)
		c.tty = tty
		require.NoError(t, c.read(&events))
		out := stderr.String()
		if !tty {
			assert.NotContains(t, out, "\r", "no progress line off a terminal")
			assert.Equal(t, "gate: memory      2/3 FAILED b\ngate: memory done in 250ms: 2 passed, 1 failed, 0 skipped\n", out)
			continue
		}
		assert.Equal(t, "\rgate: memory      1/3\ngate: memory      2/3 FAILED b\n\rgate: memory      3/3\ngate: memory done in 250ms: 2 passed, 1 failed, 0 skipped\n", out)
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/internal/witness"
)

// witness adds a run of TestWitness/<stem>/<rule>/<how> ending with action.
func (s *stream) witness(stem, rule, how, action string, lines ...string) *stream {
	test := witnessTest + "/" + stem + "/" + rule + "/" + how
	s.events = append(s.events, event{Action: "run", Package: pkg, Test: test})
	for _, l := range lines {
		s.out(test, l)
	}
	s.events = append(s.events, event{Action: action, Package: pkg, Test: test, Elapsed: 0.1})
	return s
}

// TestARowCountsItsSpecsWitnessedRules: the table's WITNESSED column is
// the rules of the row's spec a passed witness run reached, out of all;
// the rest are listed under the table and carried by the JSON and JUnit
// reports; a failed run is a failed check at its spec position, and a
// row whose spec has no witnesses shows "-".
func TestARowCountsItsSpecsWitnessedRules(t *testing.T) {
	specs, err := witness.Specs()
	require.NoError(t, err)
	var all []string
	for _, s := range specs {
		if witness.Stem(s.File) == "redis-7" {
			for _, r := range witness.Rules(s) {
				all = append(all, r.ID())
			}
		}
	}
	require.Greater(t, len(all), 3)
	s := (&stream{}).store("redis", conformance.FactSpecFile, "spec/redis-7.yaml").check("redis", "x", "pass").end("redis", "pass").
		store("memory", conformance.FactSpecFile, "spec/memory.yaml").check("memory", "x", "pass").end("memory", "pass").
		witness("redis-7", all[0], "a cut", "pass").
		witness("redis-7", all[0], "a reset", "pass").
		witness("redis-7", all[1], "a stall", "pass").
		witness("redis-7", all[2], "a slice", "fail", spec("spec/redis-7.yaml:1:2"), "spec/redis-7.yaml:1:2: contradicted").
		witness("redis-7", all[3], "no server", "skip", "what the run logged before its skip", "no server").
		witness("redis-7", all[3], "a silent skip", "skip") // no line to keep: the message is empty
	dir := t.TempDir()
	jsonFile, junitFile := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.xml")
	code, out, stderr := runWith(t, s.goTest, append(base, "--json", jsonFile, "--junit", junitFile)...)
	require.Equal(t, 1, code, "a contradicted rule fails the gate\n%s\n%s", out, stderr)
	assert.Regexp(t, `(?m)^STORE\s+SDK\s+PASSED\s+FAILED\s+SKIPPED\s+WITNESSED\s+TIME`, out)
	assert.Regexp(t, `(?m)^redis\s.*\s2/`+itoa(len(all))+`\s`, out)
	assert.Regexp(t, `(?m)^memory\s.*\s-\s`, out)
	assert.Contains(t, out, "redis unwitnessed "+itoa(len(all)-2)+": "+strings.Join(all[2:], ", "))
	assert.Contains(t, out, "redis FAILED witness "+all[2]+"/a slice: spec/redis-7.yaml:1:2: contradicted")

	var rep report
	b, err := os.ReadFile(jsonFile)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	var redis storeResult
	for _, r := range rep.Stores {
		if r.Store == "redis" {
			redis = r
		}
	}
	assert.Equal(t, all[:2], redis.Witnessed)
	assert.Equal(t, all[2:], redis.Unwitnessed)
	assert.Equal(t, len(all), redis.Rules)
	x, err := os.ReadFile(junitFile)
	require.NoError(t, err)
	assert.Contains(t, string(x), `<property name="witnessed" value="2/`+itoa(len(all))+`"></property>`)
	assert.Contains(t, string(x), `name="witness `+all[2]+`/a slice"`)
	var silent, skipped []checkResult
	for _, c := range redis.Checks {
		switch c.Name {
		case "witness " + all[3] + "/a silent skip":
			silent = append(silent, c)
		case "witness " + all[3] + "/no server":
			skipped = append(skipped, c)
		}
	}
	if assert.Len(t, skipped, 1) {
		assert.Equal(t, "no server", skipped[0].Message, "a skip's message is its reason alone, not what the run logged before it")
	}
	if assert.Len(t, silent, 1, "a skipped run that printed nothing is a check") {
		assert.Equal(t, statusSkipped, silent[0].Status)
		assert.Empty(t, silent[0].Message)
	}
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + jsonInt(n)) }

func jsonInt(n int) string { b, _ := json.Marshal(n); return string(b) }

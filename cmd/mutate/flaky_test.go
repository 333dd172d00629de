package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeModule writes files (path -> text) under a new directory and
// returns it.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	return root
}

// flakyModule: a's own test never calls Top; b and c import it. b's test
// is broken (it fails whatever Top does) or fails on its second run only
// (a flake), as the caller picks; c's test checks Top(11) == 10.
func flakyModule(t *testing.T, bTest string, withC bool) string {
	files := map[string]string{
		"go.mod":      "module example.com/flaky\n\ngo 1.21\n",
		"a/a.go":      "package a\n\nfunc Top(v int) int {\n\tif v > 10 {\n\t\treturn 10\n\t}\n\treturn v\n}\n",
		"a/a_test.go": "package a\n\nimport \"testing\"\n\nfunc TestNothing(t *testing.T) {}\n",
		"b/b.go":      "package b\n\nimport \"example.com/flaky/a\"\n\nfunc B(v int) int { return a.Top(v) }\n",
		"b/b_test.go": bTest,
	}
	if withC {
		files["c/c.go"] = "package c\n\nimport \"example.com/flaky/a\"\n\nfunc C(v int) int { return a.Top(v) }\n"
		files["c/c_test.go"] = "package c\n\nimport \"testing\"\n\nfunc TestTop(t *testing.T) {\n\tif got := C(11); got != 10 {\n\t\tt.Fatalf(\"C(11) = %d\", got)\n\t}\n}\n"
	}
	return writeModule(t, files)
}

// TestAKillByAnotherPackagesFlakyTestIsNotCounted: a failure in an
// importer's tests is a kill only when those tests pass unmutated and fail
// on the mutant again. b's broken test fails unmutated too, so it decides
// nothing: c's test kills the mutants it catches (each confirmed), and the
// one c cannot tell (> to >=) is flaky, not killed and not decided. A
// test that failed once on the mutant and passes on it again is flaky too.
func TestAKillByAnotherPackagesFlakyTestIsNotCounted(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	broken := "package b\n\nimport \"testing\"\n\nfunc TestB(t *testing.T) {\n\tB(1)\n\tt.Fatal(\"broken\")\n}\n"
	// Fails on its second run only: the first is the unmutated coverage
	// run, the second the mutant's, the third and fourth the confirmation.
	once := `package b

import (
	"os"
	"strconv"
	"testing"
)

func TestB(t *testing.T) {
	B(1)
	f := os.Getenv("MUTATE_FLAKY_COUNT")
	data, _ := os.ReadFile(f)
	n, _ := strconv.Atoi(string(data))
	n++
	if err := os.WriteFile(f, []byte(strconv.Itoa(n)), 0o644); err != nil {
		t.Fatal(err)
	}
	if n == 2 {
		t.Fatal("flaked")
	}
}
`
	t.Setenv("MUTATE_FLAKY_COUNT", filepath.Join(t.TempDir(), "count"))
	for _, c := range []struct {
		name             string
		bTest            string
		withC            bool
		only             string
		killed, flaky    int
		survived         int
		flakes, notFlake []string
	}{
		{"broken", broken, true, "a/a.go:4", 3, 1, 0,
			[]string{"a/a.go:4:7: > -> >=: if v > 10 { [example.com/flaky/b TestB failed unmutated too]"}, nil},
		{"fails once", once, false, "a/a.go:4:9", 0, 1, 0,
			[]string{"a/a.go:4:9: 10 -> 11: if v > 10 { [example.com/flaky/b TestB failed on the mutant, then passed on it again]"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := flakyModule(t, c.bTest, c.withC)
			var out bytes.Buffer
			rs, err := Run(Config{Root: root, Budget: 5 * time.Minute, Timeout: time.Minute, Seed: 1, Jobs: 1, Importers: true, Race: "never", Only: []string{c.only}}, []string{"a"}, &out)
			require.NoError(t, err, out.String())
			t.Log(out.String())
			r := rs[0]
			assert.Equal(t, c.killed, r.Killed)
			assert.Equal(t, c.flaky, r.Flaky)
			assert.Equal(t, c.survived, r.Survived)
			assert.Equal(t, c.killed+c.survived, r.Decided(), "a flaky mutant is not decided")
			assert.Equal(t, c.flakes, r.Flakes)
			for _, f := range c.flakes {
				assert.Contains(t, out.String(), "  flaky    "+f)
			}
		})
	}
}

// TestTheFailedTestsAreReadFromGoTestsOutput: the top-level tests a
// failure names, and a -run pattern for exactly those.
func TestTheFailedTestsAreReadFromGoTestsOutput(t *testing.T) {
	for _, c := range []struct {
		name, out string
		want      []string
		run       string
	}{
		{"one", "=== RUN   TestA\n--- FAIL: TestA (0.00s)\nFAIL\n", []string{"TestA"}, "^(TestA)$"},
		{"a subtest's parent", "--- FAIL: TestA (0.01s)\n    --- FAIL: TestA/sub_1 (0.00s)\n--- FAIL: TestB (0.00s)\n", []string{"TestA", "TestB"}, "^(TestA|TestB)$"},
		{"none: a failure outside a test", "goleak: Errors on successful test run: found unexpected goroutines\nFAIL\n", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := failedTests([]byte(c.out))
			assert.Equal(t, c.want, got)
			if c.run != "" {
				assert.Equal(t, c.run, runOnly(got))
			}
		})
	}
}

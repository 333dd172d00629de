package main

import (
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestASecondMooncakeVersionJoinsTheGate does what a driver author does
// for a new SDK release, in a copy of the module: 'drivergen new --from'
// the Mooncake spec, 'drivergen generate', and the gate. The new version
// is a spec and generated code only, no file under stores/ or internal/
// changes, and the gate runs both Mooncake versions, each as its own row
// with its own cases: the new one over a build it was verified on
// nowhere, reported UNVERIFIED, and still run.
func TestASecondMooncakeVersionJoinsTheGate(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the module and builds it afresh (about a minute)")
	}
	dir := t.TempDir()
	copyModule(t, "../..", dir)
	goRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", append([]string{"run"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "go run %s:\n%s", strings.Join(args, " "), out)
		return string(out)
	}
	before := treeDigest(t, dir, "stores", "internal")

	goRun("./cmd/drivergen", "new", "--from", "spec/mooncake-0.3.13.yaml", "--version", "0.3.14")
	goRun("./cmd/drivergen", "generate")
	require.FileExists(t, filepath.Join(dir, "generated/mooncake/mooncake_0_3_14_spec.go"))
	require.FileExists(t, filepath.Join(dir, "generated/mooncake/mooncakecases/mooncake_0_3_14_cases.go"))
	store, err := os.ReadFile(filepath.Join(dir, "generated/mooncake/store.go"))
	require.NoError(t, err)
	assert.Contains(t, string(store), "return []*Spec{specMooncake0313, specMooncake0314}", "the store's Specs lists both versions")

	report := filepath.Join(dir, "gate.json")
	goRun("./cmd/gate", "--packages", "./stores/mooncake", "--store", "mooncake", "--store", "mooncake-0.3.14", "--json", report)
	var rep struct {
		Stores []struct {
			Store, SDK                      string
			Passed, Failed, Errors, Skipped int
			Checks                          []struct{ Name, Kind, Spec, Status string }
		}
		ExitCode int `json:"exit_code"`
	}
	b, err := os.ReadFile(report)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Equal(t, 0, rep.ExitCode)
	got := map[string]int{}
	for _, s := range rep.Stores {
		// The conformance checks: the recorded scenarios witness 0.3.13's
		// spec only (a spec file of its own stem).
		for _, c := range s.Checks {
			if c.Kind != kindWitness && c.Status == statusPassed {
				got[s.Store]++
			}
		}
		assert.Zero(t, s.Failed+s.Errors, "%s failed", s.Store)
		cases, inSpec := 0, "spec/mooncake-0.3.13.yaml:"
		if s.Store == "mooncake-0.3.14" {
			inSpec = "spec/mooncake-0.3.14.yaml:"
			assert.Contains(t, s.SDK, "mooncake-store 0.3.14 (fake); UNVERIFIED: build \"0.3.14\" reports no commit")
		} else {
			assert.NotContains(t, s.SDK, "UNVERIFIED")
		}
		for _, c := range s.Checks {
			if c.Kind == "case" {
				cases++
				assert.True(t, strings.HasPrefix(c.Spec, inSpec), "%s: case %s pins %s, want a rule of %s", s.Store, c.Name, c.Spec, inSpec)
			}
		}
		assert.NotZero(t, cases, "%s ran no generated case", s.Store)
	}
	assert.Len(t, got, 2, "rows: %v", got)
	assert.NotZero(t, got["mooncake"])
	assert.Equal(t, got["mooncake"], got["mooncake-0.3.14"], "both versions run the same checks")

	assert.Equal(t, before, treeDigest(t, dir, "stores", "internal"), "adding a version edited a driver or a kit")
}

// copyModule copies the module at from into to: every regular file but
// the git metadata and .bin (servers the tests fetch).
func copyModule(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if rel == ".git" || rel == ".bin" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		out, err := os.Create(dst)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, src); err != nil {
			out.Close()
			return err
		}
		return out.Close()
	}))
}

// treeDigest names every file under dirs of root with its content.
func treeDigest(t *testing.T, root string, dirs ...string) map[string]string {
	t.Helper()
	files := map[string]string{}
	for _, d := range dirs {
		require.NoError(t, filepath.WalkDir(filepath.Join(root, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			files[p] = string(b)
			return err
		}))
	}
	return files
}

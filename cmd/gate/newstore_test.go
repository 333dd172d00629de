package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAThrowawayStoreJoinsWithNoEditElsewhere follows the guide in a copy
// of the module: a store folder (its TestConformance and deps.sh) and a
// spec are added, and nothing else is edited. The gate then runs its
// package (a row of the gate's table is a suite of a package it runs),
// make test's package list (go list ./...) holds it, and make deps runs
// its step.
func TestAThrowawayStoreJoinsWithNoEditElsewhere(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the module and runs go list and make deps in it")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	files, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		t.Skipf("not a git checkout (%v): nothing to copy the module from", err)
	}
	dst := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		fi, err := os.Lstat(filepath.Join(root, f))
		if os.IsNotExist(err) || (err == nil && !fi.Mode().IsRegular()) {
			continue // deleted in the work tree, or a link to what is not the module's
		}
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dst, f), b, fi.Mode().Perm()))
	}
	// The other stores' servers are the checkout's business: their steps
	// go from the copy, so that make deps there sets up nothing but the
	// new store's (and fetches nothing).
	others, err := filepath.Glob(filepath.Join(dst, "stores", "*", "deps.sh"))
	require.NoError(t, err)
	for _, f := range others {
		require.NoError(t, os.Remove(f))
	}

	// The guide's steps: a spec, the store's folder with its conformance
	// test, and its deps.sh.
	spec, err := os.ReadFile(filepath.Join(root, "spec", "memory.yaml"))
	require.NoError(t, err)
	spec = []byte(strings.Replace(string(spec), "store: memory\n", "store: zzthrow\n", 1))
	write := func(rel, body string, mode os.FileMode) {
		require.NoError(t, os.MkdirAll(filepath.Join(dst, filepath.Dir(rel)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dst, rel), []byte(body), mode))
	}
	write("spec/zzthrow.yaml", string(spec), 0o644)
	write("stores/zzthrow/doc.go", "// Package zzthrow is a throwaway store.\npackage zzthrow\n", 0o644)
	write("stores/zzthrow/conformance_test.go", "package zzthrow_test\n\nimport \"testing\"\n\nfunc TestConformance(t *testing.T) { t.Skip(\"a throwaway\") }\n", 0o644)
	write("stores/zzthrow/deps.sh", "#!/usr/bin/env bash\nset -uo pipefail\n. scripts/deps.sh\nfetch_step zzthrow-server .zzthrow-stamp \"the throwaway's server\" touch .zzthrow-stamp\n", 0o755)

	const pkg = "github.com/kvblob/kvblob/stores/zzthrow"
	pkgs, err := storePackages(dst, "")
	require.NoError(t, err)
	assert.Contains(t, pkgs, pkg, "the packages the gate runs")
	list := exec.Command("go", "list", "./...")
	list.Dir = dst
	out, err := list.Output()
	require.NoError(t, err)
	assert.Contains(t, strings.Fields(string(out)), pkg, "make test's packages (go test ./...)")

	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	deps := exec.Command("make", "deps")
	deps.Dir = dst
	deps.Env = append(os.Environ(), "CI=")
	out, err = deps.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "make deps: zzthrow-server: fetching the throwaway's server\nmake deps: zzthrow-server: fetched\n", "make deps runs the store's step")
}

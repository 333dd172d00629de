package storekit

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
)

// TestFindBinaryLooksWhereGoInstallPuts: a program that is not on PATH is
// found in GOBIN, where go install puts it (versitygw is installed so).
func TestFindBinaryLooksWhereGoInstallPuts(t *testing.T) {
	gobin := t.TempDir()
	prog := filepath.Join(gobin, "kvblob-test-server")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755))
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GOBIN", "")
	_, ok := FindBinary("kvblob-test-server")
	assert.False(t, ok, "found without GOBIN")
	t.Setenv("GOBIN", gobin)
	p, ok := FindBinary("kvblob-test-server")
	assert.True(t, ok)
	assert.Equal(t, prog, p)
	ok, why := Available(Spec{Binary: "kvblob-no-such-server", Install: "go install example.com/x@v1"})
	assert.False(t, ok)
	assert.Equal(t, "kvblob-no-such-server is not installed (go install example.com/x@v1)", why)
}

// TestFindBinaryLooksWhereDebianPutsServers: the kit's folders come first,
// each glob's matches highest version first (PostgreSQL's
// /usr/lib/postgresql/<v>/bin), and Debian's sbin folders, which a user's
// PATH leaves out, are searched too.
func TestFindBinaryLooksWhereDebianPutsServers(t *testing.T) {
	lib := t.TempDir()
	for _, v := range []string{"9", "15", "13"} {
		dir := filepath.Join(lib, v, "bin")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "kvblob-test-server"), []byte("#!/bin/sh\n"), 0o755))
	}
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GOBIN", "")
	p, ok := FindBinaryIn("kvblob-test-server", []string{filepath.Join(lib, "*", "bin")})
	assert.True(t, ok)
	assert.Equal(t, filepath.Join(lib, "15", "bin", "kvblob-test-server"), p, "the highest version")
	ok, _ = Available(Spec{Binary: "kvblob-test-server", Dirs: []string{filepath.Join(lib, "*", "bin")}})
	assert.True(t, ok, "Available looks in Spec.Dirs")

	for _, dir := range sbinDirs {
		if _, err := os.Stat(filepath.Join(dir, "ldconfig")); err == nil {
			p, ok := FindBinary("ldconfig")
			assert.True(t, ok, "ldconfig, in %s, is not found with PATH empty", dir)
			assert.Equal(t, filepath.Join(dir, "ldconfig"), p)
			return
		}
	}
	t.Log("no ldconfig in Debian's sbin folders; the sbin search went untested")
}

func TestCompareVersions(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"/usr/lib/postgresql/9/bin", "/usr/lib/postgresql/15/bin", -1},
		{"15", "15", 0},
		{"v1.10.0", "v1.9.2", 1},
		{"010", "9", 1},
		{"a", "b", -1},
		{"pg15", "pg15a", -1},
	} {
		assert.Equal(t, c.want, compareVersions(c.a, c.b), "%s vs %s", c.a, c.b)
		assert.Equal(t, -c.want, compareVersions(c.b, c.a), "%s vs %s", c.b, c.a)
	}
}

func TestSpecPos(t *testing.T) {
	cases := []conformance.Case{{ID: "get/NIL", Pos: "spec/x.yaml:3:5"}}
	assert.Equal(t, "spec/x.yaml:3:5", SpecPos(cases, "get/NIL"))
	assert.PanicsWithValue(t, `storekit: no generated case "get/OK"; the spec no longer holds the rule its caller names`, func() { SpecPos(cases, "get/OK") })
	assert.Equal(t, cases[0], CaseOf(cases, "get/NIL"))
	assert.PanicsWithValue(t, `storekit: no generated case "get/OK"; the spec no longer holds the rule its caller names`, func() { CaseOf(cases, "get/OK") })
}

// wrapper wraps a driver, as the fault wrappers of kits and tests do.
type wrapper struct{ driver.Driver }

func (w wrapper) As(target any) bool { return driver.As(w.Driver, target) }

func TestUnwrapReachesTheKitsDriver(t *testing.T) {
	m := memory.New(memory.Options{})
	defer m.Close()
	assert.Same(t, m, Unwrap[*memory.Driver](wrapper{m}))
	assert.PanicsWithValue(t, "storekit: storekit.wrapper is not and does not wrap a *storekit.wrapper; it is no driver of this kit's factory", func() { Unwrap[*wrapper](wrapper{m}) })
}

// TestCertsServeAndTrust: the server certificate verifies against the
// CA's pool for each of its names, and against the other CA for none.
func TestCertsServeAndTrust(t *testing.T) {
	c, err := NewCerts(t.TempDir())
	require.NoError(t, err)
	cfg, err := c.ClientConfig()
	require.NoError(t, err)
	assert.Len(t, cfg.Certificates, 1)
	assert.Same(t, c.Pool, c.TrustConfig().RootCAs)
	for _, f := range []string{c.CAFile, c.ServerCertFile, c.ServerKey, c.ClientCertFile, c.ClientKey, c.OtherCAFile} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
}

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kvblob/kvblob/conformance/gate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// registeredNames are the stores the gate knows, from the registry
// (stores.go's imports and this binary's "broken"), sorted.
func registeredNames() []string {
	var names []string
	for _, s := range gate.Stores() {
		if !slices.Contains(names, s.Name) { // a real SDK's store shares its name
			names = append(names, s.Name)
		}
	}
	return names
}

func TestUsage(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-help"}, 0, "usage: gate"},
		{[]string{"--store", "nosuch"}, 2, `unknown store "nosuch"; want one of ` + strings.Join(registeredNames(), ", ")},
		{[]string{"--sdk-enum", "E"}, 2, "--sdk-enum needs --sdk-include DIR"},
		{[]string{"--sdk-include", "x", "--sdk-enum", "E"}, 2, "select that store with --store NAME"},
		{[]string{"--sdk-include", "x", "--store", "memory"}, 2, "no selected store registers the enum of its codes"},
		{[]string{"--sdk", "other"}, 2, `--sdk "other"; want fake or real`},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		assert.Equal(t, c.code, code, "%v", c.args)
		assert.Contains(t, stderr, c.want, "%v", c.args)
	}
}

func TestGatePassesOnTheEmbeddedDefaults(t *testing.T) {
	code, out, stderr := runCLI("-spec", "../../spec", "-out", "../../generated", "--store", "memory", "--store", "mooncake")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `memory\s+kvblob-memory 1\s+\d+\s+0\s+0`, out)
	assert.Regexp(t, `mooncake\s+mooncake-store 0.3.13 \(fake\)\s+\d+\s+0\s+4`, out)
	assert.Contains(t, out, "gate: ok")
}

func TestGateRefusesStaleGeneratedCode(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "generated"), os.DirFS("../../generated")))
	p := filepath.Join(dir, "generated", "memoryspec", "results.go")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, append(b, []byte("\n// edited by hand\n")...), 0o644))
	code, _, stderr := runCLI("-spec", "../../spec", "-out", filepath.Join(dir, "generated"), "--store", "memory")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, p+" differs")
	assert.Contains(t, stderr, "run 'make generate'")
}

func TestSDKPicksTheRealRegistrationOnlyWhereOneExists(t *testing.T) {
	fake, real, redis := gate.Store{Name: "mooncake"}, gate.Store{Name: "mooncake", Real: true}, gate.Store{Name: "redis"}
	names := func(ss []gate.Store) (out []string) {
		for _, s := range ss {
			out = append(out, fmt.Sprintf("%s real=%v", s.Name, s.Real))
		}
		return out
	}
	got, ok := bySDK([]gate.Store{fake, real, redis}, true)
	assert.True(t, ok)
	assert.Equal(t, []string{"mooncake real=true", "redis real=false"}, names(got))
	got, ok = bySDK([]gate.Store{fake, real, redis}, false)
	assert.True(t, ok)
	assert.Equal(t, []string{"mooncake real=false", "redis real=false"}, names(got))
	_, ok = bySDK([]gate.Store{fake, redis}, true)
	assert.False(t, ok, "--sdk real with no real SDK registered must be refused")
}

func TestSDKRealNeedsAGateBuiltWithARealSDK(t *testing.T) {
	if _, ok := bySDK(gate.Stores(), true); ok {
		t.Skip("this gate is built with a real SDK (-tags mooncake)")
	}
	code, _, stderr := runCLI("--sdk", "real")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "needs a gate built with -tags mooncake")
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMutantsCoverEveryKind: each kind of mutation is made, and each
// mutant differs from the source in the way its description says.
func TestMutantsCoverEveryKind(t *testing.T) {
	dir := t.TempDir()
	src := `package p

const limit = 3

func f(a, b int, ok bool) int {
	n := 0
	if a < b && ok {
		n++
	}
	g()
	return n + 7
}

func g() {}
`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n"), 0o644))
	ms, err := Mutants(dir)
	require.NoError(t, err)
	var descs []string
	for _, m := range ms {
		descs = append(descs, m.Desc)
		assert.NotEqual(t, src, string(m.Src), "%s: %s changed nothing", m.Pos, m.Desc)
		assert.NotContains(t, m.Pos, "p_test.go")
	}
	all := strings.Join(descs, "\n")
	for _, want := range []string{"< -> >=", "< -> <=", "&& -> ||", "negate if condition", "drop statement", "0 -> 1", "7 -> 8"} {
		assert.Contains(t, all, want)
	}
	assert.NotContains(t, all, "3 -> 4", "constants are out of scope")
}

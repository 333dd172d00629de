package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGenerateWritesOnlyInsideTheModule: -out that leaves the module of the
// specs (by "..", as an absolute path elsewhere, or through a link inside
// the module to a folder outside) is refused before anything is written,
// with an error saying so; a folder inside the module, new or not, is
// written. Before, generate wrote its packages wherever -out said. "/" is
// asked of insideModule alone: a generate that broke the rule would write
// into the machine's root.
func TestGenerateWritesOnlyInsideTheModule(t *testing.T) {
	dir := copyTree(t)
	specDir := filepath.Join(dir, "spec")
	elsewhere := t.TempDir()
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(elsewhere, link))
	for _, out := range []string{
		filepath.Join(dir, "..", "..", "escape"),
		filepath.Join(dir, "..", ".."), // the module's parent: the test's own temporary folder
		filepath.Join(elsewhere, "gen"),
		filepath.Join(link, "gen"),
	} {
		code, _, stderr := runCLI("generate", "-spec", specDir, "-out", out)
		assert.Equal(t, 1, code, out)
		assert.Contains(t, stderr, "is outside the module at", out)
		assert.Contains(t, stderr, "generate writes only inside it", out)
		_, err := os.Stat(filepath.Join(out, "memory"))
		assert.True(t, os.IsNotExist(err), "%s: generate wrote outside the module", out)
	}
	assert.Empty(t, snapshot(t, elsewhere))
	err := insideModule(specDir, string(filepath.Separator))
	assert.ErrorContains(t, err, "is outside the module at")

	inside := filepath.Join(dir, "deeper", "gen")
	code, _, stderr := runCLI("generate", "-spec", specDir, "-out", inside)
	require.Equal(t, 0, code, stderr)
	_, err = os.Stat(filepath.Join(inside, "memory", "store.go"))
	assert.NoError(t, err)

	// Specs in no module: nothing says where the module is, so nothing is
	// written.
	loose := t.TempDir()
	require.NoError(t, os.Rename(specDir, filepath.Join(loose, "spec")))
	code, _, stderr = runCLI("generate", "-spec", filepath.Join(loose, "spec"), "-out", filepath.Join(loose, "gen"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "is in no Go module")
	_, err = os.Stat(filepath.Join(loose, "gen"))
	assert.True(t, os.IsNotExist(err))
}

// TestRealPathResolvesWhatExists: realPath is the path made absolute, the
// links of its longest existing prefix resolved, and the folders not made
// yet appended as given.
func TestRealPathResolvesWhatExists(t *testing.T) {
	dir := t.TempDir()
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "target"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(dir, "target"), filepath.Join(dir, "link")))
	cwd, err := os.Getwd()
	require.NoError(t, err)
	realCwd, err := filepath.EvalSymlinks(cwd)
	require.NoError(t, err)
	for in, want := range map[string]string{
		filepath.Join(dir, "target"):                 filepath.Join(real, "target"),
		filepath.Join(dir, "link"):                   filepath.Join(real, "target"),
		filepath.Join(dir, "link", "new", "deeper"):  filepath.Join(real, "target", "new", "deeper"),
		filepath.Join(dir, "new"):                    filepath.Join(real, "new"),
		filepath.Join(dir, "link", "..", "new", "x"): filepath.Join(real, "new", "x"),
		".":   realCwd,
		"new": filepath.Join(realCwd, "new"),
	} {
		got, err := realPath(in)
		if assert.NoError(t, err, in) {
			assert.Equal(t, want, got, in)
		}
	}
}

package gen

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGeneratedCodeReadsLikeTheSpec: each file names its spec on the line
// after the header, the rules of a call come in the spec's order, each
// carrying its spec position, and the output is gofmt -s clean.
func TestGeneratedCodeReadsLikeTheSpec(t *testing.T) {
	specs, err := LoadDir("../spec")
	require.NoError(t, err)
	out, err := Generate(specs, DefaultOptions)
	require.NoError(t, err)
	dir := t.TempDir()
	for name, b := range out {
		require.NoError(t, os.WriteFile(filepath.Join(dir, strings.ReplaceAll(name, "/", "_")), b, 0o644))
	}
	for _, s := range specs {
		for _, name := range []string{s.FileStem() + "_spec.go", s.FileStem() + "_calls.go", CasesPackage(s.Store) + "/" + s.FileStem() + "_cases.go"} {
			b, ok := out[StorePackage(s.Store)+"/"+name]
			require.True(t, ok, "%s: no %s", s.File, name)
			assert.True(t, strings.HasPrefix(string(b), "// "+Header+"\n// source: "+s.File+"\n\n"), "%s/%s", s.Store, name)
		}
		calls := string(out[StorePackage(s.Store)+"/"+s.FileStem()+"_calls.go"])
		for _, c := range s.Calls {
			at := -1
			for _, r := range c.Codes {
				i := strings.Index(calls, "// "+r.Pos.String()+"\n")
				require.GreaterOrEqual(t, i, 0, "%s: %s's rule for %s carries no position", s.File, c.Name, r.Code)
				assert.Greater(t, i, at, "%s: %s's rule for %s is out of the spec's order", s.File, c.Name, r.Code)
				at = i
			}
		}
	}
	cmd := exec.Command("gofmt", "-s", "-l", dir)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, string(b))
	assert.Empty(t, regexp.MustCompile(`\S+`).FindAllString(string(b), -1), "gofmt -s would rewrite these")
}

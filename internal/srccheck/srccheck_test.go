package srccheck_test

import (
	"go/ast"
	"go/parser"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/internal/srccheck"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// parse parses one file of source for l.
func parse(t *testing.T, l *srccheck.Loader, src string) []*ast.File {
	t.Helper()
	f, err := parser.ParseFile(l.Fset, "src.go", src, 0)
	require.NoError(t, err)
	return []*ast.File{f}
}

// TestSourceIsCheckedAgainstTheLoadedPackages: Load runs go list in the
// folder it is given (the patterns are relative to it), keeps every
// package and dependency by import path, and Check type-checks source
// importing them, filling in its uses, definitions, selections and types.
func TestSourceIsCheckedAgainstTheLoadedPackages(t *testing.T) {
	l, err := srccheck.Load("../..", "./internal/srccheck")
	require.NoError(t, err)
	self := l.Packages["github.com/kvblob/kvblob/internal/srccheck"]
	require.NotNil(t, self, "the pattern's package")
	dir, err := filepath.Abs(".")
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, "srccheck.go")}, self.Files())
	require.NotNil(t, l.Packages["go/types"], "a dependency")
	assert.True(t, l.Packages["go/types"].Standard)
	assert.NotEmpty(t, l.Packages["go/types"].Export)

	files := parse(t, l, `package p

import "go/token"

type T struct{}

func (T) M() token.Pos { return token.NoPos }

var _ = T{}.M
`)
	pkg, info, errs := l.Check("example.com/p", files)
	require.Empty(t, errs)
	assert.Equal(t, "p", pkg.Name())
	assert.NotEmpty(t, info.Types)
	assert.NotEmpty(t, info.Selections, "T{}.M")
	var used []string
	for id, obj := range info.Uses {
		if obj.Pkg() != nil && obj.Pkg().Path() == "go/token" {
			used = append(used, id.Name)
		}
	}
	assert.ElementsMatch(t, []string{"Pos", "NoPos"}, used)
	assert.NotNil(t, pkg.Scope().Lookup("T"))
	assert.NotEmpty(t, info.Defs)
}

// TestEveryTypeErrorIsReturned: Check returns every error, not the first.
func TestEveryTypeErrorIsReturned(t *testing.T) {
	l, err := srccheck.Load(".", "go/token")
	require.NoError(t, err)
	_, _, errs := l.Check("example.com/p", parse(t, l, `package p

var a int = "one"
var b string = 2
`))
	require.Len(t, errs, 2)
	assert.Contains(t, errs[0].Error(), `cannot use "one"`)
	assert.Contains(t, errs[1].Error(), "cannot use 2")
}

// TestWhatCannotBeCheckedIsNamed: an import the patterns did not load, a
// pattern go list cannot read (every one, not the first) and a go list
// that fails are errors naming what and why.
func TestWhatCannotBeCheckedIsNamed(t *testing.T) {
	l, err := srccheck.Load(".", "go/token")
	require.NoError(t, err)
	_, _, errs := l.Check("example.com/p", parse(t, l, "package p\n\nimport _ \"net/http\"\n"))
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), `no export data for "net/http": add it to the patterns given to srccheck.Load`)

	_, err = srccheck.Load(".", "./nosuch", "./nosuch2")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "srccheck: ./nosuch: ")
	assert.Contains(t, err.Error(), "srccheck: ./nosuch2: ")
	assert.Contains(t, err.Error(), "directory not found")

	bad := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bad, "go.mod"), []byte("module\n"), 0o644))
	_, err = srccheck.Load(bad, "./...")
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "srccheck: go [list "), err.Error())
	assert.Contains(t, err.Error(), "go.mod", "go list's own words")
}

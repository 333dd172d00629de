// Package srccheck type-checks Go source for the tests that hold the
// tree's text to a rule: the doc snippets that must compile, the library
// that must not read zerolog's globals. It asks the go command for the
// compiled export data of every package the source imports (go list
// -export, from the build cache, offline) and type-checks the source
// against it with go/types: no package is compiled from source twice,
// and nothing is fetched.
package srccheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// Package is what go list says of one package.
type Package struct {
	ImportPath string
	Dir        string
	Name       string
	GoFiles    []string
	Export     string
	Standard   bool
	Error      *struct{ Err string }
}

// Loader holds the export data of a set of packages and their
// dependencies, and type-checks source against it.
type Loader struct {
	Fset     *token.FileSet
	Packages map[string]*Package // by import path: the patterns' and every dependency
	imp      types.Importer
}

// Load runs go list -export -deps on patterns in dir (a folder of the
// module), so that source importing any of those packages, or their
// dependencies, can be type-checked.
func Load(dir string, patterns ...string) (*Loader, error) {
	args := append([]string{"list", "-e", "-export", "-deps", "-json=ImportPath,Dir,Name,GoFiles,Export,Standard,Error"}, patterns...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("srccheck: go %v: %w\n%s", args, err, stderr.String())
	}
	l := &Loader{Fset: token.NewFileSet(), Packages: map[string]*Package{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	var errs []error
	for {
		p := new(Package)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("srccheck: reading go list's output: %w", err)
		}
		if p.Error != nil {
			errs = append(errs, fmt.Errorf("srccheck: %s: %s", p.ImportPath, p.Error.Err))
		}
		l.Packages[p.ImportPath] = p
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	l.imp = importer.ForCompiler(l.Fset, "gc", func(path string) (io.ReadCloser, error) {
		p := l.Packages[path]
		if p == nil || p.Export == "" {
			return nil, fmt.Errorf("no export data for %q: add it to the patterns given to srccheck.Load", path)
		}
		return os.Open(p.Export)
	})
	return l, nil
}

// Importer returns an importer of the loaded packages' export data.
func (l *Loader) Importer() types.Importer { return l.imp }

// Check type-checks files as the package path, returning every error
// (not only the first) and the type information of uses, definitions,
// selections and types.
func (l *Loader) Check(path string, files []*ast.File) (*types.Package, *types.Info, []error) {
	info := &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Defs:       map[*ast.Ident]types.Object{},
		Uses:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	var errs []error
	conf := types.Config{Importer: l.imp, Error: func(err error) { errs = append(errs, err) }}
	pkg, _ := conf.Check(path, l.Fset, files, info)
	return pkg, info, errs
}

// Files returns the paths of p's Go files (build constraints applied, no
// test files).
func (p *Package) Files() []string {
	out := make([]string, len(p.GoFiles))
	for i, f := range p.GoFiles {
		out[i] = filepath.Join(p.Dir, f)
	}
	return out
}

package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// insideModule refuses an -out folder outside the module that holds the
// specs (the nearest folder at or above specDir with a go.mod): generated
// packages import the module's runtime and belong to it, and a mistyped
// "../.." or "/" must not make generate write, or remove stale files, in
// another tree. Both paths are compared with their links resolved, as far
// as they exist.
func insideModule(specDir, outDir string) error {
	spec, err := realPath(specDir)
	if err != nil {
		return fmt.Errorf("-spec %q: %w", specDir, err)
	}
	mod := spec
	for {
		if _, err := os.Stat(filepath.Join(mod, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(mod)
		if up == mod {
			return fmt.Errorf("-spec %q is in no Go module (no go.mod at or above it); generate writes only inside the module that holds the specs", specDir)
		}
		mod = up
	}
	out, err := realPath(outDir)
	if err != nil {
		return fmt.Errorf("-out %q: %w", outDir, err)
	}
	rel, err := filepath.Rel(mod, out)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("-out %q is outside the module at %s (the go.mod above -spec); generate writes only inside it: give a folder under it, such as %s", outDir, mod, filepath.Join(mod, "generated"))
	}
	return nil
}

// realPath is p made absolute, with the links of its longest existing
// prefix resolved and the rest (folders generate would make) appended.
func realPath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; {
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		up := filepath.Dir(dir)
		if up == dir {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = up
	}
}

package gen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kvblob/kvblob/runtime/rules"
)

// MaxSpecBytes bounds a spec file: a spec is a short text file, and
// anything larger is refused before it is parsed.
const MaxSpecBytes = 1 << 20

// ReadSpec reads the spec file at name, refusing what is not a regular
// file (a device such as /dev/zero, a FIFO, a folder) and anything larger
// than MaxSpecBytes.
func ReadSpec(name string) ([]byte, error) {
	info, err := os.Stat(name)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %s, not a regular file; a spec is a YAML file", name, fileKind(info.Mode()))
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSpecBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("%s: larger than %d bytes (1 MiB); a spec is a short YAML file", name, MaxSpecBytes)
	}
	return data, nil
}

func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// LoadDir loads every *.yaml spec in dir, reporting every file's errors at
// once, by the path it was found under (dir/<file>). A spec that loads is
// then named "spec/<file>" (in generated code), whatever dir is, so output
// does not depend on where drivergen runs. Two specs for one store, or for
// one package, are refused (CheckSet).
func LoadDir(dir string) ([]*Spec, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml spec files; run drivergen from the repository root or pass -spec", dir)
	}
	sort.Strings(names)
	var specs []*Spec
	var all ErrorList
	for _, name := range names {
		data, err := ReadSpec(name)
		if err != nil {
			return nil, err
		}
		s, err := Load(name, data)
		var list ErrorList
		if errors.As(err, &list) {
			all = append(all, list...)
			continue
		} else if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	all = append(all, CheckSet(specs)...)
	if len(all) > 0 {
		all.sort()
		return nil, all
	}
	for _, s := range specs {
		s.relabel("spec/" + filepath.Base(s.File))
	}
	return specs, nil
}

// CheckSet refuses two specs of one store and SDK whose versions overlap
// (the same version, or a release line and a version in it: "7" and
// "7.2"), and two specs for one package: each error names the other's
// position. Two SDK versions of one store are two spec files with two
// packages, and the driver picks by the SDK and version it reports
// (rules.Pick), so a reported version must lead to exactly one spec.
func CheckSet(specs []*Spec) ErrorList {
	var errs ErrorList
	pkgs := map[string]*Spec{}
	for i, s := range specs {
		for _, prev := range specs[:i] {
			if prev.Store != s.Store || prev.SDK.Name != s.SDK.Name {
				continue
			}
			if v, w, ok := rules.VersionsOverlap(s.SDK.Versions, prev.SDK.Versions); ok {
				what := fmt.Sprintf("is also described by %s (package %s)", prev.StorePos, prev.Package)
				if v != w {
					what = fmt.Sprintf("overlaps version %q of %s (package %s): a release line holds for every patch release in it", w, prev.StorePos, prev.Package)
				}
				errs = append(errs, Error{Pos: s.StorePos, Msg: fmt.Sprintf(
					"store %q at %s version %q %s; each version of a store has one spec", s.Store, s.SDK.Name, v, what)})
				break
			}
		}
		if prev, ok := pkgs[s.Package]; ok {
			errs = append(errs, Error{Pos: s.PackagePos, Msg: fmt.Sprintf(
				"package %q is also emitted by %s; give each spec its own package", s.Package, prev.PackagePos)})
		} else {
			pkgs[s.Package] = s
		}
	}
	errs.sort()
	return errs
}

// IsGenerated reports whether b starts with the drivergen header, so that
// generate and check may treat the file as theirs.
func IsGenerated(b []byte) bool {
	return bytes.HasPrefix(b, []byte("// "+Header+"\n"))
}

// Packages returns the package folders that want's files (as Generate
// returns them, "<package>spec/<file>" and
// "<package>spec/<package>cases/<file>") live in, sorted. These are the
// only folders drivergen owns under an output folder.
func Packages(want map[string][]byte) []string {
	seen := map[string]bool{}
	var pkgs []string
	for name := range want {
		pkg := path.Dir(name)
		if !seen[pkg] {
			seen[pkg] = true
			pkgs = append(pkgs, pkg)
		}
	}
	sort.Strings(pkgs)
	return pkgs
}

// Drift compares want (as Generate returns it) with the tree under outDir.
// It returns the files that differ or are missing, and the generated files
// that no spec produces any more. It looks for stale files only directly
// inside the package folders want owns (Packages), and takes only
// regular .go files that start with drivergen's header: a file anywhere
// else, or one drivergen did not write, is never stale. A missing outDir
// (or package folder) is no error: every file in it differs.
func Drift(outDir string, want map[string][]byte) (differ, stale []string, err error) {
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(outDir, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, b) {
			differ = append(differ, name)
		}
	}
	for _, pkg := range Packages(want) {
		entries, err := os.ReadDir(filepath.Join(outDir, filepath.FromSlash(pkg)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		for _, e := range entries {
			rel := pkg + "/" + e.Name()
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".go") || want[rel] != nil {
				continue
			}
			gen, err := isGeneratedFile(filepath.Join(outDir, filepath.FromSlash(pkg), e.Name()))
			if err != nil {
				return nil, nil, err
			}
			if gen {
				stale = append(stale, rel)
			}
		}
	}
	sort.Strings(differ)
	sort.Strings(stale)
	return differ, stale, nil
}

// isGeneratedFile reports whether the file at p starts with drivergen's
// header, reading no more than the header.
func isGeneratedFile(p string) (bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	head := make([]byte, len("// "+Header+"\n"))
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return IsGenerated(head[:n]), nil
}

// CheckOut reports why generate must not write want into outDir, or nil.
// drivergen writes only into package folders of its own: it refuses an
// outDir that is a module root (it holds go.mod: "-out ." at the
// repository root would put packages beside it), a package path that is
// not a folder, and a package folder holding Go that drivergen did not
// write (a file without its header, other than a _test.go), which it would
// overwrite or mix its package into.
func CheckOut(outDir string, want map[string][]byte) error {
	if _, err := os.Stat(filepath.Join(outDir, "go.mod")); err == nil {
		return fmt.Errorf("%s holds go.mod: it is a module root, not a folder of generated packages; want -out naming the folder the packages go in (e.g. generated)", outDir)
	}
	var errs []error
	for _, pkg := range Packages(want) {
		dir := filepath.Join(outDir, filepath.FromSlash(pkg))
		info, err := os.Stat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if !info.IsDir() {
			errs = append(errs, fmt.Errorf("%s is not a folder; drivergen writes package %s there", dir, pkg))
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			if !e.Type().IsRegular() {
				errs = append(errs, fmt.Errorf("%s is not a regular file; drivergen writes only regular files into its package folders", p))
				continue
			}
			gen, err := isGeneratedFile(p)
			if err != nil {
				return err
			}
			if !gen {
				errs = append(errs, fmt.Errorf("%s does not start with %q: drivergen did not write it, and writes only into package folders of its own; move it, or pick another -out", p, "// "+Header))
			}
		}
	}
	return errors.Join(errs...)
}

// LineDiff returns a unified-style diff of a and b, naming them aName and
// bName, with three lines of context. It is for short files: it costs
// len(a)*len(b).
func LineDiff(aName, bName string, a, b []byte) string {
	x, y := strings.SplitAfter(string(a), "\n"), strings.SplitAfter(string(b), "\n")
	n, m := len(x), len(y)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		op   byte
		text string
	}
	var ops []line
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			ops = append(ops, line{' ', x[i]})
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, line{'+', y[j]})
			j++
		default:
			ops = append(ops, line{'-', x[i]})
			i++
		}
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", aName, bName)
	for k, l := range ops {
		near := false
		for d := -3; d <= 3; d++ {
			if k+d >= 0 && k+d < len(ops) && ops[k+d].op != ' ' {
				near = true
			}
		}
		if !near {
			continue
		}
		text := strings.TrimSuffix(l.text, "\n")
		out.WriteString(string(l.op) + text + "\n")
	}
	return out.String()
}

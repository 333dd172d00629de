package gen

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
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

// CheckSet refuses what one store's specs cannot share its generated
// package with (each error names the other's position):
//
//   - two specs of one store and SDK whose versions overlap (the same
//     version, or a release line and a version in it: "7.x" and "7.2"):
//     the driver picks by the SDK and version it reports (rules.Pick), so
//     a reported version must lead to exactly one spec;
//   - a spec file whose name is no stem of lower-case parts (stemRE), or
//     whose Go name (Spec.GoName) is another's of its store, one of the
//     package's own names, or a code's;
//   - specs of one store that declare different calls, or one call
//     answering differently (code or size): one driver makes the same
//     calls to every version, through the typed fields of one Calls;
//   - a code name with two values, or a value with two names, across one
//     store's specs: the store's package declares one Code constant per
//     name;
//   - some specs of a store naming a variant and others none.
func CheckSet(specs []*Spec) ErrorList {
	var errs ErrorList
	at := func(p Pos, format string, args ...any) {
		errs = append(errs, Error{Pos: p, Msg: fmt.Sprintf(format, args...)})
	}
	first := map[string]*Spec{}
	names := map[string]map[string]string{} // per store: Go name -> what declares it
	codes := map[string]map[string]Code{}   // per store: code name -> its first declaration
	values := map[string]map[int64]Code{}   // per store: code value -> its first declaration
	for i, s := range specs {
		for _, prev := range specs[:i] {
			if prev.Store != s.Store || prev.SDK.Name != s.SDK.Name {
				continue
			}
			if v, w, ok := rules.VersionsOverlap(s.SDK.Versions, prev.SDK.Versions); ok {
				what := fmt.Sprintf("is also described by %s", prev.StorePos)
				if v != w {
					what = fmt.Sprintf("overlaps version %q of %s: a release line holds for every patch release in it", w, prev.StorePos)
				}
				at(s.StorePos, "store %q at %s version %q %s; each version of a store has one spec", s.Store, s.SDK.Name, v, what)
				break
			}
		}
		top := Pos{s.File, 1, 1}
		f, ok := first[s.Store]
		if !ok {
			first[s.Store], f = s, s
			names[s.Store] = map[string]string{}
			for _, n := range packageNames {
				names[s.Store][n] = "the generated package's own " + n
			}
			codes[s.Store], values[s.Store] = map[string]Code{}, map[int64]Code{}
		}
		taken := names[s.Store]
		if !stemRE.MatchString(s.Stem()) {
			at(top, "the spec file's name %q (without .yaml) must be letters and digits in parts joined by \"-\", \".\", \"_\" or \"+\", starting with a letter (redis-valkey-8.1): it names the spec's value (Go name) and files in generated/%s", s.Stem(), s.Store)
		} else if prev, dup := taken[s.GoName()]; dup {
			at(top, "the spec file's name %q becomes the Go name %s, which %s declares too; rename the spec file", s.Stem(), s.GoName(), prev)
		} else {
			taken[s.GoName()] = "spec " + s.File
		}
		for _, c := range s.Codes {
			if prev, ok := codes[s.Store][c.Name]; ok {
				if prev.Value != c.Value {
					at(c.Pos, "code %s is %d here and %d in %s; store %q's package declares one constant per code name, so every spec of the store gives a code one value (a renumbered code is a new name)", c.Name, c.Value, prev.Value, prev.Pos, s.Store)
				}
				continue
			}
			if prev, ok := values[s.Store][c.Value]; ok && prev.Name != c.Name {
				at(c.Pos, "code %s has value %d, which %s names %s; every spec of store %q gives a value one name", c.Name, c.Value, prev.Pos, prev.Name, s.Store)
				continue
			}
			if prev, dup := taken[goName(c.Name)]; dup {
				at(c.Pos, "code %s becomes the Go name %s, which %s declares too; the store's package would not compile, so give the code another name", c.Name, goName(c.Name), prev)
				continue
			}
			taken[goName(c.Name)] = fmt.Sprintf("code %s (%s)", c.Name, c.Pos)
			codes[s.Store][c.Name], values[s.Store][c.Value] = c, c
		}
		if s == f {
			if s.Variant != "" {
				if prev, dup := taken["Variant"+goName(s.Variant)]; dup {
					at(s.VariantPos, "variant %s becomes the Go name Variant%s, which %s declares too; name the variant otherwise", s.Variant, goName(s.Variant), prev)
				}
				taken["Variant"+goName(s.Variant)] = "variant " + s.Variant
			}
			continue
		}
		switch {
		case (s.Variant == "") != (f.Variant == ""):
			p, q := s.VariantPos, f.VariantPos
			if s.Variant == "" {
				p = top
			}
			at(p, "variant is %q here and %q in %s (store %q's first spec, %s); every spec of a store names its variant, or none does", s.Variant, f.Variant, f.File, s.Store, q)
		case s.Variant != "":
			if prev, dup := taken["Variant"+goName(s.Variant)]; dup && prev != "variant "+s.Variant {
				at(s.VariantPos, "variant %s becomes the Go name Variant%s, which %s declares too; name the variant otherwise", s.Variant, goName(s.Variant), prev)
			}
			taken["Variant"+goName(s.Variant)] = "variant " + s.Variant
		}
		fc := map[string]*Call{}
		for _, c := range f.Calls {
			fc[c.Name] = c
		}
		for _, c := range s.Calls {
			o, ok := fc[c.Name]
			switch {
			case !ok:
				at(c.Pos, "call %s is not a call of %s (store %q's first spec, which declares %s); every spec of a store declares the same calls, since one driver makes them through the store's Calls", c.Name, f.File, s.Store, callNames(f))
			case o.Answers != c.Answers:
				at(c.Pos, "call %s answers %s here and %s in %s (%s); its field of the store's Calls has one type, so every spec of the store says alike", c.Name, c.Answers, o.Answers, f.File, o.Pos)
			}
			delete(fc, c.Name)
		}
		for _, c := range f.Calls {
			if _, missing := fc[c.Name]; missing {
				at(top, "declares no call %s, which %s (store %q's first spec) declares at %s; every spec of a store declares the same calls, since one driver makes them through the store's Calls", c.Name, f.File, s.Store, c.Pos)
			}
		}
	}
	errs.sort()
	return errs
}

func callNames(s *Spec) string {
	var n []string
	for _, c := range s.Calls {
		n = append(n, c.Name)
	}
	return strings.Join(n, ", ")
}

// IsGenerated reports whether b starts with the drivergen header, so that
// generate and check may treat the file as theirs.
func IsGenerated(b []byte) bool {
	return bytes.HasPrefix(b, []byte("// "+Header+"\n"))
}

// Packages returns the package folders that want's files (as Generate
// returns them: "<store>/<file>" and "<store>/<store>cases/<file>") live
// in, sorted. These are the folders generate writes into.
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
// that no spec produces any more: regular .go files (not a _test.go) that
// start with drivergen's header and that want lacks, directly inside a
// package folder want writes (Packages), or anywhere under a folder of
// outDir that is wholly drivergen's (every .go file in it and below,
// tests aside, carries the header): so a whole package folder no spec
// owns any more (a store renamed, an older layout) is stale with all its
// files, while a folder holding Go drivergen did not write is never
// looked into. A missing outDir (or package folder) is no error: every
// file in it differs.
func Drift(outDir string, want map[string][]byte) (differ, stale []string, err error) {
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(outDir, filepath.FromSlash(name)))
		if err != nil || !bytes.Equal(got, b) {
			differ = append(differ, name)
		}
	}
	seen := map[string]bool{}
	add := func(rel string) {
		if want[rel] == nil && !seen[rel] {
			seen[rel] = true
			stale = append(stale, rel)
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
			if !e.Type().IsRegular() || !isGoSource(e.Name()) {
				continue
			}
			gen, err := isGeneratedFile(filepath.Join(outDir, filepath.FromSlash(pkg), e.Name()))
			if err != nil {
				return nil, nil, err
			}
			if gen {
				add(pkg + "/" + e.Name())
			}
		}
	}
	top, err := os.ReadDir(outDir)
	if errors.Is(err, fs.ErrNotExist) {
		top, err = nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	for _, e := range top {
		if !e.IsDir() {
			continue
		}
		files, err := ownedFiles(outDir, e.Name())
		if err != nil {
			return nil, nil, err
		}
		for _, f := range files {
			add(f)
		}
	}
	sort.Strings(differ)
	sort.Strings(stale)
	return differ, stale, nil
}

func isGoSource(name string) bool {
	return strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go")
}

// errNotOurs stops ownedFiles' walk at the first Go file drivergen did
// not write.
var errNotOurs = errors.New("a Go file drivergen did not write")

// ownedFiles returns the .go files (tests aside) under outDir/dir, as
// paths relative to outDir, when every one of them is a regular file
// starting with drivergen's header; otherwise none.
func ownedFiles(outDir, dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(outDir, dir), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() || !isGoSource(e.Name()) {
			return nil
		}
		if !e.Type().IsRegular() {
			return errNotOurs
		}
		gen, err := isGeneratedFile(p)
		if err != nil {
			return err
		}
		if !gen {
			return errNotOurs
		}
		rel, err := filepath.Rel(outDir, p)
		files = append(files, filepath.ToSlash(rel))
		return err
	})
	if errors.Is(err, errNotOurs) {
		return nil, nil
	}
	return files, err
}

// EmptiedFolders returns the folders between each of removed (paths under
// outDir, as Drift returns them) and outDir, deepest first: once the stale
// files are removed, generate removes each of these that is left empty,
// so a package folder no spec owns goes with its files, while one still
// holding anything (a hand-written test) stays.
func EmptiedFolders(removed []string) []string {
	seen := map[string]bool{}
	var dirs []string
	for _, name := range removed {
		for d := path.Dir(name); d != "." && !seen[d]; d = path.Dir(d) {
			seen[d] = true
			dirs = append(dirs, d)
		}
	}
	slices.SortFunc(dirs, func(a, b string) int {
		return cmp.Or(cmp.Compare(strings.Count(b, "/"), strings.Count(a, "/")), strings.Compare(a, b))
	})
	return dirs
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
// overwrite or mix its package into. It names every such path, and every
// one it could not read.
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
			errs = append(errs, err)
			continue
		}
		if !info.IsDir() {
			errs = append(errs, fmt.Errorf("%s is not a folder; drivergen writes package %s there", dir, pkg))
			continue
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, err)
			continue
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
				errs = append(errs, err)
				continue
			}
			if !gen {
				errs = append(errs, fmt.Errorf("%s does not start with %q: drivergen did not write it, and writes only into package folders of its own; move it, or pick another -out", p, "// "+Header))
			}
		}
	}
	return errors.Join(errs...)
}

// diffLines is b's lines, each with its newline; a last line without one
// is a line too, and the empty rest after a final newline is not.
func diffLines(b []byte) []string {
	lines := strings.SplitAfter(string(b), "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// LineDiff returns a unified-style diff of a and b, naming them aName and
// bName, with three lines of context. It is for short files: it costs
// len(a)*len(b).
func LineDiff(aName, bName string, a, b []byte) string {
	x, y := diffLines(a), diffLines(b)
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
		case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, line{'-', x[i]}) // a change's old lines first, as diff -u
			i++
		default:
			ops = append(ops, line{'+', y[j]})
			j++
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

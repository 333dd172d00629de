package gen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// LoadDir loads every *.yaml spec in dir, reporting every file's errors at
// once. Each spec is named "spec/<file>" (in errors and in generated code),
// whatever dir is, so output does not depend on where drivergen runs.
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
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		s, err := Load("spec/"+filepath.Base(name), data)
		var list ErrorList
		if errors.As(err, &list) {
			all = append(all, list...)
			continue
		} else if err != nil {
			return nil, err
		}
		specs = append(specs, s)
	}
	if len(all) > 0 {
		return nil, all
	}
	return specs, nil
}

// IsGenerated reports whether b starts with the drivergen header, so that
// generate and check may treat the file as theirs.
func IsGenerated(b []byte) bool {
	return bytes.HasPrefix(b, []byte("// "+Header+"\n"))
}

// Drift compares want (as Generate returns it) with the tree under outDir.
// It returns the files that differ or are missing, and the generated files
// under outDir that no spec produces any more.
func Drift(outDir string, want map[string][]byte) (differ, stale []string, err error) {
	for name, b := range want {
		got, err := os.ReadFile(filepath.Join(outDir, name))
		if err != nil || !bytes.Equal(got, b) {
			differ = append(differ, name)
		}
	}
	err = filepath.WalkDir(outDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") {
			return err
		}
		rel, _ := filepath.Rel(outDir, p)
		if _, ok := want[filepath.ToSlash(rel)]; ok {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if IsGenerated(b) {
			stale = append(stale, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(differ)
	sort.Strings(stale)
	return differ, stale, err
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

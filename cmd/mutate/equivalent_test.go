package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheListOfEquivalentsIsReadOrRefusedAtItsLine: each entry is a
// heading "file: change: source line" and an indented reason; anything
// else is refused with list:line and what was wanted there.
func TestTheListOfEquivalentsIsReadOrRefusedAtItsLine(t *testing.T) {
	for _, c := range []struct {
		name, list string
		want       []Equivalent // At, File, Change, Nth, Line, Reason
		err        string
	}{
		{
			name: "entries, comments and blank lines",
			list: "# a comment\n\na/a.go: > -> >=: if v > hi {\n\tthe same\n  on two lines\n\nb/b.go: 1 -> 2@2: x := f(1, 1)\n\tthe second 1\n",
			want: []Equivalent{
				{At: "eq.txt:3", File: "a/a.go", Change: "> -> >=", Line: "if v > hi {", Reason: "the same on two lines"},
				{At: "eq.txt:7", File: "b/b.go", Change: "1 -> 2", Nth: 2, Line: "x := f(1, 1)", Reason: "the second 1"},
			},
		},
		{name: "a source line holding ': '", list: "a/a.go: drop statement: fmt.Printf(\"a: %d\", n)\n\twhy\n",
			want: []Equivalent{{At: "eq.txt:1", File: "a/a.go", Change: "drop statement", Line: "fmt.Printf(\"a: %d\", n)", Reason: "why"}}},
		{name: "empty", list: "# nothing yet\n"},
		{name: "no reason", list: "a/a.go: > -> >=: if v > hi {\nb/b.go: drop statement: f()\n\twhy\n", err: "eq.txt:1: the entry \"a/a.go: > -> >=: if v > hi {\" has no reason; want it on the next lines, indented"},
		{name: "no reason at the end", list: "a/a.go: drop statement: f()\n", err: "eq.txt:1: the entry"},
		{name: "reason first", list: "\twhy\n", err: "eq.txt:1: an indented reason before any entry; want an entry \"file.go: change: source line\" first"},
		{name: "no source line", list: "# c\na/a.go: drop statement\n\twhy\n", err: "eq.txt:2: \"a/a.go: drop statement\" is not an entry; want \"file.go: change: source line\""},
		{name: "a line number, not a change", list: "a/a.go:9: > -> >=: if v > hi {\n\twhy\n", err: "eq.txt:1: \"a/a.go:9\" is not a file to mutate"},
		{name: "a test file", list: "a/a_test.go: drop statement: f()\n\twhy\n", err: "is not a file to mutate; want a non-test .go file"},
		{name: "an absolute path", list: "/src/a/a.go: drop statement: f()\n\twhy\n", err: "eq.txt:1: \"/src/a/a.go\" is not a file to mutate"},
		{name: "an unknown change", list: "a/a.go: swap arguments: f(a, b)\n\twhy\n", err: "eq.txt:1: \"swap arguments\" is not a change; want one as -list prints it"},
		{name: "@0", list: "a/a.go: 1 -> 2@0: f(1)\n\twhy\n", err: "eq.txt:1: \"1 -> 2@0\" is not a change"},
		{name: "listed twice", list: "a/a.go: drop statement: f()\n\twhy\n\na/a.go: drop statement: f()\n\tagain\n", err: "eq.txt:4: \"a/a.go: drop statement: f()\" is listed already at eq.txt:1; want each mutant once"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseEquivalents("eq.txt", c.list)
			if c.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.err)
				return
			}
			require.NoError(t, err)
			var plain []Equivalent
			for _, e := range got {
				plain = append(plain, *e)
			}
			assert.Equal(t, c.want, plain)
		})
	}
}

// TestAnEntryNamesItsMutantByChangeAndLineNotLineNumber: an entry matches
// the mutant of its file with its change on its source line wherever the
// line has moved; @N picks among several alike, in source order; one that
// matches none is stale, one that matches several without @N ambiguous;
// entries for files outside the unit are not judged.
func TestAnEntryNamesItsMutantByChangeAndLineNotLineNumber(t *testing.T) {
	root := t.TempDir()
	src := "package p\n\nfunc f(a, b int) int {\n\tif a > b {\n\t\treturn f(1, 1)\n\t}\n\treturn g(1, 1)\n}\n\nfunc g(a, b int) int {\n\treturn f(1, 1)\n}\n"
	chain := "package p\n\nfunc h(x, y, z bool) bool {\n\treturn x && y && z\n}\n"
	moved := "package p\n\n// a comment that moves every line down\n\n" + src[len("package p\n\n"):]
	for _, c := range []struct {
		name  string
		src   string
		entry string
		want  []string // the listed mutants' "line:col desc"
		stale string   // what the problem line says, if any
	}{
		{"unique", src, "p/p.go: > -> >=: if a > b {", []string{"4:7 > -> >="}, ""},
		{"unique, after the lines moved", moved, "p/p.go: > -> >=: if a > b {", []string{"6:7 > -> >="}, ""},
		{"another change at the same position is not listed", src, "p/p.go: > -> <=: if a > b {", []string{"4:7 > -> <="}, ""},
		{"@N picks on the line", src, "p/p.go: 1 -> 2@2: return f(1, 1)", []string{"5:15 1 -> 2"}, ""},
		{"@N counts lines alike in source order", src, "p/p.go: 1 -> 2@3: return f(1, 1)", []string{"11:11 1 -> 2"}, ""},
		// (x && y) && z: the walk meets the outer && (the second) first.
		{"@N counts in source order where the walk does not", chain, "p/p.go: && -> ||@1: return x && y && z", []string{"4:11 && -> ||"}, ""},
		{"@N counts in source order where the walk does not, the second", chain, "p/p.go: && -> ||@2: return x && y && z", []string{"4:16 && -> ||"}, ""},
		{"@N past the last", src, "p/p.go: 1 -> 2@5: return f(1, 1)", nil, "[stale: no mutant matches"},
		{"several without @N", src, "p/p.go: 1 -> 2: return g(1, 1)", nil, "[ambiguous: 2 mutants match (at 7:11, 7:14); add @N"},
		{"the line changed", src, "p/p.go: > -> >=: if a >= b {", nil, "eq.txt:1: p/p.go: > -> >=: if a >= b { [stale: no mutant matches"},
		{"the change is another", src, "p/p.go: < -> <=: if a > b {", nil, "[stale"},
		{"another file of the package", src, "p/q.go: > -> >=: if a > b {", nil, "[stale"},
		{"a file outside the unit", src, "r/p.go: > -> >=: if a > b {", nil, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(root, c.name)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "p"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "p", "p.go"), []byte(c.src), 0o644))
			ms, err := Mutants(filepath.Join(dir, "p"))
			require.NoError(t, err)
			list, err := parseEquivalents("eq.txt", c.entry+"\n\twhy\n")
			require.NoError(t, err)
			q := &equivalents{}
			u := &unit{dir: "p", pkgDir: "p"}
			problems := q.match(list, ms, dir, u.holds)
			var listed []string
			for _, m := range ms {
				if e := q.entry(m); e != nil {
					listed = append(listed, fmt.Sprintf("%d:%d %s", m.At[0], m.At[1], m.Desc))
				}
			}
			assert.Equal(t, c.want, listed)
			if c.stale == "" {
				assert.Empty(t, problems)
			} else {
				require.Len(t, problems, 1)
				assert.Contains(t, problems[0], c.stale)
			}
		})
	}
}

// TestTheReportScoresWithAndWithoutTheListed: the raw score is over every
// decided mutant, the second leaves the listed survivors out of the
// denominator; listed survivors are printed with their reasons apart from
// the unexplained ones, and a listed mutant a test killed or that hung is
// a wrong entry.
func TestTheReportScoresWithAndWithoutTheListed(t *testing.T) {
	e := &Equivalent{At: "eq.txt:3", Reason: "the mode is ignored"}
	m := func(line int, desc string) Mutant {
		return Mutant{File: "/r/p/p.go", Pos: fmt.Sprintf("/r/p/p.go:%d:2", line), Desc: desc, Line: "f()"}
	}
	r := &Report{Dir: "p", Pkg: "p", Total: 10, Tried: 8}
	for _, c := range []struct {
		m   Mutant
		v   verdict
		ran int
		e   *Equivalent
	}{
		{m(1, "drop statement"), killed, 1, nil},
		{m(2, "drop statement"), killed, 1, nil},
		{m(3, "drop statement"), killed, 1, nil},
		{m(4, "drop statement"), killed, 1, e}, // a wrong entry: counted as the kill it is
		{m(5, "drop statement"), survived, 1, e},
		{m(6, "drop statement"), survived, 0, e},
		{m(7, "drop statement"), survived, 1, nil},
		{m(8, "drop statement"), hung, 1, nil},
	} {
		where := ""
		if c.v == killed || c.v == hung {
			where = "p TestX"
		}
		r.record("/r", c.m, c.v, where, c.ran, time.Second, c.e)
	}
	r.Measuring = 90 * time.Second
	assert.Equal(t, 8, r.Decided())
	assert.Equal(t, 2, r.Equivalent)
	assert.Equal(t, 3, r.Survived)
	assert.Zero(t, r.KilledElsewhere, "p's own tests killed them")
	assert.InDelta(t, 62.5, r.Score(), 1e-9, "5 of 8: the hang under CI's -timeout is a kill")
	assert.InDelta(t, 5.0/6*100, r.ScoreWithout(), 1e-9, "5 of 6")
	var out bytes.Buffer
	r.Print(&out)
	s := out.String()
	assert.Contains(t, s, "p: score 62.5% of 8 decided, 83.3% of 6 without the 2 listed equivalent (5 killed (1 of them hung: timed out under CI's -timeout), 3 survived (2 listed equivalent, 1 run by no test);")
	assert.Contains(t, s, "  survived p/p.go:7:2: drop statement: f()\n")
	assert.Contains(t, s, "  equivalent p/p.go:5:2: drop statement: f() [the mode is ignored]\n")
	assert.Contains(t, s, "  equivalent p/p.go:6:2: drop statement: f() [no test runs this line] [the mode is ignored]\n")
	assert.Contains(t, s, "  WRONG ENTRY p/p.go:4:2: drop statement: f() [killed by a test, yet listed equivalent at eq.txt:3: the mode is ignored]\n")
	assert.NotContains(t, s, "survived p/p.go:5:2", "a listed survivor is not among the unexplained")
	assert.Contains(t, s, "; importers' coverage runs it waited for 1m30s, not in that\n")
	total := Total([]*Report{r, {Dir: "q", Killed: 2, Stale: []string{"eq.txt:9: q/q.go: drop statement: g() [stale: ...]"}}})
	assert.InDelta(t, 7.0/8*100, total.ScoreWithout(), 1e-9)
	out.Reset()
	total.Print(&out)
	assert.Contains(t, out.String(), "  WRONG ENTRY p/p.go:4:2", "the total names the list's faults again")
	assert.Contains(t, out.String(), "  STALE ENTRY eq.txt:9: q/q.go")
}

// TestARunReportsTheListedEquivalents: in the tiny module, Clamp's > to >=
// survives a's and b's tests (it returns hi for v == hi either way): listed,
// it is reported with its reason and left out of the second score; the
// listed > to <= is killed by b's test, a wrong entry; an entry whose line
// is gone is stale; -list marks the listed and names the stale too.
func TestARunReportsTheListedEquivalents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	list, err := parseEquivalents("eq.txt", `a/a.go: > -> >=: if v > hi {
	v == hi returns hi either way
a/a.go: > -> <=: if v > hi {
	wrongly listed
a/a.go: drop statement: gone()
	a line no longer there
b/b.go: drop statement: gone()
	b is not mutated in this run: not judged
`)
	require.NoError(t, err)
	cfg := Config{Root: mod, Budget: 5 * time.Minute, Timeout: time.Minute, Seed: 1, Jobs: 2, Importers: true, Race: "never", Only: []string{"a/a.go:9"}, Equivalents: list}
	var out bytes.Buffer
	rs, err := Run(cfg, []string{"a"}, &out)
	require.NoError(t, err, out.String())
	t.Log(out.String())
	r := rs[0]
	assert.Equal(t, 3, r.Decided())
	assert.Equal(t, 2, r.Killed)
	assert.Equal(t, 1, r.Equivalent)
	assert.Empty(t, r.Survivors, "the only survivor is listed")
	assert.InDelta(t, 100.0, r.ScoreWithout(), 1e-9)
	assert.InDelta(t, 2.0/3*100, r.Score(), 1e-9)
	s := out.String()
	assert.Contains(t, s, "  equivalent a/a.go:9:7: > -> >=: if v > hi { [v == hi returns hi either way]")
	assert.Contains(t, s, "  WRONG ENTRY a/a.go:9:7: > -> <=: if v > hi { [killed by a test, yet listed equivalent at eq.txt:3: wrongly listed]")
	assert.Contains(t, s, "  STALE ENTRY eq.txt:5: a/a.go: drop statement: gone() [stale")
	assert.NotContains(t, s, "eq.txt:7", "b's entry is not judged in a run that mutates only a")
	assert.Contains(t, s, "[listed equivalent]\n", "the progress line marks it")

	out.Reset()
	stale, err := List(mod, []string{"a"}, list, 1, &out)
	require.NoError(t, err)
	assert.Equal(t, 1, stale)
	assert.Contains(t, out.String(), "a/a.go:9:7: > -> >=: if v > hi { [listed equivalent at eq.txt:1]\n")
	assert.Contains(t, out.String(), "STALE ENTRY eq.txt:5: a/a.go: drop statement: gone()")
}

// TestTheCheckedInListMatchesTheTree: every entry of the list make mutate
// reads matches exactly one mutant of today's source, so the list is
// mended in the commit that moves a line, not found stale by the next run.
func TestTheCheckedInListMatchesTheTree(t *testing.T) {
	list, err := ReadEquivalents("equivalent.txt")
	require.NoError(t, err)
	require.NotEmpty(t, list)
	dirs := map[string]bool{}
	for _, e := range list {
		dirs[filepath.Dir(filepath.FromSlash(e.File))] = true
	}
	listed := 0
	for d := range dirs {
		var out bytes.Buffer
		stale, err := List("../..", []string{d}, list, 1, &out)
		require.NoError(t, err)
		assert.Zero(t, stale, out.String())
		listed += bytes.Count(out.Bytes(), []byte("[listed equivalent at "))
	}
	assert.Equal(t, len(list), listed, "each entry names one mutant")
}

// TestListPrintsTheOrderARunTries: -list prints a package's mutants in the
// order a run with the same -seed tries them (the order Run takes from
// tryOrder), so the mutants a short budget reaches can be read, and killed,
// before the run; another seed lists the same mutants in another order.
func TestListPrintsTheOrderARunTries(t *testing.T) {
	lines := func(seed int64) []string {
		var out bytes.Buffer
		_, err := List("../..", []string{"internal/srccheck"}, nil, seed, &out)
		require.NoError(t, err)
		return strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	ms, err := Mutants(filepath.Join(root, "internal/srccheck"))
	require.NoError(t, err)
	var want []string
	for _, m := range tryOrder(ms, 7) {
		want = append(want, fmt.Sprintf("%s:%d:%d: %s: %s", relFile(root, m.File), m.At[0], m.At[1], m.Desc, m.Line))
	}
	seven := lines(7)
	assert.Equal(t, want, seven, "the order Run tries under seed 7")
	assert.Equal(t, seven, lines(7), "a seed lists one order")
	other := lines(8)
	assert.NotEqual(t, seven, other, "another seed, another order")
	assert.ElementsMatch(t, seven, other, "the same mutants")
}

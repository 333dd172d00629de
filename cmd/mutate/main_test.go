package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

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
		mutated, err := m.Source()
		require.NoError(t, err)
		assert.NotEqual(t, src, string(mutated), "%s: %s changed nothing", m.Pos, m.Desc)
		assert.NotContains(t, m.Pos, "p_test.go")
	}
	all := strings.Join(descs, "\n")
	for _, want := range []string{"< -> >=", "< -> <=", "&& -> ||", "negate if condition", "drop statement", "0 -> 1", "7 -> 8"} {
		assert.Contains(t, all, want)
	}
	assert.NotContains(t, all, "3 -> 4", "constants are out of scope")
}

// mod is a tiny module: package a, whose tests check only Clamp's lower
// bound and Sum, and package b, which imports a and checks the upper bound.
const mod = "testdata/mod"

// positions returns the report's lines without the ": source line" tail:
// "file:line:col: change".
func positions(lines []string) []string {
	var out []string
	for _, l := range lines {
		parts := strings.SplitN(l, ": ", 3)
		out = append(out, parts[0]+": "+parts[1])
	}
	return out
}

// TestImportersTestsKillWhatThePackagesOwnMiss: the mutants of Clamp's
// upper bound survive a's own tests; with its importers' tests run too
// (the default) b's test kills the one that changes behaviour, and only
// the equivalent one (> to >=) survives. The report names b as the
// package whose tests killed each (tried: test returning no package for
// a kill past the first fails it).
func TestImportersTestsKillWhatThePackagesOwnMiss(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	cfg := Config{Root: mod, Budget: 5 * time.Minute, Timeout: time.Minute, Seed: 1, Jobs: 2, Race: "never", Only: []string{"a/a.go:9"}}
	var out bytes.Buffer
	own, err := Run(cfg, []string{"a"}, &out)
	require.NoError(t, err, out.String())
	cfg.Importers = true
	all, err := Run(cfg, []string{"a"}, &out)
	require.NoError(t, err, out.String())
	t.Log(out.String())

	require.Len(t, own, 1)
	assert.Equal(t, 1, own[0].Packages)
	assert.Equal(t, 3, own[0].Tried)
	assert.ElementsMatch(t, []string{"a/a.go:9:2: negate if condition", "a/a.go:9:7: > -> <=", "a/a.go:9:7: > -> >="}, positions(own[0].Survivors))
	assert.Equal(t, 2, all[0].Packages, "a's tests and b's")
	assert.Equal(t, []string{"a/a.go:9:7: > -> >="}, positions(all[0].Survivors))
	assert.Equal(t, 2, all[0].Killed)
	assert.Equal(t, 2, all[0].KilledElsewhere, "a's own tests passed both: b's killed them")
	for _, e := range all[0].Elsewhere {
		assert.Contains(t, e, "a/a.go:9:", "the mutant is named")
		assert.Contains(t, e, "/b's tests; the package's own passed]", "the package that killed it is named")
	}
	assert.Len(t, all[0].Elsewhere, 2)
	assert.Contains(t, out.String(), "killed only by another package's tests")
	assert.Zero(t, own[0].KilledElsewhere)
	assert.Contains(t, all[0].Survivors[0], "if v > hi {", "a survivor names its source line")
	assert.Positive(t, all[0].Measuring, "b's coverage run, measured when the first mutant reached b, is not charged to a")
}

// TestATestBinarysTimeIsReadFromGoTest: the -timeout follows the time go
// test says the binary ran, not the build's; unknown is 0.
func TestATestBinarysTimeIsReadFromGoTest(t *testing.T) {
	for _, c := range []struct {
		name, out string
		want      time.Duration
	}{
		{"ok", "ok  \texample.com/mod/a\t8.647s\n", 8647 * time.Millisecond},
		{"with coverage", "ok  \texample.com/mod/a\t0.012s\tcoverage: 50.0% of statements in example.com/mod/a\n", 12 * time.Millisecond},
		{"after the tests' output", "=== RUN   TestA\n--- PASS: TestA (0.00s)\nPASS\nok  \tp\t2s\n", 2 * time.Second},
		{"cached", "ok  \texample.com/mod/a\t(cached)\n", 0},
		{"failed", "--- FAIL: TestA (0.00s)\nFAIL\nFAIL\texample.com/mod/a\t0.004s\n", 0},
		{"a line that only starts with ok", "okay  \tp\t3s\n", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, binaryTime([]byte(c.out)))
		})
	}
}

// TestAHangUnderCIsTimeoutIsAKill: dropping Sum's i++ loops for ever; the
// test binary's timeout ends it, then its run again under CI's -timeout
// ends the same way: CI would see that test binary fail, so it counts as
// killed (and is listed as hung, with the tests that were running). Each
// kill's progress line names the package whose tests made it, the
// package's own too. The report prints the share sampled and every
// survivor and hang.
func TestAHangUnderCIsTimeoutIsAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	cfg := Config{Root: mod, Budget: 5 * time.Minute, Timeout: 2 * time.Second, CITimeout: 4 * time.Second, Seed: 1, Jobs: 2, Race: "never", Only: []string{"a/a.go:21", "a/a.go:18", "a/a.go:6:7"}}
	var out bytes.Buffer
	rs, err := Run(cfg, []string{"a"}, &out)
	require.NoError(t, err, out.String())
	r := rs[0]
	assert.Equal(t, []string{"a/a.go:21:3: drop statement"}, positions(r.Hangs))
	assert.Equal(t, []string{"a/a.go:18:7: 0 -> 1", "a/a.go:6:7: < -> <="}, positions(r.Survivors), "i := 0 -> 1 still sums 1+2+3; Clamp(-1, 0, 10) is 0 with v <= lo too")
	assert.Equal(t, 2, r.Killed, "the hang and Clamp's v >= lo")
	assert.Equal(t, 1, r.Hung)
	assert.Zero(t, r.KilledElsewhere, "a's own tests made every kill")
	assert.InDelta(t, 50.0, r.Score(), 1e-9, "a hang CI sees fail is a kill")
	assert.Contains(t, out.String(), "sampled 4 of 4 mutants (100%)")
	assert.Contains(t, out.String(), "  hung     a/a.go:21:3: drop statement: i++ [example.com/mod/a TestSum]")
	assert.Contains(t, out.String(), "decided 4 (")
	assert.Contains(t, out.String(), "  survived a/a.go:18:7: 0 -> 1: i := 0")
	for _, l := range strings.Split(out.String(), "\n") {
		if (strings.HasPrefix(l, "  killed ") || strings.HasPrefix(l, "  hung ")) && strings.Contains(l, "(tests of ") {
			assert.True(t, strings.HasSuffix(l, " by example.com/mod/a's tests"), "a kill's line names the package whose tests made it: %q", l)
		}
	}
	assert.Equal(t, 2, strings.Count(out.String(), "'s tests\n"), out.String())
}

// TestASlowMutantThatCIsTimeoutPassesSurvives: Slow made true makes
// TestSlow take 4 s, past the tool's -timeout (2 s) but within CI's (30
// s): run again under CI's it passes, so CI would pass it too, and it
// survives, saying so; the hang at the tool's -timeout decides nothing.
func TestASlowMutantThatCIsTimeoutPassesSurvives(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	cfg := Config{Root: mod, Budget: 5 * time.Minute, Timeout: 2 * time.Second, CITimeout: 30 * time.Second, Seed: 1, Jobs: 2, Race: "never", Only: []string{"d/d.go:5:29"}}
	var out bytes.Buffer
	rs, err := Run(cfg, []string{"d"}, &out)
	require.NoError(t, err, out.String())
	r := rs[0]
	assert.Equal(t, []string{"d/d.go:5:29: > -> <=", "d/d.go:5:29: > -> >="}, positions(r.Survivors), out.String())
	assert.Zero(t, r.Hung)
	assert.Zero(t, r.Killed)
	assert.Contains(t, out.String(), "  survived d/d.go:5:29: > -> <=: func Slow() bool { return 1 > 2 } [example.com/mod/d's tests passed in ")
	assert.Contains(t, out.String(), " under CI's -timeout 30s]\n")
}

// TestEveryPackageWithAMutantIsExpanded: "./..." names every package of
// the module that has a mutant: e's only mutated file is the one CI's
// -race build compiles (not its !race twin, a file no build makes, or a
// generated one), and f, all generated, is left out.
func TestEveryPackageWithAMutantIsExpanded(t *testing.T) {
	dirs, err := Expand(mod, []string{"./...", "a/a.go"})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "c", "d", "e", "a/a.go"}, dirs)
	ms, err := Mutants(filepath.Join(mod, "e"))
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	for _, m := range ms {
		assert.Equal(t, "race.go", filepath.Base(m.File), m.Pos)
	}
}

// TestTheBudgetSamples: with no budget left, nothing is tried, and the
// report says how few of the mutants were.
func TestTheBudgetSamples(t *testing.T) {
	var out bytes.Buffer
	rs, err := Run(Config{Root: mod, Budget: -time.Second, Timeout: time.Second, Race: "never"}, []string{"a"}, &out)
	require.NoError(t, err)
	assert.Zero(t, rs[0].Tried)
	assert.Greater(t, rs[0].Total, 10)
	assert.Contains(t, out.String(), fmt.Sprintf("sampled 0 of %d mutants (0%%)", rs[0].Total))
}

// TestRaceIsOnWhereThePackageIsConcurrent: a package that starts a
// goroutine or imports sync is tested with -race; one that does neither is
// not.
func TestRaceIsOnWhereThePackageIsConcurrent(t *testing.T) {
	for _, c := range []struct {
		name, src string
		want      bool
	}{
		{"plain", "package p\n\nfunc f() int { return 1 }\n", false},
		{"goroutine", "package p\n\nfunc f() { go func() {}() }\n", true},
		{"sync", "package p\n\nimport \"sync\"\n\nvar mu sync.Mutex\n", true},
		{"atomic", "package p\n\nimport \"sync/atomic\"\n\nvar n atomic.Int64\n", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "p.go"), []byte(c.src), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\n\nimport \"sync\"\n\nvar _ sync.Mutex\n"), 0o644))
			got, err := concurrent(dir)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestTheTestGraphFindsImporters: b's tests link a; a's do not link b.
func TestTheTestGraphFindsImporters(t *testing.T) {
	m, testers, err := testGraph(mod)
	require.NoError(t, err)
	assert.Equal(t, "example.com/mod", m)
	assert.Equal(t, []string{"example.com/mod/b"}, testers["example.com/mod/a"])
	assert.Empty(t, testers["example.com/mod/b"])
}

// TestAPackageWhoseTestsFailIsNotMutated: were c's tests failing
// unmutated counted, every mutant would look killed; c is reported and
// skipped instead.
func TestAPackageWhoseTestsFailIsNotMutated(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	var out bytes.Buffer
	rs, err := Run(Config{Root: mod, Budget: time.Minute, Timeout: time.Minute, Race: "never"}, []string{"c"}, &out)
	require.NoError(t, err)
	assert.Zero(t, rs[0].Tried)
	assert.Zero(t, rs[0].Killed)
	assert.Contains(t, out.String(), "c: its own tests do not pass unmutated (failed): no mutant tried")
}

// TestAHangNamesTheTestsThatWereRunning: the timeout panic's list of
// running tests is what a hang is reported with.
func TestAHangNamesTheTestsThatWereRunning(t *testing.T) {
	for _, c := range []struct{ name, out, want string }{
		{"one", "panic: test timed out after 1m0s\n\trunning tests:\n\t\tTestA (1m0s)\n\ngoroutine 1", "TestA"},
		{"two", "panic: test timed out after 3s\n\trunning tests:\n\t\tTestA/sub (3s)\n\t\tTestB (2s)\n", "TestA/sub TestB"},
		{"none", "panic: test timed out after 3s\n", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, running([]byte(c.out)))
		})
	}
}

// TestATimeoutFollowsWhatThePackageTook: four times the longest pass, at
// least a minute, at most the flag's; the flag's until a package passed.
func TestATimeoutFollowsWhatThePackageTook(t *testing.T) {
	ts := &timeouts{max: 3 * time.Minute, took: map[string]time.Duration{}}
	assert.Equal(t, 3*time.Minute, ts.of("p"), "never passed")
	ts.pass("p", time.Second)
	assert.Equal(t, time.Minute, ts.of("p"))
	ts.pass("p", 20*time.Second)
	ts.pass("p", 10*time.Second)
	assert.Equal(t, 80*time.Second, ts.of("p"))
	ts.pass("q", time.Minute)
	assert.Equal(t, 3*time.Minute, ts.of("q"), "four times is over the most")
	ts.pass("q", 2*time.Minute)
	assert.Equal(t, 4*time.Minute, ts.of("q"), "never under twice what it took: else every mutant would time out")
}

// TestACutShortMutantIsSampledNotDecided: a mutant whose budget has
// already ended when its first package's tests would start is cut short
// before any test runs: sampled, not decided, and not in the score.
func TestACutShortMutantIsSampledNotDecided(t *testing.T) {
	root, err := filepath.Abs(mod)
	require.NoError(t, err)
	ms, err := Mutants(filepath.Join(root, "a"))
	require.NoError(t, err)
	ms = ms[:3]
	cfg := Config{Root: root, Timeout: time.Minute}
	times := &timeouts{max: time.Minute, took: map[string]time.Duration{}}
	u := &unit{dir: "a", pkgDir: "a", importPath: "example.com/mod/a"}
	cov := newCoverage(cfg, []*unit{u}, t.TempDir())
	r := &Report{Dir: "a", Total: len(ms)}
	for _, m := range ms {
		r.Tried++
		v, where, ran, _ := test(cfg, m, []string{"example.com/mod/a"}, false, times, cov, time.Now().Add(-time.Second), t.TempDir())
		r.record(root, m, v, where, ran, 0, nil)
	}
	assert.Equal(t, 3, r.Cut)
	assert.Zero(t, r.Decided())
	var out bytes.Buffer
	r.Print(&out)
	assert.Contains(t, out.String(), "3 cut short by the budget, 0 failed only flaky tests); sampled 3 of 3 mutants (100%), decided 0 (0.0%)")
	assert.Contains(t, out.String(), "  cut      a/a.go:", "a cut-short mutant is listed")
	assert.Contains(t, out.String(), "[passed 0 of 1 packages]")
}

// TestABudgetThatEndsDuringACoverageRunCutsTheMutant: the budget's end
// is checked again once an importer's coverage is measured (a run of its
// every test), so a mutant does not then run that package's tests too past
// the end.
func TestABudgetThatEndsDuringACoverageRunCutsTheMutant(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	root, err := filepath.Abs(mod)
	require.NoError(t, err)
	ms, err := Mutants(filepath.Join(root, "a"))
	require.NoError(t, err)
	cfg := Config{Root: root, Timeout: time.Minute}
	times := &timeouts{max: time.Minute, took: map[string]time.Duration{}}
	u := &unit{dir: "a", pkgDir: "a", importPath: "example.com/mod/a"}
	cov := newCoverage(cfg, []*unit{u}, t.TempDir())
	v, where, ran, measuring := test(cfg, ms[0], []string{"example.com/mod/b"}, false, times, cov, time.Now().Add(10*time.Millisecond), t.TempDir())
	assert.Equal(t, cut, v)
	assert.Equal(t, "passed 0 of 1 packages", where)
	assert.Zero(t, ran, "b's tests did not run against the mutant")
	assert.Greater(t, measuring, 10*time.Millisecond, "b's coverage run took the budget's end")
}

// fake is one unit as TestTheNextWorkReachesEveryPackage sets it up.
type fake struct {
	name     string
	base     int           // its unmutated run: 0 not started, 1 running, 2 passed
	baseTook time.Duration // what that run took
	decided  int           // mutants killed or survived
	other    int           // mutants finished undecided (unbuilt, cut, flaky)
	running  []time.Duration
	took     time.Duration // its finished mutants' time
	left     int           // mutants not yet started
	failed   bool          // its unmutated run failed: no mutant to try
}

func (f fake) unit(now time.Time) *unit {
	u := &unit{dir: f.name, base: f.base, baseTook: f.baseTook, est: f.baseTook, running: map[int]time.Time{}}
	started := f.decided + f.other + len(f.running)
	u.ms = make([]Mutant, started+f.left)
	u.next, u.done = started, f.decided+f.other
	u.r = &Report{Dir: f.name, Killed: f.decided, Unbuilt: f.other, Took: f.took, Tried: started, Total: len(u.ms)}
	for i, d := range f.running {
		u.running[f.decided+f.other+i] = now.Add(-d)
	}
	if f.failed {
		u.ms = nil
	}
	return u
}

// TestTheNextWorkReachesEveryPackage: the next work comes from the
// package with the fewest mutants decided or running, so every package
// gets its first before any gets a second; of equals, from one whose
// unmutated run passed before one not started, then from the one that
// used the least time; a package whose next work would not finish before
// the budget's end is skipped, not the run. (Tried: ordering by time used
// alone, as before, fails the rows marked *; dropping the running
// mutants from the count fails "running"; dropping the fit check fails
// "too long"; judging a package not started by the others' runs fails
// "a slow run", as it failed a trial over the whole tree.)
func TestTheNextWorkReachesEveryPackage(t *testing.T) {
	s, m := time.Second, time.Minute
	for _, c := range []struct {
		name  string
		left  time.Duration // of the budget
		units []fake
		want  string // "" for none
	}{
		{"* a package with none decided goes before one with one, however cheap that one's", 30 * m, []fake{
			{name: "testsum", base: 2, baseTook: 5 * s, decided: 1, took: 3 * s, left: 90},
			{name: "blobbench", base: 2, baseTook: 14 * m, took: 0, left: 90},
		}, "blobbench"},
		{"* a package not started goes before a second mutant, however long the others' unmutated runs took", 30 * m, []fake{
			{name: "testsum", base: 2, baseTook: 5 * s, decided: 1, took: 3 * s, left: 90},
			{name: "mutate", base: 2, baseTook: 21 * m, decided: 1, took: m, left: 90},
			{name: "blobbench", base: 2, baseTook: 14 * m, decided: 1, took: m, left: 90},
			{name: "fs", left: 90},
		}, "fs"},
		{"running counts as reached", 10 * m, []fake{
			{name: "backend", base: 2, baseTook: 20 * s, running: []time.Duration{s}, left: 90},
			{name: "fs", base: 2, baseTook: 30 * s, decided: 0, left: 90},
		}, "fs"},
		{"* a package whose mutants did not decide gets another before the others' second", 10 * m, []fake{
			{name: "gen", base: 2, baseTook: 10 * s, other: 3, took: 30 * s, left: 90},
			{name: "fs", base: 2, baseTook: 10 * s, decided: 1, took: 5 * s, left: 90},
		}, "gen"},
		{"of equals, a first mutant after its unmutated run before another's unmutated run", 10 * m, []fake{
			{name: "claim", left: 20},
			{name: "backend", base: 2, baseTook: m, left: 90},
		}, "backend"},
		{"of equals, the one that used the least", 10 * m, []fake{
			{name: "first", base: 2, baseTook: 10 * s, decided: 2, took: 40 * s, left: 9},
			{name: "busy", base: 2, baseTook: 10 * s, decided: 1, running: []time.Duration{35 * s}, took: 10 * s, left: 9},
			{name: "late", base: 2, baseTook: 10 * s, decided: 2, took: 20 * s, left: 9},
		}, "late"},
		{"the running mutants' time so far is used", 10 * m, []fake{
			{name: "busy", base: 2, baseTook: 10 * s, decided: 1, running: []time.Duration{35 * s}, left: 9},
			{name: "late", base: 2, baseTook: 10 * s, decided: 2, took: 30 * s, left: 9},
		}, "late"},
		{"of equals not started, the first in the list", 10 * m, []fake{
			{name: "a", left: 9}, {name: "b", left: 9},
		}, "a"},
		{"too long: a package whose next mutant would not finish is skipped, not the run", m, []fake{
			{name: "redis", base: 2, baseTook: 2 * m, left: 90},
			{name: "testsum", base: 2, baseTook: 5 * s, decided: 4, took: 20 * s, left: 90},
		}, "testsum"},
		{"a package whose mutants' mean would not finish is skipped", m, []fake{
			{name: "redis", base: 2, baseTook: 10 * s, decided: 1, took: 2 * m, left: 90},
			{name: "testsum", base: 2, baseTook: 5 * s, decided: 4, took: 20 * s, left: 90},
		}, "testsum"},
		{"a slow run: the first package's slow unmutated run does not keep the others from starting", 2 * m, []fake{
			{name: "blobbench", base: 2, baseTook: 5 * m, decided: 0, left: 90},
			{name: "demo", left: 90},
			{name: "drivergen", left: 90},
		}, "demo"},
		{"a package not started is started however little is left (its run is cut at the end)", s, []fake{
			{name: "a", base: 2, baseTook: 20 * s, decided: 1, took: 5 * s, left: 9},
			{name: "fresh", left: 90},
		}, "fresh"},
		{"an unmutated run under way is not started again", 10 * m, []fake{
			{name: "fs", base: 1, left: 90},
			{name: "testsum", base: 2, baseTook: 5 * s, decided: 3, took: 9 * s, left: 90},
		}, "testsum"},
		{"a package whose tests failed unmutated has no mutant to try", 10 * m, []fake{
			{name: "conformance", base: 2, baseTook: m, failed: true, left: 90},
			{name: "testsum", base: 2, baseTook: 5 * s, decided: 3, took: 9 * s, left: 90},
		}, "testsum"},
		{"no mutant left", 10 * m, []fake{
			{name: "claim", base: 2, baseTook: 5 * s, decided: 21, took: 90 * s},
		}, ""},
		{"the budget has ended", 0, []fake{
			{name: "fresh", left: 9},
			{name: "testsum", base: 2, baseTook: 5 * s, decided: 3, took: 9 * s, left: 90},
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			now := time.Now()
			var units []*unit
			for _, f := range c.units {
				units = append(units, f.unit(now))
			}
			got := ""
			if u := nextUnit(units, now, now.Add(c.left)); u != nil {
				got = u.dir
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// TestEveryPackageIsReachedBeforeAnyGetsASecond plays schedule's rule
// against fake packages, one cheap and others slow to test, two jobs at
// once, until 40 mutants are decided: every mutant starts in a package
// with the fewest decided or running (so every package's first is
// decided before any second starts, and the cheap one does not take the
// budget from the slow ones), and every package is reached.
func TestEveryPackageIsReachedBeforeAnyGetsASecond(t *testing.T) {
	costs := map[string]time.Duration{"testsum": 3 * time.Second, "backend": 40 * time.Second, "blobbench": 3 * time.Minute, "fs": 20 * time.Second, "redis": time.Minute}
	names := []string{"blobbench", "backend", "fs", "redis", "testsum"}
	now := time.Unix(0, 0)
	end := now.Add(24 * time.Hour)
	var units []*unit
	for _, n := range names {
		units = append(units, fake{name: n, left: 50}.unit(now))
	}
	type job struct {
		u    *unit
		k    int // -1: the unmutated run
		done time.Time
	}
	var jobs []job
	decided := 0
	for decided < 40 {
		for len(jobs) < 2 {
			u := nextUnit(units, now, end)
			require.NotNil(t, u)
			if u.base == 0 {
				u.base = 1
				jobs = append(jobs, job{u, -1, now.Add(2 * costs[u.dir])})
				continue
			}
			for _, v := range units {
				require.LessOrEqual(t, u.reached(), v.reached(), "at %v a mutant of %s started (%d decided or running) before %s had as many (%d)", now.Sub(time.Unix(0, 0)), u.dir, u.reached(), v.dir, v.reached())
			}
			u.running[u.next] = now
			u.r.Tried++
			jobs = append(jobs, job{u, u.next, now.Add(costs[u.dir])})
			u.next++
		}
		sort.Slice(jobs, func(i, j int) bool { return jobs[i].done.Before(jobs[j].done) })
		j := jobs[0]
		jobs = jobs[1:]
		now = j.done
		if j.k < 0 {
			j.u.base, j.u.baseTook, j.u.est = 2, 2*costs[j.u.dir], 2*costs[j.u.dir]
			continue
		}
		j.u.r.Took += now.Sub(j.u.running[j.k])
		delete(j.u.running, j.k)
		j.u.done++
		j.u.r.Killed++
		decided++
	}
	for _, u := range units {
		assert.GreaterOrEqual(t, u.r.Decided(), 7, "%s: each of the 5 has about 40/5", u.dir)
	}
}

// TestALineNoTestRunsSurvivesWithoutATestRun: a's and b's tests never
// call Unused, by their coverage, so its mutants are not run against
// either: they survive, listed as run by no test.
func TestALineNoTestRunsSurvivesWithoutATestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	var out bytes.Buffer
	rs, err := Run(Config{Root: mod, Budget: 5 * time.Minute, Timeout: time.Minute, Jobs: 1, Importers: true, Race: "never", Only: []string{"a/a.go:28"}}, []string{"a"}, &out)
	require.NoError(t, err, out.String())
	r := rs[0]
	require.Equal(t, 4, r.Tried, out.String())
	assert.Equal(t, 4, r.Survived)
	assert.Equal(t, 4, r.Unrun)
	for _, s := range r.Survivors {
		assert.Contains(t, s, "[no test runs this line]")
	}
	assert.Contains(t, out.String(), "no test runs its line")
}

// TestTheTotalSaysWhichPackagesWereReached: the total line says how many
// of the packages with a mutant had one decided, out of how many, and
// names each other one with why, so "every package" can be checked from
// the report. (Tried: counting a package with only an unbuilt mutant as
// reached fails it.)
func TestTheTotalSaysWhichPackagesWereReached(t *testing.T) {
	now := time.Now()
	reached := fake{name: "runtime/claim", base: 2, decided: 1, left: 20}.unit(now)
	undecided := fake{name: "gen", base: 2, other: 2, left: 9}.unit(now)
	undecided.r.Cut = 1
	undecided.r.Unbuilt = 1
	notStarted := fake{name: "cmd/blobbench", left: 90}.unit(now)
	failed := fake{name: "conformance", base: 2, failed: true}.unit(now)
	failed.r.Total = 40
	failed.r.Baseline = "its own tests do not pass unmutated (failed): no mutant tried"
	noTime := fake{name: "stores/redis", base: 2, left: 90}.unit(now)
	none := fake{name: "internal/empty", base: 2}.unit(now)
	var rs []*Report
	for _, u := range []*unit{reached, undecided, notStarted, failed, noTime, none} {
		u.r.Unreached = u.unreached()
		rs = append(rs, u.r)
	}
	tot := Total(rs)
	assert.Equal(t, 5, tot.Units, "internal/empty has no mutant")
	assert.Equal(t, 1, tot.Reached)
	assert.Equal(t, []string{
		"gen (2 tried, none decided: 1 did not build, 1 cut short by the budget, 0 failed only flaky tests)",
		"cmd/blobbench (its unmutated run never started before the budget's end)",
		"conformance (its own tests do not pass unmutated (failed))",
		"stores/redis (its unmutated run passed; no mutant would have finished before the budget's end)",
	}, tot.NotReached)
	var out bytes.Buffer
	tot.Print(&out)
	assert.Contains(t, out.String(), "; reached 1 of the 5 packages with a mutant (one decided or more); not reached: gen (2 tried")
	out.Reset()
	Total(rs[:1]).Print(&out)
	assert.Contains(t, out.String(), "; reached 1 of the 1 packages with a mutant (one decided or more)\n", "nothing not reached, nothing named")
}

// TestAMutantGoTestsVetFailsIsAKill: the tests run with -vet=off, and a
// mutant they all pass is vetted as go test vets a package: && -> || on
// "x != 1 && x != 2" passes v's test, but vet's bool check fails it
// ("suspect or"), so CI's go test fails: a kill, named as vet's. (Tried:
// without the vet of a survivor the mutant survives; with vet on for the
// tests it is reported as not built.)
func TestAMutantGoTestsVetFailsIsAKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	root := writeModule(t, map[string]string{
		"go.mod":      "module example.com/vet\n\ngo 1.21\n",
		"v/v.go":      "package v\n\nfunc Odd(x int) bool {\n\tif x != 1 && x != 2 {\n\t\treturn true\n\t}\n\treturn false\n}\n",
		"v/v_test.go": "package v\n\nimport \"testing\"\n\nfunc TestOdd(t *testing.T) {\n\tif !Odd(3) {\n\t\tt.Fatal(\"Odd(3)\")\n\t}\n}\n",
	})
	var out bytes.Buffer
	rs, err := Run(Config{Root: root, Budget: 5 * time.Minute, Timeout: time.Minute, Jobs: 1, Race: "never", Only: []string{"v/v.go:4:12"}}, []string{"v"}, &out)
	require.NoError(t, err, out.String())
	require.Equal(t, 1, rs[0].Tried, out.String())
	assert.Equal(t, 1, rs[0].Killed, out.String())
	assert.Zero(t, rs[0].Unbuilt)
	assert.Contains(t, out.String(), "&& -> ||", out.String())
	assert.Contains(t, out.String(), "by go test's vet checks on example.com/vet/v", out.String())
	assert.Zero(t, rs[0].KilledElsewhere, "v's own vet")
}

// TestVettingAMutantRunsNoTestBinary: a mutant is vetted as go test vets
// a package, without running its test binary, whose TestMain may start
// servers for nothing (a store's does); a vet failure is still one.
// (Tried: without -exec true the TestMain below runs and writes its file.)
func TestVettingAMutantRunsNoTestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	ran := filepath.Join(t.TempDir(), "ran")
	root := writeModule(t, map[string]string{
		"go.mod":      "module example.com/vetmain\n\ngo 1.21\n",
		"m/m.go":      "package m\n\nfunc One() int { return 1 }\n",
		"m/m_test.go": "package m\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\nfunc TestMain(m *testing.M) {\n\t_ = os.WriteFile(" + strconv.Quote(ran) + ", nil, 0o600)\n\tos.Exit(m.Run())\n}\n",
		"m/bad.go":    "package m\n",
	})
	overlay := filepath.Join(t.TempDir(), "overlay.json")
	bad := filepath.Join(t.TempDir(), "bad.go")
	require.NoError(t, os.WriteFile(bad, []byte("package m\n\nimport \"fmt\"\n\nfunc Bad() string { return fmt.Sprintf(\"%d\", \"x\") }\n"), 0o600))
	for _, c := range []struct {
		name    string
		replace map[string]string
		want    bool
	}{
		{"clean", map[string]string{}, false},
		{"a printf vet refuses", map[string]string{filepath.Join(root, "m", "bad.go"): bad}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(map[string]any{"Replace": c.replace})
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(overlay, b, 0o600))
			assert.Equal(t, c.want, vetFails(Config{Root: root}, overlay, "example.com/vetmain/m", false))
			_, err = os.Stat(ran)
			assert.True(t, os.IsNotExist(err), "vetting ran the test binary (its TestMain wrote %s)", ran)
		})
	}
}

// TestAnUnmutatedRunIsCutShortAtTheBudgetsEnd: a package's unmutated run
// starts whenever the budget has not ended, and one still going at its
// end is cut short there (its test binary with it), not run on to CI's
// -timeout: the package is named not reached, with why. (Tried: without
// the budget's end on the run it takes the minute the test sleeps and
// passes.)
func TestAnUnmutatedRunIsCutShortAtTheBudgetsEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	root := writeModule(t, map[string]string{
		"go.mod":      "module example.com/slow\n\ngo 1.21\n",
		"s/s.go":      "package s\n\nfunc One() int { return 1 }\n",
		"s/s_test.go": "package s\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\nfunc TestSlow(t *testing.T) {\n\ttime.Sleep(time.Minute) // a package slower than the budget\n\tif One() != 1 {\n\t\tt.Fatal(\"One\")\n\t}\n}\n",
	})
	var out bytes.Buffer
	t0 := time.Now()
	rs, err := Run(Config{Root: root, Budget: 5 * time.Second, Timeout: time.Minute, CITimeout: 2 * time.Minute, Jobs: 1, Race: "never"}, []string{"s"}, &out)
	require.NoError(t, err, out.String())
	assert.Less(t, time.Since(t0), 50*time.Second, "cut at the budget's end, not run to the test's minute")
	assert.Zero(t, rs[0].Tried)
	assert.Contains(t, out.String(), "unmutated s: its tests cut short", out.String())
	assert.Contains(t, out.String(), "reached 0 of the 1 packages with a mutant (one decided or more); not reached: s (its unmutated run was cut short by the budget's end)", out.String())
}

// TestAPackagesOwnRunCoversItAlone: a package's own unmutated run counts
// coverage of the package alone (all its own mutants read; counting
// every package its test binary links made cmd/blobbench's tests six
// times slower), and its run as an importer, measured when another
// package's mutant first reaches it, counts every mutated package's.
// (Tried: the own run with every package's coverage fails it.)
func TestAPackagesOwnRunCoversItAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a module")
	}
	root, err := filepath.Abs(mod)
	require.NoError(t, err)
	cfg := Config{Root: root, Timeout: time.Minute, CITimeout: 2 * time.Minute}
	units := []*unit{{dir: "a", pkgDir: "a", importPath: "example.com/mod/a"}, {dir: "b", pkgDir: "b", importPath: "example.com/mod/b"}}
	cov := newCoverage(cfg, units, t.TempDir())
	v, _ := cov.baseline("example.com/mod/b", false)
	require.Equal(t, survived, v)
	files := func(own bool) []string {
		var out []string
		for f := range cov.get("example.com/mod/b", own).blocks {
			out = append(out, path.Dir(f))
		}
		sort.Strings(out)
		return slices.Compact(out)
	}
	assert.Equal(t, []string{"example.com/mod/b"}, files(true), "b's own run counts b alone")
	ms, err := Mutants(filepath.Join(root, "a"))
	require.NoError(t, err)
	cov.runs("example.com/mod/b", false, ms[0]) // measures b as a's importer
	assert.Equal(t, []string{"example.com/mod/a", "example.com/mod/b"}, files(false), "b's run as a's importer counts a too")
}

// TestABuildCheckWritesNoProgram: checking that a mutant of a main
// package builds leaves no program in the module's root. (Tried: without
// -o it writes "tool" there.)
func TestABuildCheckWritesNoProgram(t *testing.T) {
	root := writeModule(t, map[string]string{
		"go.mod":           "module example.com/prog\n\ngo 1.21\n",
		"cmd/tool/main.go": "package main\n\nfunc main() {}\n",
		"overlay.json":     `{"Replace":{}}`,
	})
	require.True(t, builds(Config{Root: root}, filepath.Join(root, "overlay.json"), "./cmd/tool"))
	_, err := os.Stat(filepath.Join(root, "tool"))
	assert.True(t, os.IsNotExist(err), "go build wrote the program into the module's root")
}

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

// TestTheNextMutantComesFromThePackageThatUsedLeast: the budget is shared
// by time, not by the order of the list: the next mutant is the unit's
// that has used the least (its running mutants' time so far included),
// skipping one with no mutant left and one whose mean would end past the
// budget.
func TestTheNextMutantComesFromThePackageThatUsedLeast(t *testing.T) {
	now := time.Now()
	end := now.Add(time.Minute)
	mk := func(name string, left int, took time.Duration, done int, running ...time.Duration) *unit {
		u := &unit{dir: name, ms: make([]Mutant, left), r: &Report{Took: took}, done: done, est: time.Second, base: 2, running: map[int]time.Time{}}
		for i, d := range running {
			u.running[i] = now.Add(-d)
		}
		return u
	}
	first := mk("first", 5, 50*time.Second, 2)
	busy := mk("busy", 5, 0, 0, 40*time.Second)
	drained := mk("drained", 0, 0, 0)
	long := mk("long", 5, 2*time.Minute, 1) // its mean, 2 min, ends past the budget
	late := mk("late", 5, 10*time.Second, 1)
	units := []*unit{first, busy, drained, long, late}
	assert.Same(t, late, nextUnit(units, now, end), "late used 10 s; first 50, busy 40 so far")
	late.r.Took = 45 * time.Second
	assert.Same(t, busy, nextUnit(units, now, end))
	assert.Nil(t, nextUnit(units, now, now), "nothing fits a budget that ended")
	assert.Nil(t, nextUnit([]*unit{drained}, now, end), "no mutant left")
	fresh := mk("fresh", 5, 0, 0)
	fresh.base = 0
	first.baseTook = 300 * time.Second
	assert.Same(t, busy, nextUnit(append(units, fresh), now, end), "a unit whose unmutated run has not started counts as the mean of the others' (300 s over 5: 60 s, more than busy's 40 so far)")
	first.baseTook = 100 * time.Second
	assert.Same(t, fresh, nextUnit(append(units, fresh), now, end), "100 s over 5: 20 s, less than busy's 40")
	first.baseTook = 0
	fresh.base = 1
	assert.Same(t, busy, nextUnit(append(units, fresh), now, end), "nor while its unmutated run is under way")
	fresh.base, fresh.baseTook = 2, 39*time.Second
	assert.Same(t, fresh, nextUnit(append(units, fresh), now, end), "its unmutated run is charged to it: 39 s, less than busy's 40 so far")
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

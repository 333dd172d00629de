// Command mutate is a small mutation tester that measures what CI catches:
// it makes one change at a time to a package's source (a flipped
// comparison, a negated condition, a dropped statement, && swapped with
// ||, an integer constant off by one) and runs, through go test -overlay
// (the tree is never written), the tests of the package and then those of
// every package in the module whose tests link it (its importers, direct
// or not), one package at a time, stopping at the first that fails
// (go test -failfast: one failing test is a kill). The tests run with
// -vet=off, and a mutant they all pass is vetted once, as go test vets a
// package before its tests: a vet failure there fails CI's go test, so it
// is a kill too (vet before each package's tests cost more than a fifth
// of a mutant's run). A package's tests
// that, unmutated, never execute the mutated line (by their coverage,
// measured once per test package) are not run: they cannot tell the
// mutant from the source. A package whose code starts goroutines or uses
// package sync is tested with -race, as CI tests it. Only the files CI's
// -race build compiles are mutated, and no generated file. An argument
// ending in /... (./...) names every package under it with a mutant.
// A failure in another package's tests than the mutated one's is a kill
// only when the tests that failed pass unmutated and fail on the mutant
// again; else they are flaky, decide nothing, and a mutant that only they
// failed is reported apart (flaky: not decided, not scored). Each kill's
// line names the package whose tests made it; a kill only another
// package's tests made (the mutated package's own passed) is also listed
// per package.
// A package's tests that reach their -timeout on a mutant run again,
// whole, under CI's (-ci-timeout, the Makefile's TEST_TIMEOUT): a hang
// there is what CI would see fail, so it counts as a kill (and is listed
// apart, with the tests that were running); a pass there is a pass (the
// mutant is slow, CI passes it, and its survivor line says so).
// It reports per package the mutants tried out of all (the share
// sampled), those the tests killed (the hangs among them), the share of
// the budget the package had, and each survivor's file:line, change and
// source line; and a line as each mutant is decided. Given the list of
// mutants argued equivalent (-equivalent, see Equivalent), it scores both
// over every decided mutant and without the listed survivors, prints
// those with their reasons apart from the unexplained survivors, and names
// a listed mutant a test killed (a wrong entry) and an entry that matches
// no mutant (stale), so the list cannot rot unseen.
//
//	go run ./cmd/mutate -budget 30m ./...
//	go run ./cmd/mutate -budget 30m runtime/backend stores/fs
//	go run ./cmd/mutate -list -equivalent cmd/mutate/equivalent.txt stores/fs
//
// A mutant the compiler refuses is not counted. A package's tests run
// once unmutated (under CI's -timeout) as the first of its work, and its
// mutants start once they passed. The packages share the budget by count,
// so that every package is reached: the next mutant always comes from the
// package with the fewest mutants decided or running, so every package
// gets its first before any gets a second (a package whose mutants run
// long, or whose unmutated run was slow, does not keep the others from
// their first, and a cheap one does not take the budget); of equals, one
// whose unmutated run passed goes before one whose run has not started
// (so a package's first mutant follows its run), then the one that has
// used the least time. A package whose next work would not finish before
// the budget's end is skipped, never the run (see nextUnit). Within a
// package the mutants are tried in a seeded random order. One started
// finishes unless the budget ends between two packages' tests (or before
// a hang's run under CI's -timeout would end), so few are cut short, and
// a cut-short mutant counts as sampled but not decided: the score is over
// the decided ones. The total says how many of the packages with a
// mutant were reached (one of their mutants decided), and names those
// that were not, with why.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"io"
	"iter"
	"math/rand"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	budget := flag.Duration("budget", 5*time.Minute, "total time to spend (mutants are sampled to fit)")
	timeout := flag.Duration("timeout", 2*time.Minute, "go test -timeout for one package's tests against a mutant (exceeded: they run again under -ci-timeout)")
	ciTimeout := flag.Duration("ci-timeout", defaultCITimeout, "CI's go test -timeout: a package's tests that reach -timeout on a mutant run again under it, and a hang there is a kill (CI sees that test binary fail)")
	seed := flag.Int64("seed", 1, "order in which mutants are tried")
	jobs := flag.Int("j", 2, "mutants tested at once")
	importers := flag.Bool("importers", true, "also run the tests of the packages whose tests link the mutated one")
	race := flag.String("race", "auto", "-race: auto (where the package starts goroutines or uses sync), always or never")
	list := flag.Bool("list", false, "list the mutants in the order a run with -seed tries them, and exit")
	strict := flag.Bool("strict", false, "exit 1 when a mutant not listed equivalent survived, or an entry of the list is wrong or stale")
	only := flag.String("only", "", "test only the mutants whose file:line (or file:line:col) is in this comma-separated list")
	dir := flag.String("C", ".", "the module's root directory; package directories are relative to it")
	equiv := flag.String("equivalent", "", "the list of mutants argued equivalent, each with its reason (see Equivalent): the report scores without them too, and names a stale or wrong entry")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: mutate [flags] package-dir...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *race != "auto" && *race != "always" && *race != "never" {
		fatal(fmt.Errorf("-race %q: want auto, always or never", *race))
	}
	if *ciTimeout <= 0 {
		fatal(fmt.Errorf("-ci-timeout %v: want CI's go test -timeout (the Makefile's TEST_TIMEOUT)", *ciTimeout))
	}
	dirs, err := Expand(*dir, flag.Args())
	if err != nil {
		fatal(err)
	}
	cfg := Config{Root: *dir, Budget: *budget, Timeout: *timeout, CITimeout: *ciTimeout, Seed: *seed, Jobs: *jobs, Importers: *importers, Race: *race}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	if *equiv != "" {
		var err error
		if cfg.Equivalents, err = ReadEquivalents(*equiv); err != nil {
			fatal(err)
		}
	}
	if *list {
		stale, err := List(*dir, dirs, cfg.Equivalents, cfg.Seed, os.Stdout)
		if err != nil {
			fatal(err)
		}
		if stale > 0 {
			os.Exit(1)
		}
		return
	}
	reports, err := Run(cfg, dirs, os.Stdout)
	if err != nil {
		fatal(err)
	}
	exit := 0
	for _, r := range reports {
		if *strict && (r.Survived > r.Equivalent || len(r.Wrong) > 0 || len(r.Stale) > 0) {
			exit = 1
		}
	}
	os.Exit(exit)
}

// defaultCITimeout is the Makefile's TEST_TIMEOUT, the -timeout of CI's
// go test.
const defaultCITimeout = 12 * time.Minute

// Config is one run of the tool.
type Config struct {
	Root    string        // the module's root
	Budget  time.Duration // shared out among the packages
	Timeout time.Duration // go test -timeout of one package's tests
	// CITimeout is CI's go test -timeout: a package's tests that reach
	// Timeout on a mutant run again under it, and only a hang there is
	// counted (as a kill: CI sees that test binary fail).
	CITimeout time.Duration
	Seed      int64
	Jobs      int
	Importers bool     // run the importers' tests too
	Race      string   // auto, always or never
	Only      []string // file:line[:col] positions to keep (nil: all)
	// Equivalents are the mutants argued equivalent: a listed survivor is
	// reported with its reason and left out of the second score; a listed
	// mutant that a test kills, or an entry that matches none, is named.
	Equivalents []*Equivalent
}

// Run mutates each package directory (or single file) in dirs, relative to
// cfg.Root, writes a line as each mutant is decided, then each package's
// report and the total, and returns the reports (in the order of dirs).
//
// Each package's own tests run once unmutated first, with coverage of
// the package (an importer's coverage of every package in dirs is
// measured when a mutant first reaches its tests), as the first of its
// work: a package failing
// there is reported and not mutated (else every mutant would look
// killed), and their time bounds a mutant's. The rule that picks the next
// work reaches every package: the next mutant comes from the package with
// the fewest mutants decided or running (every package gets its first
// before any gets a second; a mutant that did not build, was cut short or
// failed only flaky tests does not count); of equals, from one whose
// unmutated run has passed before one whose run has not started (so its
// first mutant follows its run), then from the one that has used the
// least of the budget. A package whose next work would not finish before
// the budget's end (by the mean of its mutants so far, or its unmutated
// test binary's time before any) is skipped, never the whole run: the
// others go on. A package's unmutated run starts whenever the budget has
// not ended (no other package's run tells how long its own takes) and is
// cut short at its end. Within a
// package the mutants are tried in a seeded random order. The total
// line says how many packages with a mutant were reached (one decided)
// out of how many, and names each one that was not, with why.
func Run(cfg Config, dirs []string, w io.Writer) ([]*Report, error) {
	if cfg.Jobs < 1 {
		cfg.Jobs = 1
	}
	if cfg.CITimeout <= 0 {
		cfg.CITimeout = defaultCITimeout
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, err
	}
	cfg.Root = root
	mod, testers, err := testGraph(root)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	times := &timeouts{max: cfg.Timeout, took: map[string]time.Duration{}}
	var units []*unit
	for _, d := range dirs {
		d = strings.TrimPrefix(filepath.Clean(d), "./")
		pkgDir := d
		if strings.HasSuffix(d, ".go") {
			pkgDir = filepath.Dir(d)
		}
		importPath := mod + "/" + filepath.ToSlash(pkgDir)
		if pkgDir == "." {
			importPath = mod
		}
		units = append(units, &unit{dir: d, pkgDir: pkgDir, importPath: importPath})
	}
	cov := newCoverage(cfg, units, tmp)
	cov.end = start.Add(cfg.Budget)
	equiv := &equivalents{}
	for _, u := range units {
		ms, err := Mutants(filepath.Join(root, u.dir))
		if err != nil {
			return nil, err
		}
		// Entries are matched against every mutant of the unit, sampled or
		// not, so a stale one is named whatever -only and the budget pick.
		stale := equiv.match(cfg.Equivalents, ms, root, u.holds)
		if cfg.Only != nil {
			ms = pick(ms, root, cfg.Only)
		}
		u.ms = tryOrder(ms, cfg.Seed)
		u.pkgs = []string{u.importPath}
		if cfg.Importers {
			u.pkgs = append(u.pkgs, testers[u.importPath]...)
		}
		u.race = cfg.Race == "always"
		if cfg.Race == "auto" {
			if u.race, err = concurrent(filepath.Join(root, u.pkgDir)); err != nil {
				return nil, err
			}
		}
		u.r = &Report{Dir: u.dir, Pkg: strings.TrimPrefix(u.importPath, modPrefix(u.importPath)), Race: u.race, Packages: len(u.pkgs), Total: len(ms), Stale: stale}
	}
	schedule(cfg, units, times, cov, equiv, start.Add(cfg.Budget), tmp, w)
	var reports []*Report
	for _, u := range units {
		u.r.Budget = cfg.Budget
		u.r.Unreached = u.unreached()
		u.r.Print(w)
		reports = append(reports, u.r)
	}
	t := Total(reports)
	t.Budget, t.Took = cfg.Budget, time.Since(start)
	t.Print(w)
	return reports, nil
}

// tryOrder shuffles a package's mutants into the order a run with seed
// tries them; List prints that order, so the mutants a budget reaches
// first can be read before a run.
func tryOrder(ms []Mutant, seed int64) []Mutant {
	rand.New(rand.NewSource(seed)).Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	return ms
}

// List writes every mutant of dirs (relative to root), one a line, as
// "file:line:col: change: source line", in the order a run with seed
// tries them (so a package's first lines are what a short budget
// reaches), those the list of equivalents names marked, then each entry
// of the list for dirs' files that matches no mutant (or several); it
// returns how many of those there are.
func List(root string, dirs []string, list []*Equivalent, seed int64, w io.Writer) (int, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return 0, err
	}
	stale := 0
	for _, d := range dirs {
		d = strings.TrimPrefix(filepath.Clean(d), "./")
		u := &unit{dir: d, pkgDir: d}
		if strings.HasSuffix(d, ".go") {
			u.pkgDir = filepath.Dir(d)
		}
		ms, err := Mutants(filepath.Join(root, d))
		if err != nil {
			return 0, err
		}
		equiv := &equivalents{}
		problems := equiv.match(list, ms, root, u.holds)
		for _, m := range tryOrder(ms, seed) {
			listed := ""
			if e := equiv.entry(m); e != nil {
				listed = " [listed equivalent at " + e.At + "]"
			}
			fmt.Fprintf(w, "%s:%d:%d: %s: %s%s\n", relFile(root, m.File), m.At[0], m.At[1], m.Desc, m.Line, listed)
		}
		for _, p := range problems {
			fmt.Fprintf(w, "STALE ENTRY %s\n", p)
		}
		stale += len(problems)
	}
	return stale, nil
}

// Expand replaces each argument that ends in "/..." (as "./..." does)
// with the directory, relative to root, of every package the go command
// lists for it that has a mutant: a non-test file the build compiles
// (one a build constraint leaves out, as the mooncake tag does the cgo
// SDK's, is never in CI's tests) and that is not generated (generated/
// is written by drivergen, never by hand, and held by gen's golden
// tests). A package with no such file (generated code, tests only) is
// left out. Other arguments stay as they are.
func Expand(root string, args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		if a != "..." && !strings.HasSuffix(a, "/...") {
			out = append(out, a)
			continue
		}
		list, err := goCmd(root, "list", "-e", "-f", "{{.Dir}}", a)
		if err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(root)
		if err != nil {
			return nil, err
		}
		for _, dir := range strings.Fields(string(list)) {
			if has, err := hasMutant(dir); err != nil || !has {
				if err != nil {
					return nil, err
				}
				continue
			}
			rel, err := filepath.Rel(abs, dir)
			if err != nil {
				return nil, err
			}
			out = append(out, filepath.ToSlash(rel))
		}
	}
	return out, nil
}

// unit is one package's (or file's) mutants and how far the run is with
// them.
type unit struct {
	dir, pkgDir, importPath string
	ms                      []Mutant
	pkgs                    []string // whose tests run against a mutant: the package's own, then its importers'
	race                    bool
	r                       *Report
	est                     time.Duration     // its tests' unmutated time: a mutant's estimate until one finished
	base                    int               // its unmutated run: 0 not started, 1 running, 2 done
	baseTook                time.Duration     // what its unmutated run took
	next                    int               // the next mutant to start
	done                    int               // mutants finished
	running                 map[int]time.Time // mutants started and not finished, with their start
}

// unreached says why none of u's mutants was decided, "" when one was
// (or u has none).
func (u *unit) unreached() string {
	r := u.r
	switch {
	case r.Total == 0 || r.Decided() > 0:
		return ""
	case r.Baseline != "":
		return strings.TrimSuffix(r.Baseline, ": no mutant tried")
	case u.base == 0:
		return "its unmutated run never started before the budget's end"
	case r.Tried == 0:
		return "its unmutated run passed; no mutant would have finished before the budget's end"
	}
	return fmt.Sprintf("%d tried, none decided: %d did not build, %d cut short by the budget, %d failed only flaky tests", r.Tried, r.Unbuilt, r.Cut, r.Flaky)
}

// holds reports whether file (slash-separated, relative to the root) is
// one of u's: u's file, or a file of u's package.
func (u *unit) holds(file string) bool {
	if strings.HasSuffix(u.dir, ".go") {
		return file == filepath.ToSlash(u.dir)
	}
	return path.Dir(file) == filepath.ToSlash(u.pkgDir)
}

// used is how much of the budget u has had: its unmutated run's time, its
// finished mutants' and its running ones' (that run's too) so far.
func (u *unit) used(now time.Time) time.Duration {
	d := u.r.Took + u.baseTook
	for _, t0 := range u.running {
		d += now.Sub(t0)
	}
	return d
}

// mean is what u's next mutant is expected to take.
func (u *unit) mean() time.Duration {
	if u.done == 0 {
		return u.est
	}
	return u.r.Took / time.Duration(u.done)
}

// schedule runs each unit's tests unmutated, then tests its mutants,
// cfg.Jobs at a time, each next piece of work from the unit nextUnit
// picks, until no unit's next work would finish before end. A mutant
// started finishes unless end passes between two packages' tests: it is
// then cut short.
func schedule(cfg Config, units []*unit, times *timeouts, cov *coverage, equiv *equivalents, end time.Time, tmp string, w io.Writer) {
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	slots := make([]int, cfg.Jobs) // free work directories
	for i := range slots {
		slots[i] = i
	}
	var wg sync.WaitGroup
	mu.Lock()
	for {
		now := time.Now()
		next := nextUnit(units, now, end)
		if next == nil && len(slots) == cfg.Jobs {
			break // nothing running, nothing that fits
		}
		if next == nil || len(slots) == 0 {
			cond.Wait() // a finished mutant frees a slot or lowers a mean
			continue
		}
		u, k, slot := next, next.next, slots[len(slots)-1]
		slots = slots[:len(slots)-1]
		if u.base == 0 {
			// A package's unmutated run is its first work, charged to
			// it: the packages' mutants start as soon as their own run
			// passed, not after every package's.
			u.base = 1
			wg.Add(1)
			go func() {
				defer wg.Done()
				t0 := time.Now()
				v, _ := cov.baseline(u.importPath, u.race)
				took := time.Since(t0)
				mu.Lock()
				defer mu.Unlock()
				u.base, u.baseTook = 2, took
				binary := cov.get(u.importPath, true).took
				say := ""
				if binary > 0 {
					say = fmt.Sprintf("; its test binary %v", binary.Round(time.Second))
				}
				fmt.Fprintf(w, "  unmutated %s: its tests %s (%v%s)\n", u.dir, verdictNames[v], took.Round(time.Second), say)
				switch {
				case v == cut:
					u.r.Baseline = "its unmutated run was cut short by the budget's end: no mutant tried"
					u.ms = nil
				case v != survived:
					u.r.Baseline = fmt.Sprintf("its own tests do not pass unmutated (%s): no mutant tried", verdictNames[v])
					u.ms = nil
				default:
					// A mutant is expected to take what the test binary
					// took unmutated, and its -timeout follows that too:
					// the run's build (the first package's builds the
					// whole tree with coverage) is not a mutant's, and
					// counting it made hangs cost twice as much and kept
					// the first package's mutants from fitting the budget.
					u.est = orWall(binary, t0)
					times.pass(u.importPath, u.est)
				}
				slots = append(slots, slot)
				cond.Broadcast()
			}()
			continue
		}
		u.next++
		u.r.Tried++
		if u.running == nil {
			u.running = map[int]time.Time{}
		}
		u.running[k] = now
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := u.ms[k]
			v, where, ran, measuring := test(cfg, m, u.pkgs, u.race, times, cov, end, filepath.Join(tmp, strconv.Itoa(slot)))
			mu.Lock()
			defer mu.Unlock()
			// An importer's coverage run is measured once, for every
			// package's mutants after it: it is not charged to the package
			// whose mutant happened to reach the importer first.
			took := time.Since(u.running[k]) - measuring
			u.r.Measuring += measuring
			delete(u.running, k)
			u.done++
			e := equiv.entry(m)
			u.r.record(cfg.Root, m, v, where, ran, took, e)
			listed := ""
			if e != nil {
				listed = " [listed equivalent]"
			}
			by := ""
			if v == killed || v == hung {
				p, _, _ := strings.Cut(where, " ")
				by = " by " + p + "'s tests"
				if strings.HasSuffix(where, " "+byVet) {
					by = " by go test's vet checks on " + p
				}
			}
			fmt.Fprintf(w, "  %-8s %s: %s (%s, %v)%s%s\n", outcomes[v], u.dir, u.r.name(cfg.Root, m), ranSay(ran, len(u.pkgs)), took.Round(time.Second), listed, by)
			slots = append(slots, slot)
			cond.Broadcast()
		}()
	}
	mu.Unlock()
	wg.Wait()
}

// nextUnit is the unit whose work starts next, by the rule that reaches
// every package: the one with the fewest mutants decided or running (so
// every package gets its first before any gets a second, and a package
// whose first did not decide, unbuilt, flaky or cut short, gets another
// before the others' next); of equals, one whose unmutated run has passed
// before one whose run has not started (its first mutant follows its
// run, so mutants are decided from the start, not after every package's
// run), then the one that has used the least of the budget, then the
// first in the list. A unit is skipped, never the run, when its next
// mutant would not finish by end, by the mean of its mutants so far (its
// unmutated test binary's time before any finished). A unit whose
// unmutated run has not started is started whenever the budget has not
// ended: no other package's run tells how long its own will take (judged
// by the others' runs, one slow package's, the first, which also builds
// the whole tree with coverage, kept every other from starting), and its
// run is cut short at end. Skipped too: a unit whose unmutated run is
// under way or did not pass, or that has no mutant left. Nil when no unit
// qualifies.
func nextUnit(units []*unit, now, end time.Time) *unit {
	if !now.Before(end) {
		return nil
	}
	var next *unit
	for _, u := range units {
		switch {
		case u.base == 1 || len(u.ms) == 0:
			continue // its unmutated run is under way, or it has no mutant (left to try, or its run failed)
		case u.base == 2 && (u.next >= len(u.ms) || now.Add(u.mean()).After(end)):
			continue // no mutant left, or the next would not finish
		}
		if next == nil || before(u, next, now) {
			next = u
		}
	}
	return next
}

// before reports whether a's next work goes before b's, by nextUnit's
// rule: fewer mutants decided or running, then an unmutated run passed
// over one not started, then less of the budget used.
func before(a, b *unit, now time.Time) bool {
	if na, nb := a.reached(), b.reached(); na != nb {
		return na < nb
	}
	if a.base != b.base {
		return a.base == 2
	}
	return a.used(now) < b.used(now)
}

// reached is how many of u's mutants are decided (killed or survived) or
// running: the count nextUnit evens out across the packages.
func (u *unit) reached() int {
	n := len(u.running)
	if u.r != nil {
		n += u.r.Decided()
	}
	return n
}

// ranSay says how many packages' tests ran against a mutant.
func ranSay(ran, of int) string {
	if ran == 0 {
		return "no test runs its line"
	}
	return fmt.Sprintf("tests of %d of %d packages", ran, of)
}

// testGraph returns the module's path and, for each of its packages, the
// other packages of the module whose test binaries link it (sorted).
func testGraph(root string) (string, map[string][]string, error) {
	out, err := goCmd(root, "list", "-m")
	if err != nil {
		return "", nil, err
	}
	mod := strings.TrimSpace(string(out))
	out, err = goCmd(root, "list", "-e", "-test", "-f", "{{.ImportPath}}|{{join .Deps \" \"}}", "./...")
	if err != nil {
		return "", nil, err
	}
	seen := map[string]map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		name, deps, _ := strings.Cut(sc.Text(), "|")
		tester, ok := strings.CutSuffix(name, ".test")
		if !ok {
			continue
		}
		for _, dep := range strings.Fields(deps) {
			dep, _, _ = strings.Cut(dep, " ") // "p [q.test]" is p as q's tests build it
			if dep != tester && (dep == mod || strings.HasPrefix(dep, mod+"/")) {
				if seen[dep] == nil {
					seen[dep] = map[string]bool{}
				}
				seen[dep][tester] = true
			}
		}
	}
	// Those whose own or test files import the package come first (their
	// tests aim at it), the commands (whole programs, slow to test) last.
	out, err = goCmd(root, "list", "-e", "-f", "{{.ImportPath}}|{{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "./...")
	if err != nil {
		return "", nil, err
	}
	direct := map[[2]string]bool{} // {importer, imported}
	for _, line := range strings.Split(string(out), "\n") {
		name, imports, _ := strings.Cut(line, "|")
		for _, im := range strings.Fields(imports) {
			direct[[2]string{name, im}] = true
		}
	}
	rank := func(p, t string) [2]bool {
		return [2]bool{!direct[[2]string{t, p}], strings.HasPrefix(t, mod+"/cmd/")}
	}
	testers := map[string][]string{}
	for p, ts := range seen {
		for t := range ts {
			testers[p] = append(testers[p], t)
		}
		sort.Slice(testers[p], func(i, j int) bool {
			a, b := testers[p][i], testers[p][j]
			ra, rb := rank(p, a), rank(p, b)
			if ra != rb {
				return !ra[0] && rb[0] || ra[0] == rb[0] && !ra[1] && rb[1]
			}
			return a < b
		})
	}
	return mod, testers, nil
}

func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// concurrent reports whether the package in dir starts a goroutine or
// imports sync or sync/atomic in its non-test files: its mutants are then
// tested with -race.
func concurrent(dir string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return false, err
	}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.SkipObjectResolution)
		if err != nil {
			return false, err
		}
		for _, im := range f.Imports {
			if p, _ := strconv.Unquote(im.Path.Value); p == "sync" || p == "sync/atomic" {
				return true, nil
			}
		}
		found := false
		ast.Inspect(f, func(n ast.Node) bool {
			if _, ok := n.(*ast.GoStmt); ok {
				found = true
			}
			return !found
		})
		if found {
			return true, nil
		}
	}
	return false, nil
}

// pick keeps the mutants at the positions given (file:line or
// file:line:col, the file relative to root).
func pick(ms []Mutant, root string, at []string) []Mutant {
	var out []Mutant
	for _, m := range ms {
		pos := m.Pos
		if rel, err := filepath.Rel(root, m.Pos); err == nil {
			pos = rel
		}
		for _, a := range at {
			if pos == a || strings.HasPrefix(pos, a+":") || m.Pos == a || strings.HasPrefix(m.Pos, a+":") {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutate:", err)
	os.Exit(2)
}

// Mutant is one change to one file.
type Mutant struct {
	File string // path of the file
	Pos  string // file:line:col
	At   [2]int // line, column
	Desc string // what changed
	Line string // the source line changed, as it was

	n    int    // the site's index in its file (mutate's n)
	orig []byte // the file, unchanged
}

// Source is the mutated file, printed on demand: listing every mutant of
// a file once printed the whole file per mutant, which made a list of
// the tree cost minutes.
func (m Mutant) Source() ([]byte, error) {
	src, desc, err := mutate(m.File, m.orig, m.n)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", m.Pos, m.Desc, err)
	}
	if desc != m.Desc {
		return nil, fmt.Errorf("%s: %s is not the site mutate applies (%q)", m.Pos, m.Desc, desc)
	}
	return src, nil
}

// ciBuild is the build CI's tests compile (make test runs go test -race):
// the race tag is set, so a file for the race detector's builds is
// mutated and its !race twin is not.
var ciBuild = func() build.Context {
	c := build.Default
	c.BuildTags = append(c.BuildTags, "race")
	return c
}()

// hasMutant reports whether Mutants(dir) has one, without listing them
// all.
func hasMutant(dir string) (bool, error) {
	files, err := mutable(dir)
	if err != nil {
		return false, err
	}
	for file, src := range files {
		ms, err := sitesOf(file, src)
		if err != nil || len(ms) > 0 {
			return err == nil, err
		}
	}
	return false, nil
}

// Mutants are every mutant of the non-test Go files of dir (or of the one
// file dir names), in source order: of those CI's build compiles (ciBuild;
// a file a build constraint leaves out is in no test binary, so no test
// could kill its mutants) and that are not generated. Each one's changed
// file is printed by Source, when the mutant is tried.
func Mutants(dir string) ([]Mutant, error) {
	files, err := mutable(dir)
	if err != nil {
		return nil, err
	}
	var out []Mutant
	for file, src := range files {
		ms, err := sitesOf(file, src)
		if err != nil {
			return nil, err
		}
		out = append(out, ms...)
	}
	return out, nil
}

// sitesOf lists the mutants of one file from one parse: the n-th is the
// n-th site eachSite walks, which mutate(file, src, n) applies.
func sitesOf(file string, src []byte) ([]Mutant, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	lines := bytes.Split(src, []byte("\n"))
	var out []Mutant
	eachSite(f, func(at token.Pos, desc string) bool {
		p := fset.Position(at)
		line := ""
		if p.Line-1 < len(lines) {
			line = strings.TrimSpace(string(lines[p.Line-1]))
		}
		out = append(out, Mutant{File: file, Pos: fmt.Sprintf("%s:%d:%d", file, p.Line, p.Column), At: [2]int{p.Line, p.Column}, Desc: desc, Line: line, n: len(out), orig: src})
		return false
	}, func() bool { return false })
	return out, nil
}

// mutable yields, in order of name, each file of dir (or the one file dir
// names) that Mutants mutates, with its source: not a test, compiled by
// ciBuild, not generated.
func mutable(dir string) (iter.Seq2[string, []byte], error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if strings.HasSuffix(dir, ".go") {
		files = []string{dir}
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	srcs := map[string][]byte{}
	var keep []string
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		if ok, err := ciBuild.MatchFile(filepath.Dir(file), filepath.Base(file)); err != nil || !ok {
			if err != nil {
				return nil, err
			}
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if bytes.Contains(src, []byte("// Code generated ")) {
			continue
		}
		keep = append(keep, file)
		srcs[file] = src
	}
	return func(yield func(string, []byte) bool) {
		for _, f := range keep {
			if !yield(f, srcs[f]) {
				return
			}
		}
	}, nil
}

var flips = map[token.Token][]token.Token{
	token.EQL: {token.NEQ}, token.NEQ: {token.EQL},
	token.LSS: {token.GEQ, token.LEQ}, token.GEQ: {token.LSS, token.GTR},
	token.GTR: {token.LEQ, token.GEQ}, token.LEQ: {token.GTR, token.LSS},
	token.LAND: {token.LOR}, token.LOR: {token.LAND},
}

// eachSite walks f's mutation sites in source order, calling hit with
// each one's position and change; a site hit returns true for is applied
// to f, and the walk leaves that node. done stops the walk. Mutants and
// mutate share it, so the n-th site the one lists is the one the other
// applies.
func eachSite(f *ast.File, hit func(token.Pos, string) bool, done func() bool) {
	ast.Inspect(f, func(node ast.Node) bool {
		if done() {
			return false
		}
		switch x := node.(type) {
		case *ast.GenDecl:
			if x.Tok == token.CONST || x.Tok == token.IMPORT {
				return false // constants' arithmetic and iota are out of scope
			}
		case *ast.BinaryExpr:
			for _, to := range flips[x.Op] {
				if hit(x.OpPos, fmt.Sprintf("%s -> %s", x.Op, to)) {
					x.Op = to
					return false
				}
			}
		case *ast.IfStmt:
			if hit(x.If, "negate if condition") {
				x.Cond = &ast.UnaryExpr{Op: token.NOT, X: &ast.ParenExpr{X: x.Cond}}
				return false
			}
		case *ast.BasicLit:
			if x.Kind == token.INT {
				v, err := strconv.ParseInt(x.Value, 0, 64)
				if err == nil && hit(x.ValuePos, fmt.Sprintf("%s -> %d", x.Value, v+1)) {
					x.Value = strconv.FormatInt(v+1, 10)
				}
			}
		case *ast.BlockStmt:
			for k, s := range x.List {
				drop := false
				switch s := s.(type) {
				case *ast.ExprStmt, *ast.IncDecStmt, *ast.DeferStmt, *ast.GoStmt:
					drop = true
				case *ast.AssignStmt:
					drop = s.Tok != token.DEFINE
				}
				if drop && hit(s.Pos(), "drop statement") {
					x.List = append(append([]ast.Stmt{}, x.List[:k]...), x.List[k+1:]...)
					return false
				}
			}
		}
		return true
	})
}

// mutate parses src afresh, applies its n-th mutation site and prints
// the file back; desc is that site's change, "" past the last site.
func mutate(file string, src []byte, n int) (out []byte, desc string, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return nil, "", err
	}
	i := 0
	hit := func(_ token.Pos, d string) bool {
		if i == n {
			desc = d
		}
		i++
		return i-1 == n
	}
	eachSite(f, hit, func() bool { return desc != "" })
	if desc == "" {
		return nil, "", nil
	}
	var buf bytes.Buffer
	if err := printer.Fprint(&buf, fset, f); err != nil {
		return nil, desc, fmt.Errorf("printing %s back: %w", file, err)
	}
	return buf.Bytes(), desc, nil
}

// Report is what one package's mutants came to.
type Report struct {
	Dir string
	// Pkg is the package's import path as the report names a package
	// (without the module's host): a kill by another's tests is elsewhere.
	Pkg      string
	Race     bool // tested with -race
	Packages int  // packages whose tests ran against each mutant
	Total    int  // mutants of the package
	Tried    int  // mutants started (the sample)
	Killed   int  // a test failed, or timed out under CI's -timeout (Hung)
	// KilledElsewhere is how many of the killed mutants only another
	// package's tests killed (the package's own passed): Elsewhere lists
	// them, each with that package. A line its own tests miss is held only
	// while that package keeps testing it.
	KilledElsewhere int
	Survived        int // every test passed
	// Hung is how many of the killed a test binary ran past CI's
	// -timeout on: CI would see it fail, so it counts as killed.
	Hung    int
	Unbuilt int // the compiler refused the mutant (not counted)
	Cut     int // passed the tests run before the budget ran out (not counted)
	// Flaky is how many mutants only flaky tests failed: another package's
	// tests that failed unmutated too, or passed on the mutant run again
	// (not counted).
	Flaky int
	// Unrun is how many survivors no test ran: no package's tests, by
	// their unmutated coverage, execute the mutated line (counted as
	// survived, without a test run).
	Unrun int
	// Equivalent is how many survivors the list of equivalents names
	// (counted in Survived, and left out of ScoreWithout's denominator).
	Equivalent int
	// Baseline, when set, says why no mutant was tried.
	Baseline string
	// Unreached, when set, says why none of the package's mutants was
	// decided (its tests failed unmutated, the budget ended first, ...).
	Unreached string
	// Units and Reached are, in a total, how many packages have a mutant
	// and how many of those had one decided; NotReached names the others,
	// each with why ("dir (why)").
	Units, Reached int
	NotReached     []string
	// Survivors, Hangs and Cuts are "file:line:col: change: source line";
	// a hang ends with the package and tests that were running, a cut with
	// how many of the packages' tests it had passed (a mutant that passes
	// many is likelier to survive, so cuts are listed, not hidden).
	Survivors, Hangs, Cuts, Flakes []string
	// Elsewhere are the mutants killed only by another package's tests:
	// "file:line:col: change: source line [killed by PKG's tests]".
	Elsewhere []string
	// Equivalents are the listed survivors, each with its reason; Wrong
	// the listed mutants a test killed or that hung (the entry is wrong);
	// Stale the entries for the unit's files that match no mutant, or
	// several.
	Equivalents, Wrong, Stale []string
	// Took is the time its mutants took (the wall time, for a total);
	// Budget the whole run's, to say what share of it the package had.
	// Measuring is the time its mutants waited for importers' unmutated
	// coverage runs, which Took leaves out (each is measured once and
	// serves every package's mutants after).
	Took, Budget, Measuring time.Duration
}

// name is m as a report lists it: "file:line:col: change: source line",
// the file relative to root.
func (r *Report) name(root string, m Mutant) string {
	pos := m.Pos
	if rel, err := filepath.Rel(root, m.Pos); err == nil {
		pos = rel
	}
	return fmt.Sprintf("%s: %s: %s", pos, m.Desc, m.Line)
}

// record counts m's verdict v; where is what test said of a hang or a
// cut, ran how many packages' tests ran against it, e its entry in the
// list of equivalents (nil: none).
func (r *Report) record(root string, m Mutant, v verdict, where string, ran int, took time.Duration, e *Equivalent) {
	line := r.name(root, m)
	r.Took += took
	if e != nil && (v == killed || v == hung) {
		r.Wrong = append(r.Wrong, fmt.Sprintf("%s [%s by a test, yet listed equivalent at %s: %s]", line, outcomes[v], e.At, e.Reason))
	}
	switch v {
	case killed, hung:
		r.Killed++
		by, _, _ := strings.Cut(where, " ")
		if v == hung {
			r.Hung++
			r.Hangs = append(r.Hangs, line+" ["+where+"]")
		}
		if by != r.Pkg {
			r.KilledElsewhere++
			r.Elsewhere = append(r.Elsewhere, line+" ["+outcomes[v]+" by "+by+"'s tests; the package's own passed]")
		}
	case unbuilt:
		r.Unbuilt++
	case cut:
		r.Cut++
		r.Cuts = append(r.Cuts, line+" ["+where+"]")
	case flaky:
		r.Flaky++
		r.Flakes = append(r.Flakes, line+" ["+where+"]")
	case survived:
		r.Survived++
		if ran == 0 {
			r.Unrun++
			line += " [no test runs this line]"
		}
		if where != "" {
			line += " [" + where + "]"
		}
		if e != nil {
			r.Equivalent++
			r.Equivalents = append(r.Equivalents, line+" ["+e.Reason+"]")
			break
		}
		r.Survivors = append(r.Survivors, line)
	}
}

// Decided is how many mutants were killed (hangs under CI's -timeout
// among them) or survived: those the score is over.
func (r *Report) Decided() int { return r.Killed + r.Survived }

// Score is the share of the decided mutants that a test killed, a hang
// under CI's -timeout counted as killed (CI sees its test binary fail).
func (r *Report) Score() float64 { return share(r.Killed, r.Decided()) }

// ScoreWithout is the mutation score as usually defined: the share killed
// of the decided mutants that are not equivalent (the listed survivors
// left out of the denominator, since no test could kill them).
func (r *Report) ScoreWithout() float64 { return share(r.Killed, r.Decided()-r.Equivalent) }

func share(n, of int) float64 {
	if of > 0 {
		return 100 * float64(n) / float64(of)
	}
	return 0
}

// Print writes the report: the score, the counts, the share sampled and
// the share decided, and every survivor and hang.
func (r *Report) Print(w io.Writer) {
	pct := func(n int) float64 {
		if r.Total == 0 {
			return 0
		}
		return 100 * float64(n) / float64(r.Total)
	}
	if r.Baseline != "" {
		fmt.Fprintf(w, "%s: %s\n", r.Dir, r.Baseline)
		r.printRest(w)
		return
	}
	how := "without -race"
	if r.Race {
		how = "with -race"
	}
	share := ""
	if r.Budget > 0 {
		share = fmt.Sprintf(" (%.0f%% of the budget)", 100*float64(r.Took)/float64(r.Budget))
	}
	if r.Measuring >= time.Second {
		share += fmt.Sprintf("; importers' coverage runs it waited for %v, not in that", r.Measuring.Round(time.Second))
	}
	if r.Units > 0 {
		share += fmt.Sprintf("; reached %d of the %d packages with a mutant (one decided or more)", r.Reached, r.Units)
		if len(r.NotReached) > 0 {
			share += "; not reached: " + strings.Join(r.NotReached, ", ")
		}
	}
	fmt.Fprintf(w, "%s: score %.1f%% of %d decided, %.1f%% of %d without the %d listed equivalent (%d killed (%d of them hung: timed out under CI's -timeout), %d survived (%d listed equivalent, %d run by no test); %d did not build, %d cut short by the budget, %d failed only flaky tests); sampled %d of %d mutants (%.0f%%), decided %d (%.1f%%); tests of %d packages %s; %v%s\n",
		r.Dir, r.Score(), r.Decided(), r.ScoreWithout(), r.Decided()-r.Equivalent, r.Equivalent, r.Killed, r.Hung, r.Survived, r.Equivalent, r.Unrun, r.Unbuilt, r.Cut, r.Flaky, r.Tried, r.Total, pct(r.Tried), r.Decided(), pct(r.Decided()), r.Packages, how, r.Took.Round(time.Second), share)
	sort.Strings(r.Survivors)
	for _, s := range r.Survivors {
		fmt.Fprintf(w, "  survived %s\n", s)
	}
	sort.Strings(r.Equivalents)
	for _, s := range r.Equivalents {
		fmt.Fprintf(w, "  equivalent %s\n", s)
	}
	for _, s := range r.Wrong {
		fmt.Fprintf(w, "  WRONG ENTRY %s\n", s)
	}
	if r.KilledElsewhere > 0 {
		fmt.Fprintf(w, "  %d of the %d killed only by another package's tests:\n", r.KilledElsewhere, r.Killed)
	}
	sort.Strings(r.Elsewhere)
	for _, s := range r.Elsewhere {
		fmt.Fprintf(w, "  elsewhere %s\n", s)
	}
	r.printRest(w)
}

// printRest writes what r lists besides its survivors: the equivalents
// list's entries for r's files that match no mutant (or several), so the
// list cannot rot unseen, then the hangs, the cuts and the flakes.
func (r *Report) printRest(w io.Writer) {
	for _, s := range r.Stale {
		fmt.Fprintf(w, "  STALE ENTRY %s\n", s)
	}
	sort.Strings(r.Hangs)
	for _, s := range r.Hangs {
		fmt.Fprintf(w, "  hung     %s\n", s)
	}
	sort.Strings(r.Cuts)
	for _, s := range r.Cuts {
		fmt.Fprintf(w, "  cut      %s\n", s)
	}
	sort.Strings(r.Flakes)
	for _, s := range r.Flakes {
		fmt.Fprintf(w, "  flaky    %s\n", s)
	}
}

// Total sums reports (without their lists of mutants, with the list's
// wrong and stale entries: they are the list's faults, named again at the
// end).
func Total(rs []*Report) *Report {
	t := &Report{Dir: "total"}
	for _, r := range rs {
		t.Total += r.Total
		t.Tried += r.Tried
		t.Killed += r.Killed
		t.KilledElsewhere += r.KilledElsewhere
		t.Survived += r.Survived
		t.Hung += r.Hung
		t.Unbuilt += r.Unbuilt
		t.Cut += r.Cut
		t.Flaky += r.Flaky
		t.Unrun += r.Unrun
		t.Equivalent += r.Equivalent
		t.Wrong = append(t.Wrong, r.Wrong...)
		t.Stale = append(t.Stale, r.Stale...)
		t.Took += r.Took
		t.Measuring += r.Measuring
		t.Packages = max(t.Packages, r.Packages)
		if r.Total == 0 {
			continue
		}
		t.Units++
		if r.Decided() > 0 {
			t.Reached++
		} else {
			why := r.Unreached
			if why == "" {
				why = "none of its mutants decided"
			}
			t.NotReached = append(t.NotReached, r.Dir+" ("+why+")")
		}
	}
	return t
}

// timeouts holds, per package, the longest its test binary ran to pass
// (against the source or a mutant), as go test reports it: that is what
// -timeout bounds, and a build (often longer, above all the unmutated
// coverage run's) is not in it; counting the build made a hang cost
// nearly twice what it must. A package's -timeout is four times that, at
// least a minute and at most max, or twice that when that is more (max
// until it has passed once). Tests
// that bound their own waits fail a deadlock in seconds; the -timeout is
// the backstop for what they do not bound, and a long one only makes
// each such hang cost more of the budget.
type timeouts struct {
	mu   sync.Mutex
	max  time.Duration
	took map[string]time.Duration
}

func (t *timeouts) pass(pkg string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.took[pkg] = max(t.took[pkg], d)
}

func (t *timeouts) of(pkg string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, ok := t.took[pkg]
	if !ok {
		return t.max
	}
	// Never under twice what it took: a package slower than max/2
	// unmutated would time out on every mutant.
	return min(max(4*d, time.Minute), max(t.max, 2*d))
}

type verdict int

const (
	killed verdict = iota
	survived
	unbuilt
	hung
	cut
	// flaky: the only failures were another package's tests that failed
	// unmutated too, or passed on the mutant when run again (not
	// decided, not scored).
	flaky
)

var verdictNames = map[verdict]string{killed: "failed", survived: "passed", unbuilt: "did not build", hung: "timed out", cut: "cut short", flaky: "failed only in tests that are flaky"}

// outcomes name a mutant's verdict in the progress lines.
var outcomes = map[verdict]string{killed: "killed", survived: "survived", unbuilt: "unbuilt", hung: "hung", cut: "cut", flaky: "flaky"}

// test runs the tests of pkgs against m, one package at a time, and
// stops at the first that does not pass. A package whose tests, unmutated,
// never execute m's line (cov) is skipped: they cannot tell m from the
// source. When no package's tests ran, m survived if it builds. Past
// deadline it starts no further package: the mutant is cut short, and not
// counted. A package's tests that reach their -timeout (times) run again,
// whole, under CI's (cfg.CITimeout), which is what CI would see: a hang
// there is the verdict hung (scored as a kill: CI's test binary fails), a
// failure a kill, a pass a pass (the mutant is slow, and CI passes it:
// where says so); a mutant whose rerun would not end before deadline is
// cut short. For a kill or a hang, where names the package whose tests
// did it (the package's own or another's), then for a hang the tests that
// were running; for a cut, how many packages' tests it had passed. ran is
// how many packages' tests ran against m; measuring how long it waited for
// importers' unmutated coverage runs (each once a run, for every mutant
// after: no one mutant's cost).
func test(cfg Config, m Mutant, pkgs []string, race bool, times *timeouts, cov *coverage, deadline time.Time, work string) (v verdict, where string, ran int, measuring time.Duration) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		fatal(err)
	}
	abs, _ := filepath.Abs(m.File)
	mutated := filepath.Join(work, "mutant.go")
	src, err := m.Source()
	if err != nil {
		fatal(err)
	}
	if err := os.WriteFile(mutated, src, 0o644); err != nil {
		fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: mutated}})
	ov := filepath.Join(work, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		fatal(err)
	}
	var flakes, slow []string
	for i, p := range pkgs {
		if time.Now().After(deadline) {
			// the budget ran out before every package's tests ran
			return cut, fmt.Sprintf("passed %d of %d packages", i, len(pkgs)), ran, measuring
		}
		t1 := time.Now()
		covers := cov.runs(p, i == 0, m)
		measuring += time.Since(t1)
		if !covers {
			continue
		}
		if time.Now().After(deadline) {
			// the budget ran out while the importer's coverage was measured
			return cut, fmt.Sprintf("passed %d of %d packages", i, len(pkgs)), ran, measuring
		}
		ran++
		name := strings.TrimPrefix(p, modPrefix(p))
		t0 := time.Now()
		timeout := times.of(p)
		v, running, failed, took := testPackageFailed(cfg, ov, p, race, timeout)
		if v == hung {
			// Only CI's -timeout tells a hang CI sees from a slow pass.
			if time.Now().Add(cfg.CITimeout).After(deadline) {
				return cut, fmt.Sprintf("passed %d of %d packages; %s reached -timeout %v (%s), no time left to run them under CI's -timeout %v", i, len(pkgs), name, timeout, running, cfg.CITimeout), ran, measuring
			}
			t0 = time.Now()
			timeout = cfg.CITimeout
			v, running, failed, took = testPackageFailed(cfg, ov, p, race, timeout)
			if v == survived {
				slow = append(slow, fmt.Sprintf("%s's tests passed in %v under CI's -timeout %v", name, orWall(took, t0).Round(time.Second), cfg.CITimeout))
				continue
			}
		}
		switch v {
		case survived:
			times.pass(p, orWall(took, t0))
			continue
		case hung:
			return v, strings.TrimSpace(name + " " + running), ran, measuring
		case killed:
			if i > 0 {
				if flake := confirm(cfg, ov, p, race, timeout, failed); flake != "" {
					flakes = append(flakes, flake)
					continue
				}
			}
			return v, name, ran, measuring
		}
		return v, "", ran, measuring
	}
	if len(flakes) > 0 {
		return flaky, strings.Join(flakes, "; "), ran, measuring
	}
	if ran == 0 && !builds(cfg, ov, pkgs[0]) {
		return unbuilt, "", 0, measuring
	}
	if vetFails(cfg, ov, pkgs[0], race) {
		return killed, strings.TrimPrefix(pkgs[0], modPrefix(pkgs[0])) + " " + byVet, ran, measuring
	}
	return survived, strings.Join(slow, "; "), ran, measuring
}

// byVet ends a kill's where when go test's vet checks made it.
const byVet = "go vet"

// vetFails reports whether go test's own vet checks (the subset it runs
// before a package's tests) fail on pkg with the overlay: the tests run
// with -vet=off, which saves the vet of each package a mutant's tests
// run (5 s of runtime/backend's 22 s run against a change to it), and
// only a mutant every test passed is vetted, once: a failure there fails
// CI's go test, so it is a kill. (With vet on, such a mutant was reported
// as not built.) The test binary is the tests' own, from the build cache,
// and is not run (-exec true): its TestMain has nothing to do with vet,
// and a store's starts the servers its tests need.
func vetFails(cfg Config, overlay, pkg string, race bool) bool {
	args := []string{"test", "-count=1", "-run", "^$", "-exec", "true", "-overlay", overlay}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, pkg)...)
	cmd.Dir = cfg.Root
	out, err := cmd.CombinedOutput()
	return err != nil && bytes.Contains(out, []byte("[build failed]"))
}

// confirm checks a kill by another package's tests than the mutated
// one's own (whose tests passed unmutated before any mutant ran; an
// importer's were never run plain): the tests that failed run again
// unmutated, then against the mutant once more. It is a kill only when
// they pass unmutated and fail again on the mutant; else it returns what
// makes the failure a flake, and the package's tests decide nothing about
// the mutant. With no failing test named (a failure outside any test,
// goleak's in TestMain), the whole package runs again.
func confirm(cfg Config, ov, p string, race bool, timeout time.Duration, failed []string) string {
	var extra []string
	what := "its tests"
	if len(failed) > 0 {
		extra = []string{"-run", runOnly(failed)}
		what = strings.Join(failed, " ")
	}
	name := strings.TrimPrefix(p, modPrefix(p)) + " " + what
	if v, _ := testPackage(cfg, "", p, race, timeout, extra...); v != survived {
		return fmt.Sprintf("%s %s unmutated too", name, verdictNames[v])
	}
	if v, _ := testPackage(cfg, ov, p, race, timeout, extra...); v != killed {
		return fmt.Sprintf("%s failed on the mutant, then %s on it again", name, verdictNames[v])
	}
	return ""
}

// orWall is d, or the time since t0 when d is unknown (0).
func orWall(d time.Duration, t0 time.Time) time.Duration {
	if d > 0 {
		return d
	}
	return time.Since(t0)
}

// builds reports whether pkg compiles with the overlay. The build is
// written nowhere: go build of one main package writes its program into
// the module's root (a mutant of cmd/testsum's left testsum there).
func builds(cfg Config, overlay, pkg string) bool {
	_, err := goCmd(cfg.Root, "build", "-o", os.DevNull, "-overlay", overlay, pkg)
	return err == nil
}

// coverage knows, per test package, which blocks of the mutated packages
// its tests execute, from unmutated runs: a package's own run before any
// of its mutants, with coverage of the package alone (that is all its own
// mutants read), and, as an importer, the first time another package's
// mutant would run its tests, a run with -coverpkg naming every mutated
// package. Coverage of every package a test binary links is counted in
// every block it runs: cmd/blobbench's test binary took 6m50s so, against
// 63 s in make test, and its own mutants read none of it. A mutant whose
// line no block of a package's run executed cannot fail that package's
// tests, which are then not run against it. Where a run failed, or the
// line is in no block (outside a function, a case's expression), the
// tests run. A test that runs its test binary again as a child process
// counts the child's lines only when it passes -test.gocoverdir on
// (internal/testchild does): else they are run by no test here.
type coverage struct {
	cfg     Config
	end     time.Time // the budget's end: a run still going then is cut short (zero: none)
	tmp     string
	pkgs    string            // -coverpkg of an importer's run
	profile map[string]string // a mutated file's absolute path -> its name in a profile
	mu      sync.Mutex
	of      map[role]*covered
}

// role is a test package's run as its own package's (coverage of it
// alone) or as an importer's (coverage of every mutated package).
type role struct {
	pkg string
	own bool
}

// covered is one test package's coverage: per profile file name, its
// blocks; nil when the run did not pass.
type covered struct {
	once   sync.Once
	blocks map[string][]block
	took   time.Duration // the test binary's run, when it passed (0: unknown)
}

// block is one counted block: from line.col to line.col, and how many
// times it ran.
type block struct{ l1, c1, l2, c2, n int }

func newCoverage(cfg Config, units []*unit, tmp string) *coverage {
	c := &coverage{cfg: cfg, tmp: tmp, profile: map[string]string{}, of: map[role]*covered{}}
	seen := map[string]bool{}
	var pkgs []string
	for _, u := range units {
		if !seen[u.importPath] {
			seen[u.importPath] = true
			pkgs = append(pkgs, u.importPath)
		}
		files, _ := filepath.Glob(filepath.Join(cfg.Root, u.pkgDir, "*.go"))
		for _, f := range files {
			c.profile[f] = u.importPath + "/" + filepath.Base(f)
		}
	}
	c.pkgs = strings.Join(pkgs, ",")
	return c
}

func (c *coverage) get(pkg string, own bool) *covered {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := role{pkg, own}
	if c.of[r] == nil {
		c.of[r] = &covered{}
	}
	return c.of[r]
}

// baseline runs pkg's own tests unmutated (with -race as its mutants'
// will run), recording their coverage of pkg, and returns their verdict;
// they run again without coverage when they failed with it. Its -timeout
// is CI's: a package whose tests pass in CI is mutated, however slow.
func (c *coverage) baseline(pkg string, race bool) (verdict, string) {
	var v verdict
	var running string
	c.get(pkg, true).once.Do(func() { v, running = c.measure(pkg, true, race, c.cfg.CITimeout) })
	if v == killed {
		// A test that fails only when measured (one that counts
		// allocations or time) leaves the coverage unknown, not the
		// package unmutated: the verdict is its plain run's.
		v, running, _, _ = testPackageBy(c.end, c.cfg, "", pkg, race, c.cfg.CITimeout)
	}
	return v, running
}

// measure runs pkg's tests with coverage, of pkg alone for its own role
// and of every mutated package for an importer's, and keeps the blocks
// when they pass.
func (c *coverage) measure(pkg string, own, race bool, timeout time.Duration) (verdict, string) {
	f, err := os.CreateTemp(c.tmp, "cover-")
	if err != nil {
		fatal(err)
	}
	f.Close()
	of := c.pkgs
	if own {
		of = pkg
	}
	v, running, _, took := testPackageBy(c.end, c.cfg, "", pkg, race, timeout, "-coverpkg", of, "-coverprofile", f.Name())
	cv := c.get(pkg, own)
	cv.took = took
	if v == survived {
		data, err := os.ReadFile(f.Name())
		if err == nil {
			cv.blocks = parseProfile(data)
		}
	}
	return v, running
}

// runs reports whether pkg's tests may execute m's line: false only when
// their unmutated run passed and every block holding the line ran 0
// times. own says pkg is m's package: its own run's coverage is read
// (measured here if it was not yet); else an importer's, measured the
// first time it is asked.
func (c *coverage) runs(pkg string, own bool, m Mutant) bool {
	cv := c.get(pkg, own)
	cv.once.Do(func() { c.measure(pkg, own, false, c.cfg.CITimeout) })
	if cv.blocks == nil {
		return true
	}
	abs, _ := filepath.Abs(m.File)
	in := false
	for _, b := range cv.blocks[c.profile[abs]] {
		l, col := m.At[0], m.At[1]
		if (l > b.l1 || l == b.l1 && col >= b.c1) && (l < b.l2 || l == b.l2 && col <= b.c2) {
			if b.n > 0 {
				return true
			}
			in = true
		}
	}
	return !in
}

// parseProfile reads a coverage profile ("mode: set", then lines
// "name.go:l1.c1,l2.c2 statements count").
func parseProfile(data []byte) map[string][]block {
	out := map[string][]block{}
	for _, l := range strings.Split(string(data), "\n") {
		i := strings.LastIndex(l, ":")
		if i < 0 || strings.HasPrefix(l, "mode:") {
			continue
		}
		var b block
		var stmts int
		if _, err := fmt.Sscanf(l[i+1:], "%d.%d,%d.%d %d %d", &b.l1, &b.c1, &b.l2, &b.c2, &stmts, &b.n); err != nil {
			continue
		}
		out[l[:i]] = append(out[l[:i]], b)
	}
	return out
}

// modPrefix is the module-host part of pkg ("github.com/owner/name/") to
// leave out when naming it.
func modPrefix(pkg string) string {
	if parts := strings.SplitN(pkg, "/", 4); len(parts) == 4 && strings.Contains(parts[0], ".") {
		return strings.Join(parts[:3], "/") + "/"
	}
	return ""
}

// testPackage runs one package's tests with the overlay ("": none),
// -timeout timeout and the extra flags. For a hang it returns the tests the timeout's panic
// says were running; for a failure, the top-level tests that failed.
func testPackage(cfg Config, overlay, pkg string, race bool, timeout time.Duration, extra ...string) (verdict, string) {
	v, running, _, _ := testPackageFailed(cfg, overlay, pkg, race, timeout, extra...)
	return v, running
}

// testPackageFailed is testPackage that also returns, for a failure, the
// top-level tests that failed and, for a pass, the time the test binary
// ran as go test reports it (0 if it does not): what its -timeout bounds,
// which leaves out the build.
func testPackageFailed(cfg Config, overlay, pkg string, race bool, timeout time.Duration, extra ...string) (verdict, string, []string, time.Duration) {
	return testPackageBy(time.Time{}, cfg, overlay, pkg, race, timeout, extra...)
}

// testPackageBy is testPackageFailed cut short at end (zero: never): the
// verdict is then cut.
func testPackageBy(end time.Time, cfg Config, overlay, pkg string, race bool, timeout time.Duration, extra ...string) (verdict, string, []string, time.Duration) {
	// The test binary panics at -timeout; the context is the backstop
	// for a build or a binary that never gets that far.
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout+2*time.Minute)
	defer cancel()
	if !end.IsZero() {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadline(ctx, end)
		defer stop()
	}
	// -vet=off: a mutant's vet is run once, after its tests all passed
	// (vetFails), not before each package's tests.
	args := []string{"test", "-count=1", "-failfast", "-vet=off", "-timeout", timeout.String()}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	if race {
		args = append(args, "-race")
	}
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = cfg.Root
	inGroup(cmd)
	out, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() != nil && !end.IsZero() && !time.Now().Before(end):
		return cut, "", nil, 0
	case ctx.Err() != nil:
		return hung, "(go test killed)", nil, 0
	case bytes.Contains(out, []byte("panic: test timed out")):
		return hung, running(out), nil, 0
	case err == nil:
		return survived, "", nil, binaryTime(out)
	case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
		return unbuilt, "", nil, 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return killed, "", failedTests(out), 0
	}
	return unbuilt, "", nil, 0
}

// okLine is go test's line for a package that passed: "ok", the package
// and the time its test binary ran.
var okLine = regexp.MustCompile(`(?m)^ok\s+\S+\s+([0-9]+(?:\.[0-9]+)?)s\b`)

// binaryTime is the time go test's output says the test binary ran, or 0.
func binaryTime(out []byte) time.Duration {
	m := okLine.FindSubmatch(out)
	if m == nil {
		return 0
	}
	sec, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		return 0
	}
	return time.Duration(sec * float64(time.Second))
}

// failedTests are the top-level tests go test's output says failed
// ("--- FAIL: TestX (0.01s)" at the start of a line; a subtest's is
// indented).
func failedTests(out []byte) []string {
	var names []string
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "--- FAIL: "); ok {
			name, _, _ := strings.Cut(rest, " ")
			names = append(names, name)
		}
	}
	return names
}

// runOnly is a -run pattern that selects exactly the top-level tests
// named, and their subtests.
func runOnly(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// running is the list of tests a timed-out test binary says were running
// ("panic: test timed out after 1m0s\n\trunning tests:\n\t\tTestX (1m0s)").
func running(out []byte) string {
	_, after, ok := bytes.Cut(out, []byte("running tests:\n"))
	if !ok {
		return ""
	}
	var names []string
	for _, l := range strings.Split(string(after), "\n") {
		if !strings.HasPrefix(l, "\t\t") {
			break
		}
		name, _, _ := strings.Cut(strings.TrimSpace(l), " ")
		names = append(names, name)
	}
	return strings.Join(names, " ")
}

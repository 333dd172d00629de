// Command mutate is a small mutation tester that measures what CI catches:
// it makes one change at a time to a package's source (a flipped
// comparison, a negated condition, a dropped statement, && swapped with
// ||, an integer constant off by one) and runs, through go test -overlay
// (the tree is never written), the tests of the package and then those of
// every package in the module whose tests link it (its importers, direct
// or not), one package at a time, stopping at the first that fails. A
// package whose code starts goroutines or uses package sync is tested with
// -race, as CI tests it. It reports per package the mutants tried out of
// all (the share sampled), those the tests killed, those that hung (a test
// timed out: reported apart, since a hang is not a failing assertion),
// and each survivor's file:line, change and source line.
//
//	go run ./cmd/mutate -budget 30m runtime/backend stores/fs
//
// A mutant the compiler refuses is not counted. The budget is shared out
// package by package, in order: each gets an equal part of what is left,
// so time a small package does not use goes to the next ones, and when a
// package's part cannot cover every mutant, they are tried in a seeded
// random order. No mutant is started that would not finish within its
// package's part (judged by the mean so far); one started finishes unless
// the whole budget ends first, so few are cut short, and a cut-short
// mutant counts as sampled but not decided: the score is over the
// decided ones.
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
	"go/parser"
	"go/printer"
	"go/token"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	budget := flag.Duration("budget", 5*time.Minute, "total time to spend (mutants are sampled to fit)")
	timeout := flag.Duration("timeout", 2*time.Minute, "go test -timeout for one package's tests against a mutant (exceeded: the mutant hung)")
	seed := flag.Int64("seed", 1, "order in which mutants are tried")
	jobs := flag.Int("j", 2, "mutants tested at once")
	importers := flag.Bool("importers", true, "also run the tests of the packages whose tests link the mutated one")
	race := flag.String("race", "auto", "-race: auto (where the package starts goroutines or uses sync), always or never")
	list := flag.Bool("list", false, "list the mutants and exit")
	strict := flag.Bool("strict", false, "exit 1 when a mutant survived")
	only := flag.String("only", "", "test only the mutants whose file:line (or file:line:col) is in this comma-separated list")
	dir := flag.String("C", ".", "the module's root directory; package directories are relative to it")
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
	cfg := Config{Root: *dir, Budget: *budget, Timeout: *timeout, Seed: *seed, Jobs: *jobs, Importers: *importers, Race: *race}
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	if *list {
		for _, d := range flag.Args() {
			ms, err := Mutants(filepath.Join(*dir, d))
			if err != nil {
				fatal(err)
			}
			for _, m := range ms {
				fmt.Printf("%s: %s\n", m.Pos, m.Desc)
			}
		}
		return
	}
	reports, err := Run(cfg, flag.Args(), os.Stdout)
	if err != nil {
		fatal(err)
	}
	exit := 0
	for _, r := range reports {
		if r.Survived > 0 && *strict {
			exit = 1
		}
	}
	os.Exit(exit)
}

// Config is one run of the tool.
type Config struct {
	Root      string        // the module's root
	Budget    time.Duration // shared out among the packages
	Timeout   time.Duration // go test -timeout of one package's tests
	Seed      int64
	Jobs      int
	Importers bool     // run the importers' tests too
	Race      string   // auto, always or never
	Only      []string // file:line[:col] positions to keep (nil: all)
}

// Run mutates each package directory (or single file) in dirs, relative to
// cfg.Root, writes each package's report to w as it finishes, then the
// total, and returns the reports.
func Run(cfg Config, dirs []string, w io.Writer) ([]*Report, error) {
	if cfg.Jobs < 1 {
		cfg.Jobs = 1
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
	var reports []*Report
	for k, d := range dirs {
		d = strings.TrimPrefix(filepath.Clean(d), "./")
		ms, err := Mutants(filepath.Join(root, d))
		if err != nil {
			return reports, err
		}
		if cfg.Only != nil {
			ms = pick(ms, root, cfg.Only)
		}
		rand.New(rand.NewSource(cfg.Seed)).Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		pkgDir := d
		if strings.HasSuffix(d, ".go") {
			pkgDir = filepath.Dir(d)
		}
		importPath := mod + "/" + filepath.ToSlash(pkgDir)
		if pkgDir == "." {
			importPath = mod
		}
		pkgs := []string{importPath}
		if cfg.Importers {
			pkgs = append(pkgs, testers[importPath]...)
		}
		race := cfg.Race == "always"
		if cfg.Race == "auto" {
			if race, err = concurrent(filepath.Join(root, pkgDir)); err != nil {
				return reports, err
			}
		}
		share := time.Since(start) + (cfg.Budget-time.Since(start))/time.Duration(len(dirs)-k)
		// The package's own tests, unmutated: a failure there would count
		// every mutant killed, and their time bounds a mutant's (a hang
		// then costs a few times a run, not cfg.Timeout).
		t0 := time.Now()
		if v, _ := testPackage(cfg, "", importPath, race, cfg.Timeout); v != survived {
			r := &Report{Dir: d, Race: race, Packages: len(pkgs), Total: len(ms), Baseline: fmt.Sprintf("its own tests do not pass unmutated (%s): no mutant tried", verdictNames[v])}
			r.Print(w)
			reports = append(reports, r)
			continue
		}
		times.pass(importPath, time.Since(t0))
		r := run(cfg, ms, pkgs, race, times, start.Add(share), start.Add(cfg.Budget), tmp)
		r.Dir, r.Race, r.Packages = d, race, len(pkgs)
		r.Print(w)
		reports = append(reports, r)
	}
	Total(reports).Print(w)
	return reports, nil
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
	Desc string // what changed
	Line string // the source line changed, as it was
	Src  []byte // the file, changed
}

// Mutants are every mutant of the non-test Go files of dir (or of the one
// file dir names), in source order.
func Mutants(dir string) ([]Mutant, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if strings.HasSuffix(dir, ".go") {
		files = []string{dir}
	}
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var out []Mutant
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if bytes.Contains(src, []byte("// Code generated ")) {
			continue
		}
		n := 0
		for {
			m, ok, err := mutate(file, src, n)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			if m != nil {
				out = append(out, *m)
			}
			n++
		}
	}
	return out, nil
}

var flips = map[token.Token][]token.Token{
	token.EQL: {token.NEQ}, token.NEQ: {token.EQL},
	token.LSS: {token.GEQ, token.LEQ}, token.GEQ: {token.LSS, token.GTR},
	token.GTR: {token.LEQ, token.GEQ}, token.LEQ: {token.GTR, token.LSS},
	token.LAND: {token.LOR}, token.LOR: {token.LAND},
}

// mutate parses src afresh and applies its n-th mutation site; ok is false
// past the last site. A nil Mutant with ok is a site that cannot be
// printed back.
func mutate(file string, src []byte, n int) (*Mutant, bool, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, src, parser.ParseComments)
	if err != nil {
		return nil, false, err
	}
	i := 0
	var desc string
	var at token.Pos
	hit := func(p token.Pos, d string) bool {
		if i == n {
			desc, at = d, p
		}
		i++
		return i-1 == n
	}
	ast.Inspect(f, func(node ast.Node) bool {
		if desc != "" {
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
	if desc == "" {
		return nil, false, nil
	}
	var buf bytes.Buffer
	if err := printer.Fprint(&buf, fset, f); err != nil {
		return nil, true, nil
	}
	p := fset.Position(at)
	line := ""
	if lines := bytes.Split(src, []byte("\n")); p.Line-1 < len(lines) {
		line = strings.TrimSpace(string(lines[p.Line-1]))
	}
	return &Mutant{File: file, Pos: fmt.Sprintf("%s:%d:%d", file, p.Line, p.Column), Desc: desc, Line: line, Src: buf.Bytes()}, true, nil
}

// Report is what one package's mutants came to.
type Report struct {
	Dir      string
	Race     bool // tested with -race
	Packages int  // packages whose tests ran against each mutant
	Total    int  // mutants of the package
	Tried    int  // mutants started (the sample)
	Killed   int  // a test failed
	Survived int  // every test passed
	Hung     int  // a test binary reached its -timeout (not counted as killed)
	Unbuilt  int  // the compiler refused the mutant (not counted)
	Cut      int  // passed the tests run before the budget ran out (not counted)
	// Baseline, when set, says why no mutant was tried.
	Baseline string
	// Survivors and Hangs are "file:line:col: change: source line"; a
	// hang ends with the package and tests that were running.
	Survivors, Hangs []string
	Took             time.Duration
}

// Decided is how many mutants were killed, survived or hung: those the
// score is over.
func (r *Report) Decided() int { return r.Killed + r.Survived + r.Hung }

// Score is the share of the decided mutants that a test killed, a hang
// counted as not killed.
func (r *Report) Score() float64 {
	if n := r.Decided(); n > 0 {
		return 100 * float64(r.Killed) / float64(n)
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
		return
	}
	how := "without -race"
	if r.Race {
		how = "with -race"
	}
	fmt.Fprintf(w, "%s: score %.1f%% (%d killed, %d survived, %d hung; %d did not build, %d cut short by the budget); sampled %d of %d mutants (%.0f%%), decided %d (%.1f%%); tests of %d packages %s; %v\n",
		r.Dir, r.Score(), r.Killed, r.Survived, r.Hung, r.Unbuilt, r.Cut, r.Tried, r.Total, pct(r.Tried), r.Decided(), pct(r.Decided()), r.Packages, how, r.Took.Round(time.Second))
	sort.Strings(r.Survivors)
	for _, s := range r.Survivors {
		fmt.Fprintf(w, "  survived %s\n", s)
	}
	sort.Strings(r.Hangs)
	for _, s := range r.Hangs {
		fmt.Fprintf(w, "  hung     %s\n", s)
	}
}

// Total sums reports (without their lists).
func Total(rs []*Report) *Report {
	t := &Report{Dir: "total"}
	for _, r := range rs {
		t.Total += r.Total
		t.Tried += r.Tried
		t.Killed += r.Killed
		t.Survived += r.Survived
		t.Hung += r.Hung
		t.Unbuilt += r.Unbuilt
		t.Cut += r.Cut
		t.Took += r.Took
		t.Packages = max(t.Packages, r.Packages)
	}
	return t
}

// timeouts holds, per package, the longest its tests took to pass (against
// the source or a mutant): a package's -timeout is four times that, at
// least a minute and at most max (max until it has passed once). Tests
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
	return min(max(4*d, time.Minute), t.max)
}

// run tests mutants until they run out or the next would not finish
// before soft (the package's part of the budget: judged by the mean time
// its mutants have taken so far). A mutant started may go on past soft,
// taking from the next packages' parts, but not past hard (the whole
// budget's end): then it is cut short.
func run(cfg Config, ms []Mutant, pkgs []string, race bool, times *timeouts, soft, hard time.Time, tmp string) *Report {
	r := &Report{Total: len(ms)}
	start := time.Now()
	var mu sync.Mutex
	var spent time.Duration // summed over finished mutants
	finished := 0
	var wg sync.WaitGroup
	next := make(chan int)
	for j := 0; j < cfg.Jobs; j++ {
		wg.Add(1)
		go func(j int) {
			defer wg.Done()
			for k := range next {
				m := ms[k]
				t0 := time.Now()
				out, where := test(cfg, m, pkgs, race, times, hard, filepath.Join(tmp, strconv.Itoa(j)))
				pos := m.Pos
				if rel, err := filepath.Rel(cfg.Root, m.Pos); err == nil {
					pos = rel
				}
				line := fmt.Sprintf("%s: %s: %s", pos, m.Desc, m.Line)
				mu.Lock()
				spent += time.Since(t0)
				finished++
				switch out {
				case killed:
					r.Killed++
				case hung:
					r.Hung++
					r.Hangs = append(r.Hangs, line+" ["+where+"]")
				case unbuilt:
					r.Unbuilt++
				case cut:
					r.Cut++
				case survived:
					r.Survived++
					r.Survivors = append(r.Survivors, line)
				}
				mu.Unlock()
			}
		}(j)
	}
	for k := range ms {
		mu.Lock()
		var mean time.Duration
		if finished > 0 {
			mean = spent / time.Duration(finished)
		}
		mu.Unlock()
		if time.Now().Add(mean).After(soft) {
			break
		}
		mu.Lock()
		r.Tried++
		mu.Unlock()
		next <- k
	}
	close(next)
	wg.Wait()
	r.Took = time.Since(start)
	return r
}

type verdict int

const (
	killed verdict = iota
	survived
	unbuilt
	hung
	cut
)

var verdictNames = map[verdict]string{killed: "failed", survived: "passed", unbuilt: "did not build", hung: "timed out", cut: "cut short"}

// test runs the tests of pkgs against m, one package at a time, and
// stops at the first that does not pass. Past deadline it starts no
// further package: the mutant is cut short, and not counted. For a hang,
// where names the package and the tests that were running.
func test(cfg Config, m Mutant, pkgs []string, race bool, times *timeouts, deadline time.Time, work string) (verdict, string) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		fatal(err)
	}
	abs, _ := filepath.Abs(m.File)
	mutated := filepath.Join(work, "mutant.go")
	if err := os.WriteFile(mutated, m.Src, 0o644); err != nil {
		fatal(err)
	}
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {abs: mutated}})
	ov := filepath.Join(work, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o644); err != nil {
		fatal(err)
	}
	for _, p := range pkgs {
		if time.Now().After(deadline) {
			return cut, "" // the budget ran out before every package's tests ran
		}
		t0 := time.Now()
		v, running := testPackage(cfg, ov, p, race, times.of(p))
		switch v {
		case survived:
			times.pass(p, time.Since(t0))
			continue
		case hung:
			return v, strings.TrimSpace(strings.TrimPrefix(p, modPrefix(p)) + " " + running)
		}
		return v, ""
	}
	return survived, ""
}

// modPrefix is the module-host part of pkg ("github.com/owner/name/") to
// leave out when naming it.
func modPrefix(pkg string) string {
	if parts := strings.SplitN(pkg, "/", 4); len(parts) == 4 && strings.Contains(parts[0], ".") {
		return strings.Join(parts[:3], "/") + "/"
	}
	return ""
}

// testPackage runs one package's tests with the overlay ("": none) and
// -timeout timeout. For a hang it returns the tests the timeout's panic
// says were running.
func testPackage(cfg Config, overlay, pkg string, race bool, timeout time.Duration) (verdict, string) {
	// The test binary panics at -timeout; the context is the backstop
	// for a build or a binary that never gets that far.
	ctx, cancel := context.WithTimeout(context.Background(), 2*timeout+2*time.Minute)
	defer cancel()
	args := []string{"test", "-count=1", "-failfast", "-timeout", timeout.String()}
	if overlay != "" {
		args = append(args, "-overlay", overlay)
	}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, pkg)...)
	cmd.Dir = cfg.Root
	out, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() != nil:
		return hung, "(go test killed)"
	case bytes.Contains(out, []byte("panic: test timed out")):
		return hung, running(out)
	case err == nil:
		return survived, ""
	case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
		return unbuilt, ""
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return killed, ""
	}
	return unbuilt, ""
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

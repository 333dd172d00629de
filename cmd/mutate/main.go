// Command mutate is a small mutation tester: it makes one change at a time
// to a package's source (a flipped comparison, a negated condition, a
// dropped statement, && swapped with ||, an integer constant off by one),
// runs the package's tests against it through go test -overlay (the tree
// is never written), and reports per package the share of mutants the
// tests killed and each survivor's file:line and mutation.
//
//	go run ./cmd/mutate -budget 10m runtime/backend runtime/rules
//
// A mutant the compiler refuses is not counted. When the budget cannot
// cover every mutant, each package gets an equal share of the budget and
// its mutants are tried in a seeded random order.
package main

import (
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
	timeout := flag.Duration("timeout", 2*time.Minute, "time one mutant's tests may take (longer: killed, as a hang)")
	seed := flag.Int64("seed", 1, "order in which mutants are tried")
	jobs := flag.Int("j", 2, "mutants tested at once")
	tests := flag.String("tests", "", "extra packages whose tests also run against each mutant (comma-separated)")
	list := flag.Bool("list", false, "list the mutants and exit")
	strict := flag.Bool("strict", false, "exit 1 when a mutant survived")
	only := flag.String("only", "", "test only the mutants whose file:line (or file:line:col) is in this comma-separated list")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: mutate [flags] package-dir...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	tmp, err := os.MkdirTemp("", "mutate-")
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(tmp)
	var extra []string
	if *tests != "" {
		for _, p := range strings.Split(*tests, ",") {
			extra = append(extra, "./"+strings.TrimPrefix(p, "./"))
		}
	}
	share := *budget / time.Duration(flag.NArg())
	exit := 0
	for _, dir := range flag.Args() {
		dir = strings.TrimPrefix(filepath.Clean(dir), "./")
		ms, err := Mutants(dir)
		if err != nil {
			fatal(err)
		}
		if *list {
			for _, m := range ms {
				fmt.Printf("%s: %s\n", m.Pos, m.Desc)
			}
			continue
		}
		if *only != "" {
			ms = pick(ms, strings.Split(*only, ","))
		}
		rand.New(rand.NewSource(*seed)).Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		pkg := dir
		if strings.HasSuffix(dir, ".go") {
			pkg = filepath.Dir(dir)
		}
		r := run(pkg, ms, extra, share, *timeout, *jobs, tmp)
		r.dir = dir
		r.print(os.Stdout)
		if r.survived > 0 && *strict {
			exit = 1
		}
	}
	os.Exit(exit)
}

// pick keeps the mutants at the positions given (file:line or
// file:line:col).
func pick(ms []Mutant, at []string) []Mutant {
	var out []Mutant
	for _, m := range ms {
		for _, a := range at {
			if m.Pos == a || strings.HasPrefix(m.Pos, a+":") {
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
	return &Mutant{File: file, Pos: fmt.Sprintf("%s:%d:%d", file, p.Line, p.Column), Desc: desc, Src: buf.Bytes()}, true, nil
}

type report struct {
	dir                              string
	total, tried                     int
	killed, survived, unbuilt, hangs int
	survivors                        []string
	took                             time.Duration
}

func (r *report) print(w *os.File) {
	score := 0.0
	if r.killed+r.survived > 0 {
		score = 100 * float64(r.killed) / float64(r.killed+r.survived)
	}
	fmt.Fprintf(w, "%s: score %.1f%% (%d killed, %d survived; %d did not build; %d hung) of %d tried of %d mutants in %v\n",
		r.dir, score, r.killed, r.survived, r.unbuilt, r.hangs, r.tried, r.total, r.took.Round(time.Second))
	sort.Strings(r.survivors)
	for _, s := range r.survivors {
		fmt.Fprintf(w, "  survived %s\n", s)
	}
}

// run tests mutants of dir until they or the budget run out.
func run(dir string, ms []Mutant, extra []string, budget, timeout time.Duration, jobs int, tmp string) *report {
	r := &report{dir: dir, total: len(ms)}
	start := time.Now()
	deadline := start.Add(budget)
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for j := 0; j < jobs; j++ {
		wg.Add(1)
		go func(j int) {
			defer wg.Done()
			for k := range next {
				out := test(dir, ms[k], extra, timeout, filepath.Join(tmp, strconv.Itoa(j)))
				mu.Lock()
				r.tried++
				switch out {
				case killed:
					r.killed++
				case hung:
					r.killed++
					r.hangs++
				case unbuilt:
					r.unbuilt++
				case survived:
					r.survived++
					r.survivors = append(r.survivors, ms[k].Pos+": "+ms[k].Desc)
				}
				mu.Unlock()
			}
		}(j)
	}
	for k := range ms {
		if time.Now().After(deadline) {
			break
		}
		next <- k
	}
	close(next)
	wg.Wait()
	r.took = time.Since(start)
	return r
}

type verdict int

const (
	killed verdict = iota
	survived
	unbuilt
	hung
)

func test(dir string, m Mutant, extra []string, timeout time.Duration, work string) verdict {
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
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := append([]string{"test", "-overlay", ov, "-count=1", "-failfast", "-timeout", timeout.String(), "./" + dir}, extra...)
	cmd := exec.CommandContext(ctx, "go", args...)
	out, err := cmd.CombinedOutput()
	switch {
	case ctx.Err() != nil || bytes.Contains(out, []byte("test timed out")):
		return hung
	case err == nil:
		return survived
	case bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")):
		return unbuilt
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return killed
	}
	return unbuilt
}

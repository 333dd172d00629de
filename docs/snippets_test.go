// Package docs_test holds the rule every doc's Go snippet keeps: it
// compiles against the tree and checks its errors.
package docs_test

import (
	"bufio"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/kvblob/kvblob/internal/srccheck"
)

// fragmentMarker, on the line before a ```go fence (blank lines between
// allowed), exempts that block: a deliberate fragment (elided code, names
// from the surrounding prose) that is not meant to compile.
const fragmentMarker = "<!-- snippet: fragment -->"

// knownImports are the packages a snippet may use without an import
// block of its own: the test adds the import for each name it uses. A
// snippet that starts with "package" brings its own imports.
var knownImports = map[string]string{
	"bytes": "bytes", "context": "context", "errors": "errors", "fmt": "fmt", "log": "log",
	"os": "os", "time": "time", "http": "net/http",
	"prometheus": "github.com/prometheus/client_golang/prometheus",
	"promhttp":   "github.com/prometheus/client_golang/prometheus/promhttp",
	"zerolog":    "github.com/rs/zerolog",
	"backend":    "github.com/kvblob/kvblob/runtime/backend",
	"driver":     "github.com/kvblob/kvblob/runtime/driver",
	"hostmem":    "github.com/kvblob/kvblob/runtime/hostmem",
	"metrics":    "github.com/kvblob/kvblob/runtime/metrics",
	"rules":      "github.com/kvblob/kvblob/runtime/rules",
	"memory":     "github.com/kvblob/kvblob/stores/memory",
	"redis":      "github.com/kvblob/kvblob/stores/redis",
	"fs":         "github.com/kvblob/kvblob/stores/fs",
	"s3":         "github.com/kvblob/kvblob/stores/s3",
	"mooncake":   "github.com/kvblob/kvblob/stores/mooncake",
}

// snippet is one ```go block of a Markdown file.
type snippet struct {
	file     string // relative to the repository's root
	line     int    // of the block's first line of code
	src      string
	fragment bool
}

// snippets returns the ```go blocks of a Markdown file, unindented (a
// block inside a list item is indented).
func snippets(t *testing.T, root, rel string) []snippet {
	t.Helper()
	f, err := os.Open(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []snippet
	var cur *snippet
	var indent string
	lastText := "" // the last non-blank line outside a block
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " \t")
		switch {
		case cur == nil && trimmed == "```go":
			indent = line[:len(line)-len(trimmed)]
			cur = &snippet{file: rel, line: n + 1, fragment: strings.TrimSpace(lastText) == fragmentMarker}
		case cur != nil && trimmed == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.src += strings.TrimPrefix(line, indent) + "\n"
		case trimmed != "":
			lastText = trimmed
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Errorf("%s:%d: a ```go block is never closed", rel, cur.line-1)
	}
	return out
}

// source turns a snippet into a Go file that compiles on its own when
// the snippet does: a file as it stands ("package ..."), declarations in
// a package, or statements in a function's body; with the imports of the
// known packages it names, and a //line directive so that every position
// is the Markdown file's.
func source(s snippet) (string, error) {
	at := fmt.Sprintf("//line %s:%d\n", s.file, s.line)
	if strings.HasPrefix(s.src, "package ") {
		return at + s.src, nil
	}
	body := at + s.src
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package snippet\n"+s.src, 0); err != nil {
		body = "func _() {\n" + at + s.src + "}\n" // statements
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", "package snippet\n"+body, 0)
	if err != nil {
		return "", err
	}
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := sel.X.(*ast.Ident); ok && x.Obj == nil && knownImports[x.Name] != "" && !slices.Contains(names, x.Name) {
				names = append(names, x.Name)
			}
		}
		return true
	})
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("package snippet\n\nimport (\n")
	for _, name := range names {
		fmt.Fprintf(&b, "\t%s %q\n", name, knownImports[name])
	}
	b.WriteString(")\n\n" + body)
	return b.String(), nil
}

// TestDocSnippetsCompileAndCheckTheirErrors: every ```go block of
// README.md and docs/*.md compiles against the tree as it is, and checks
// every error it assigns, so that a newcomer's copy works. A failure names
// the Markdown file and line.
func TestDocSnippetsCompileAndCheckTheirErrors(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"README.md"}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		files = append(files, rel)
	}
	var all []snippet
	for _, f := range files {
		all = append(all, snippets(t, root, f)...)
	}
	paths := []string{}
	for _, p := range knownImports {
		paths = append(paths, p)
	}
	l, err := srccheck.Load(root, paths...)
	if err != nil {
		t.Fatal(err)
	}
	compiled := 0
	for i, s := range all {
		if s.fragment {
			continue
		}
		compiled++
		where := fmt.Sprintf("%s:%d", s.file, s.line)
		src, err := source(s)
		if err != nil {
			t.Errorf("%s: the ```go block does not parse: %v\n(a deliberate fragment is marked with %s on the line before its fence)", where, err, fragmentMarker)
			continue
		}
		f, err := parser.ParseFile(l.Fset, fmt.Sprintf("snippet%d.go", i), src, parser.ParseComments)
		if err != nil {
			t.Errorf("%s: the ```go block does not parse: %v", where, err)
			continue
		}
		_, info, errs := l.Check(fmt.Sprintf("snippet%d", i), []*ast.File{f})
		if len(errs) > 0 {
			var msgs []string
			for _, err := range errs {
				msgs = append(msgs, "\t"+strings.ReplaceAll(err.Error(), "\n", "\n\t"))
			}
			t.Errorf("%s: the ```go block does not compile against the tree:\n%s\n(a deliberate fragment is marked with %s on the line before its fence)",
				where, strings.Join(msgs, "\n"), fragmentMarker)
			continue
		}
		for _, pos := range uncheckedErrors(f, info) {
			t.Errorf("%s: an error is assigned and never checked before it is assigned again or the block ends (the ```go block at %s)", l.Fset.Position(pos), where)
		}
	}
	if compiled < 3 {
		t.Errorf("only %d ```go blocks were compiled; the README's and docs/operating.md's at least should be", compiled)
	}
}

// uncheckedErrors returns where a variable of type error is assigned a
// value that nothing reads: the next event of that variable, in source
// order, is another assignment, or there is none. A vet-like check, not a
// flow analysis: source order stands for control flow, which holds for
// the straight-line code of snippets.
func uncheckedErrors(f *ast.File, info *types.Info) []token.Pos {
	errType := types.Universe.Lookup("error").Type()
	type event struct {
		pos    token.Pos
		assign bool
	}
	events := map[*types.Var][]event{}
	assigned := map[*ast.Ident]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok {
			for _, lhs := range as.Lhs {
				if id, ok := lhs.(*ast.Ident); ok {
					assigned[id] = true
				}
			}
		}
		return true
	})
	ast.Inspect(f, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		obj := info.Defs[id]
		if obj == nil {
			obj = info.Uses[id]
		}
		v, ok := obj.(*types.Var)
		if !ok || v.IsField() || !types.Identical(v.Type(), errType) || v.Parent() == nil || v.Parent() == v.Pkg().Scope() {
			return true
		}
		if _, isDef := info.Defs[id]; isDef && !assigned[id] {
			return true // declared (a parameter, a var without a value): nothing assigned yet
		}
		events[v] = append(events[v], event{id.Pos(), assigned[id]})
		return true
	})
	var out []token.Pos
	for _, evs := range events {
		sort.Slice(evs, func(i, j int) bool { return evs[i].pos < evs[j].pos })
		for i, e := range evs {
			if e.assign && (i == len(evs)-1 || evs[i+1].assign) {
				out = append(out, e.pos)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

package fakesdk

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"
)

// TestDecisionsAreTheFakesOwn: the fake may name codes from
// generated/mooncake (the values of types.h) but must not ask the spec what
// an answer means: no spec, mapping, rule, admission or case of ours.
func TestDecisionsAreTheFakesOwn(t *testing.T) {
	fset := token.NewFileSet()
	codes, err := parser.ParseFile(fset, filepath.Join("..", "..", "..", "generated", "mooncake", "store.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{"Code": true}
	// The store's package declares its codes as constants of type Code
	// (beside Store and the version lock); the rest is the spec's.
	for _, d := range codes.Decls {
		if g, ok := d.(*ast.GenDecl); ok && g.Tok == token.CONST {
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					allowed[n.Name] = true
				}
			}
		}
	}
	files, _ := filepath.Glob("*.go")
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "mooncakegen" && !allowed[sel.Sel.Name] {
					t.Errorf("%s: mooncakegen.%s: the fake decides its answers itself; only code names may come from generated/mooncake", fset.Position(sel.Pos()), sel.Sel.Name)
				}
			}
			return true
		})
	}
}

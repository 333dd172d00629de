package gen

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpecsListsEveryOneOfAStoresSpecs: the generated Specs of each store
// returns the value of every one of its spec files, in the order of the
// files, and nothing else: Pick picks among that list, so a spec left out
// is an SDK version the driver refuses though its spec exists. The
// repository's specs hold a store of two (redis), so a list of the first
// spec alone differs here from the right one. (Tried: emitting Specs over
// st.specs[:1] fails for redis; the drift test of generated/ would only
// catch it once generated code were regenerated.)
func TestSpecsListsEveryOneOfAStoresSpecs(t *testing.T) {
	specs, err := LoadDir("../spec")
	require.NoError(t, err)
	out, err := Generate(specs, DefaultOptions)
	require.NoError(t, err)
	want := map[string][]string{}
	for _, s := range specs {
		want[s.Store] = append(want[s.Store], "spec"+s.GoName())
	}
	several := false
	for store, names := range want {
		several = several || len(names) > 1
		name := StorePackage(store) + "/store.go"
		src, ok := out[name]
		require.True(t, ok, "no %s", name)
		f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
		require.NoError(t, err)
		var got []string
		found := false
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Name.Name != "Specs" || fn.Recv != nil {
				continue
			}
			found = true
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if lit, ok := n.(*ast.CompositeLit); ok {
					for _, e := range lit.Elts {
						if id, ok := e.(*ast.Ident); ok {
							got = append(got, id.Name)
						}
					}
					return false
				}
				return true
			})
		}
		require.True(t, found, "%s has no func Specs", name)
		assert.Equal(t, names, got, "%s: the specs Specs returns", name)
	}
	require.True(t, several, "no store has two specs: this test cannot tell a list of the first spec from a list of all")
}

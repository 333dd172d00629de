package generated

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kvblob/kvblob/gen"
)

// TestUpToDate fails when a file under generated/ differs from what spec/
// generates, or when a generated file no spec produces is left behind.
func TestUpToDate(t *testing.T) {
	specs, err := gen.LoadDir("../spec")
	if err != nil {
		t.Fatal(err)
	}
	want, err := gen.Generate(specs, gen.DefaultOptions)
	if err != nil {
		t.Fatal(err)
	}
	differ, stale, err := gen.Drift(".", want)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range differ {
		got, _ := os.ReadFile(name)
		t.Errorf("generated/%s is stale -- run 'make generate'\n%s", name, gen.LineDiff(filepath.Join("generated", name), "want", got, want[name]))
	}
	for _, name := range stale {
		t.Errorf("generated/%s is produced by no spec -- run 'make generate'", name)
	}
}

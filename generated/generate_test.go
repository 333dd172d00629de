package generated

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
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

// TestDriversDoNotCompileTheCasesIn: a store's conformance cases are a
// package of their own (generated/<store>/<store>cases) so that a
// production driver does not carry them: no store's driver package
// (stores/<name>) depends on a generated cases package.
func TestDriversDoNotCompileTheCasesIn(t *testing.T) {
	const module = "github.com/kvblob/kvblob"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "../stores/...").Output()
	if err != nil {
		t.Fatalf("go list ../stores/...: %v", err)
	}
	drivers := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if path.Dir(fields[0]) != module+"/stores" {
			continue // a kit, a fake or a helper beside a driver
		}
		drivers++
		for _, dep := range fields[1:] {
			rest, ok := strings.CutPrefix(dep, module+"/generated/")
			if ok && strings.Contains(rest, "/") {
				t.Errorf("%s depends on %s: a driver imports its store's package, never the cases (tests and kits do)", fields[0], dep)
			}
		}
	}
	if drivers == 0 {
		t.Fatal("go list found no driver package under stores/")
	}
}

// TestEveryGeneratedPackageIsImported: drivergen emits no package nothing
// uses. Every package under generated/ is imported by a package of the
// module outside generated/ (by its code or its tests): a store's package
// by its driver, its cases package by the store's tests or kit.
func TestEveryGeneratedPackageIsImported(t *testing.T) {
	const module = "github.com/kvblob/kvblob"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}} {{join .TestImports \" \"}} {{join .XTestImports \" \"}}", "../...").Output()
	if err != nil {
		t.Fatalf("go list ../...: %v", err)
	}
	imported := map[string]bool{}
	var generated []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if strings.HasPrefix(fields[0], module+"/generated/") {
			generated = append(generated, fields[0])
			continue
		}
		for _, imp := range fields[1:] {
			imported[imp] = true
		}
	}
	if len(generated) == 0 {
		t.Fatal("go list found no package under generated/")
	}
	for _, p := range generated {
		if !imported[p] {
			t.Errorf("%s is imported by no package outside generated/: drivergen emits only packages a driver, kit or test uses", p)
		}
	}
}

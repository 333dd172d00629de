package gen

import (
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGolden runs every gen/testdata/*.txtar case: a spec.yaml, and either
// want/<file> for each generated file or want.stderr for a spec that must
// fail. -update rewrites the wants.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			require.NoError(t, err)
			var spec []byte
			want := map[string]string{}
			for _, f := range ar.Files {
				if f.Name == "spec.yaml" {
					spec = f.Data
				} else {
					want[f.Name] = string(f.Data)
				}
			}
			require.NotNil(t, spec, "%s has no spec.yaml", file)
			got := map[string]string{}
			s, err := Load("spec.yaml", spec)
			if err == nil {
				var out map[string][]byte
				out, err = GenerateOne(s, DefaultOptions)
				for name, b := range out {
					got["want/"+name] = string(b)
				}
			}
			if err != nil {
				got["want.stderr"] = err.Error() + "\n"
			}
			if *update {
				ar.Files = ar.Files[:0]
				ar.Files = append(ar.Files, txtar.File{Name: "spec.yaml", Data: spec})
				names := make([]string, 0, len(got))
				for n := range got {
					names = append(names, n)
				}
				sort.Strings(names)
				for _, n := range names {
					ar.Files = append(ar.Files, txtar.File{Name: n, Data: []byte(got[n])})
				}
				require.NoError(t, os.WriteFile(file, txtar.Format(ar), 0o644))
				return
			}
			assert.Equal(t, want, got, "%s differed; run 'go test ./gen -update' and review the diff", file)
		})
	}
}

// TestGeneratedFilesCarryTheHeader parses every generated file and asserts
// ast.IsGenerated, so tools that skip generated code skip ours.
func TestGeneratedFilesCarryTheHeader(t *testing.T) {
	specs, err := LoadDir("../spec")
	require.NoError(t, err)
	out, err := Generate(specs, DefaultOptions)
	require.NoError(t, err)
	require.NotEmpty(t, out)
	for name, b := range out {
		f, err := parser.ParseFile(token.NewFileSet(), name, b, parser.ParseComments)
		require.NoError(t, err, name)
		assert.True(t, ast.IsGenerated(f), "%s lacks the generated header", name)
		assert.True(t, strings.HasPrefix(string(b), "// "+Header+"\n"), name)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	specs, err := LoadDir("../spec")
	require.NoError(t, err)
	a, err := Generate(specs, DefaultOptions)
	require.NoError(t, err)
	for i := 0; i < 5; i++ {
		b, err := Generate(specs, DefaultOptions)
		require.NoError(t, err)
		require.Equal(t, a, b)
	}
}

const validSpec = `store: s
package: s
sdk: {name: s-sdk, versions: ["1"]}
capabilities: {absent_is_miss: true}
codes:
  OK: 0
  NOT_FOUND: -1
calls:
  put_call:
    op: put
    touches_memory: true
    access_end: on_return
    answers: code
    codes:
      OK: {result: READY}
    otherwise: {result: FAULT}
  get_call:
    op: get
    touches_memory: true
    access_end: on_return
    answers: size
    whole: {result: READY, written: "yes"}
    short: {result: FAULT, written: "yes"}
    codes:
      NOT_FOUND: {result: MISS, written: "no"}
    otherwise: {result: FAULT, written: "maybe"}
admission: [empty_key, repeated_key, multi_span, span_outside_registration, hint, device_region]
`

// TestSpecErrorsPointAtLineAndColumn pins each validation rule to the
// position it reports.
func TestSpecErrorsPointAtLineAndColumn(t *testing.T) {
	cases := []struct {
		name, old, new string
		want           string // "line:col: message part"
	}{
		{"unknown key", "store: s\n", "store: s\nstroe: x\n", `2:1: unknown key "stroe" in the spec`},
		{"wrong type", `capabilities: {absent_is_miss: true}`, `capabilities: {absent_is_miss: 3}`, `4:32: capabilities.absent_is_miss must be true or false, found "3"`},
		{"repeated code name", "  NOT_FOUND: -1\n", "  NOT_FOUND: -1\n  NOT_FOUND: -2\n", `8:3: "NOT_FOUND" repeated in codes`},
		{"repeated code value", "  NOT_FOUND: -1\n", "  NOT_FOUND: -1\n  GONE: -1\n", `8:3: code GONE repeats value -1 of code NOT_FOUND`},
		{"unknown code", "      NOT_FOUND: {result: MISS", "      NOPE: {result: MISS", `25:7: call get_call maps code "NOPE", which the code table does not declare`},
		{"two rules for one code", "      OK: {result: READY}\n", "      OK: {result: READY}\n      OK: {result: FAULT}\n", `16:7: "OK" repeated in call put_call codes`},
		{"memory call without access end", "    access_end: on_return\n    answers: code\n", "    answers: code\n", `9:3: call put_call touches memory but has no access_end`},
		{"result outside the contract", "OK: {result: READY}", "OK: {result: CANCELLED}", `15:20: call put_call code OK result is "CANCELLED"; want "READY", "MISS", "NOT_READY", "DECLINED" or "FAULT"`},
		{"miss that writes", `NOT_FOUND: {result: MISS, written: "no"}`, `NOT_FOUND: {result: MISS, written: "yes"}`, `25:18: code NOT_FOUND of call get_call is a MISS whose destination may be written`},
		{"missing admission rule", "multi_span, ", "", `1:1: admission lacks "multi_span"`},
		{"unknown admission rule", "hint,", "hint, fly,", `27:83: admission rule is "fly"`},
		{"bad yaml", "store: s\n", "store: [s\n", `1:1: invalid YAML`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(validSpec, c.old, c.new, 1)
			require.NotEqual(t, validSpec, src, "the case's edit did not apply")
			_, err := Load("spec/s.yaml", []byte(src))
			var list ErrorList
			require.True(t, errors.As(err, &list), "want an ErrorList, got %v", err)
			assert.Contains(t, err.Error(), "spec/s.yaml:"+c.want)
		})
	}
	_, err := Load("spec/s.yaml", []byte(validSpec))
	require.NoError(t, err, "the base spec must be valid")
}

func TestAllErrorsOfAFileAtOnce(t *testing.T) {
	src := strings.Replace(validSpec, "store: s\n", "store: s\nfoo: 1\nbar: 2\n", 1)
	_, err := Load("x.yaml", []byte(src))
	var list ErrorList
	require.True(t, errors.As(err, &list))
	assert.Len(t, list, 2)
	assert.True(t, list[0].Pos.Line < list[1].Pos.Line, "sorted by position")
}

func fuzzSeeds(f *testing.F) {
	f.Add([]byte(validSpec))
	f.Add([]byte("store: [\n"))
	for _, p := range []string{"../spec/memory.yaml", "../spec/mooncake-0.3.13.yaml", "../spec/redis-7.yaml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

// checkLoad loads data and checks that a refusal is a non-empty ErrorList
// with positions, returning the spec when it loaded.
func checkLoad(t *testing.T, data []byte) *Spec {
	s, err := Load("f.yaml", data)
	if err != nil {
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("error is not a non-empty ErrorList: %v", err)
		}
		for _, e := range list {
			if e.Pos.File != "f.yaml" || e.Pos.Line < 0 {
				t.Fatalf("error without a position: %v", e)
			}
		}
		return nil
	}
	return s
}

// FuzzLoad loads arbitrary specs: no panic, errors with positions, and
// every valid spec derives its cases.
func FuzzLoad(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if s := checkLoad(t, data); s != nil {
			_ = s.cases()
		}
	})
}

// FuzzGenerate also renders every valid spec (slower: gofmt runs).
func FuzzGenerate(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if s := checkLoad(t, data); s != nil {
			if _, err := GenerateOne(s, DefaultOptions); err != nil {
				t.Fatalf("a valid spec failed to generate: %v", err)
			}
		}
	})
}

func TestLineDiffNamesChangedLines(t *testing.T) {
	d := LineDiff("a", "b", []byte("x\ny\nz\n"), []byte("x\nY\nz\n"))
	assert.Contains(t, d, "-y\n")
	assert.Contains(t, d, "+Y\n")
}

// TestGoldenOutputsCompile writes each golden case's generated files into a
// folder under testdata (inside this module, so the driver package
// resolves) and vets it: testdata is invisible to ./..., so nothing else
// would compile them.
func TestGoldenOutputsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	files, err := filepath.Glob("testdata/*.txtar")
	require.NoError(t, err)
	for _, file := range files {
		ar, err := txtar.ParseFile(file)
		require.NoError(t, err)
		var outs []txtar.File
		for _, f := range ar.Files {
			if strings.HasPrefix(f.Name, "want/") {
				outs = append(outs, f)
			}
		}
		if len(outs) == 0 {
			continue // a case that must fail
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			dir, err := os.MkdirTemp("testdata", "compile-")
			require.NoError(t, err)
			defer os.RemoveAll(dir)
			for _, f := range outs {
				require.NoError(t, os.WriteFile(filepath.Join(dir, strings.TrimPrefix(f.Name, "want/")), f.Data, 0o644))
			}
			out, err := exec.Command("go", "vet", "./"+filepath.ToSlash(dir)).CombinedOutput()
			require.NoError(t, err, "%s", out)
		})
	}
}

func TestOtherwiseExampleIsChecked(t *testing.T) {
	cases := []struct{ example, want string }{
		{"NOPE", `example "NOPE", which the code table does not declare`},
		{"OK", `example "OK", which the call maps itself`},
	}
	for _, c := range cases {
		src := strings.Replace(validSpec, "    otherwise: {result: FAULT}\n", "    otherwise: {result: FAULT, example: "+c.example+"}\n", 1)
		_, err := Load("s.yaml", []byte(src))
		require.Error(t, err, c.example)
		assert.Contains(t, err.Error(), c.want)
	}
	src := strings.Replace(validSpec, `otherwise: {result: FAULT, written: "maybe"}`, `otherwise: {result: FAULT, written: "maybe", example: OK}`, 1)
	_, err := Load("s.yaml", []byte(src))
	assert.ErrorContains(t, err, "reads as a size")
	s, err := Load("s.yaml", []byte(strings.Replace(validSpec, "    otherwise: {result: FAULT}\n", "    otherwise: {result: FAULT, example: NOT_FOUND}\n", 1)))
	require.NoError(t, err)
	assert.Equal(t, "put_call/otherwise-NOT_FOUND", s.cases()[1].id)
}

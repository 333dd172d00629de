package gen

import (
	"bytes"
	"errors"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite golden files")

// TestGolden runs every gen/testdata/*.txtar case: a spec.yaml (named
// spec/<case>.yaml, as a spec file is named after its store and version)
// or several spec/<name>.yaml of one store (generated together, in name
// order, as one store's package), and either want/<file> for each
// generated file or want.stderr for specs that must fail. -update
// rewrites the wants.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txtar")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			require.NoError(t, err)
			var specFiles []txtar.File
			want := map[string]string{}
			for _, f := range ar.Files {
				switch {
				case f.Name == "spec.yaml":
					specFiles = append(specFiles, txtar.File{Name: "spec/" + strings.TrimSuffix(filepath.Base(file), ".txtar") + ".yaml", Data: f.Data})
				case strings.HasPrefix(f.Name, "spec/") && strings.HasSuffix(f.Name, ".yaml"):
					specFiles = append(specFiles, f)
				default:
					want[f.Name] = string(f.Data)
				}
			}
			require.NotEmpty(t, specFiles, "%s has no spec.yaml", file)
			sort.Slice(specFiles, func(i, j int) bool { return specFiles[i].Name < specFiles[j].Name })
			got := map[string]string{}
			var specs []*Spec
			for _, f := range specFiles {
				s, lerr := Load(f.Name, f.Data)
				if lerr != nil {
					err = errors.Join(err, lerr)
				}
				specs = append(specs, s)
			}
			if err == nil {
				var out map[string][]byte
				out, err = Generate(specs, DefaultOptions)
				for name, b := range out {
					got["want/"+name] = string(b)
				}
			}
			if err != nil {
				got["want.stderr"] = err.Error() + "\n"
			}
			// A rule-* case is a spec mistake the validator must refuse;
			// -update must not turn it into a golden output.
			if strings.HasPrefix(filepath.Base(file), "rule-") {
				require.Error(t, err, "%s: the validator accepts this spec", file)
			}
			if *update {
				kept := ar.Files[:0]
				for _, f := range ar.Files {
					if f.Name == "spec.yaml" || strings.HasPrefix(f.Name, "spec/") {
						kept = append(kept, f)
					}
				}
				ar.Files = kept
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
		{"result outside the contract", "OK: {result: READY}", "OK: {result: CANCELLED}", `15:20: call put_call code OK result is "CANCELLED"; want "READY", "MISS", "NOT_READY", "DECLINED", "FAULT" or "CONTINUE"`},
		{"miss that writes", `NOT_FOUND: {result: MISS, written: "no"}`, `NOT_FOUND: {result: MISS, written: "yes"}`, `25:18: code NOT_FOUND of call get_call is a MISS whose destination may be written`},
		{"missing admission rule", "multi_span, ", "", `27:12: admission lacks "multi_span"`},
		{"unknown admission rule", "hint,", "hint, fly,", `27:83: admission rule is "fly"`},
		{"bad yaml", "store: s\n", "store: [s\n", `2:1: invalid YAML`},
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
			if _, err := Generate([]*Spec{s}, DefaultOptions); err != nil {
				t.Fatalf("a valid spec failed to generate: %v", err)
			}
		}
	})
}

// TestLineDiffNamesChangedLines: LineDiff is the two names, then each
// changed line, its old lines (-) before its new (+), with three lines of
// context either side and nothing farther; a last line without a newline
// is a line, and an empty file has none.
func TestLineDiffNamesChangedLines(t *testing.T) {
	nine := "1\n2\n3\n4\n5\n6\n7\n8\n9\n"
	twelve := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"
	for _, c := range []struct{ a, b, want string }{
		{"x\ny\n", "x\ny\n", ""},
		{"x\ny\nz\n", "x\nY\nz\n", " x\n-y\n+Y\n z\n"},
		{nine, strings.Replace(nine, "5", "F", 1), " 2\n 3\n 4\n-5\n+F\n 6\n 7\n 8\n"},
		{twelve, strings.Replace(strings.Replace(twelve, "12", "B", 1), "1\n", "A\n", 1), "-1\n+A\n 2\n 3\n 4\n 9\n 10\n 11\n-12\n+B\n"},
		{"x\n", "x\ny\n", " x\n+y\n"},
		{"y\n", "x\ny\n", "+x\n y\n"},
		{"x\ny\n", "y\n", "-x\n y\n"},
		{"", "x\n", "+x\n"},
		{"x\n", "", "-x\n"},
		{"x", "x\n", "-x\n+x\n"},
	} {
		assert.Equal(t, "--- a\n+++ b\n"+c.want, LineDiff("a", "b", []byte(c.a), []byte(c.b)), "%q -> %q", c.a, c.b)
	}
}

// TestGoldenOutputsCompile writes each golden case's generated files into a
// folder under testdata (inside this module, so the driver package
// resolves; the cases package's import of its store's package is pointed
// there) and vets it: testdata is invisible to ./..., so nothing else
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
				p := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(f.Name, "want/")))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				data := bytes.ReplaceAll(f.Data, []byte(`"`+DefaultOptions.ImportRoot+"/"), []byte(`"github.com/kvblob/kvblob/gen/`+filepath.ToSlash(dir)+"/"))
				require.NoError(t, os.WriteFile(p, data, 0o644))
			}
			out, err := exec.Command("go", "vet", "./"+filepath.ToSlash(dir)+"/...").CombinedOutput()
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

// edit returns validSpec with old replaced by new, failing if old is not
// in it.
func edit(t *testing.T, old, new string) string {
	t.Helper()
	require.Contains(t, validSpec, old, "the case's edit does not apply")
	return strings.Replace(validSpec, old, new, 1)
}

// wantErrors loads src as spec/s.yaml and checks that it fails with
// exactly the errors want ("line:col: message prefix"), in order.
func wantErrors(t *testing.T, src string, want ...string) {
	t.Helper()
	_, err := Load("spec/s.yaml", []byte(src))
	var list ErrorList
	require.True(t, errors.As(err, &list), "want an ErrorList, got %v", err)
	got := make([]string, len(list))
	for i, e := range list {
		got[i] = e.Error()
	}
	require.Len(t, got, len(want), "errors:\n%s", err)
	for i := range want {
		assert.True(t, strings.HasPrefix(got[i], "spec/s.yaml:"+want[i]), "error %d is\n\t%s\nwant\n\tspec/s.yaml:%s...", i, got[i], want[i])
	}
}

// TestLoadRefusesWhatItCannotRead pins each input the loader cannot read
// to the position and message it reports, and checks it reports nothing
// else.
func TestLoadRefusesWhatItCannotRead(t *testing.T) {
	lines := strings.SplitAfter(validSpec, "\n")
	require.Contains(t, lines[18], "touches_memory")
	line19 := strings.Join(lines[:18], "") + strings.Replace(lines[18], "touches_memory", "touches_\xffmemory", 1) + strings.Join(lines[19:], "")
	cases := []struct {
		name string
		src  func(t *testing.T) string
		want []string
	}{
		{"a second document", func(*testing.T) string { return validSpec + "---\nstore: t\n" },
			[]string{`28:1: a second YAML document starts here; a spec is one document`}},
		{"an empty second document", func(*testing.T) string { return validSpec + "---\n" },
			[]string{`28:1: a second YAML document starts here`}},
		{"invalid YAML after ---", func(*testing.T) string { return validSpec + "---\nstore: [\n" },
			[]string{`29:1: invalid YAML after the first document (a spec is one document): did not find expected node content`}},
		{"a byte that is not UTF-8", func(*testing.T) string { return line19 },
			[]string{`19:13: byte 0xff is not UTF-8; a spec is UTF-8 text`}},
		{"an empty file", func(*testing.T) string { return "" },
			[]string{`1:1: the spec is empty; want a mapping with store, sdk`}},
		{"only comments", func(*testing.T) string { return "# nothing yet\n" },
			[]string{`1:1: the spec is empty`}},
		{"a tagged string for an integer", func(t *testing.T) string { return edit(t, "NOT_FOUND: -1", "NOT_FOUND: !!str -1") },
			[]string{`7:14: code NOT_FOUND must be an integer, found a string; write -1 without quotes or a !!str tag`}},
		{"a quoted integer", func(t *testing.T) string { return edit(t, "NOT_FOUND: -1", `NOT_FOUND: "-1"`) },
			[]string{`7:14: code NOT_FOUND must be an integer, found a string; write -1 without quotes or a !!str tag`}},
		{"a quoted boolean", func(t *testing.T) string { return edit(t, "absent_is_miss: true", `absent_is_miss: "true"`) },
			[]string{`4:32: capabilities.absent_is_miss must be true or false, found a string; write true without quotes or a !!str tag`}},
		{"not an integer", func(t *testing.T) string { return edit(t, "NOT_FOUND: -1", `NOT_FOUND: minus one`) },
			[]string{`7:14: code NOT_FOUND must be an integer, found "minus one"`}},
		{"a list as a key", func(t *testing.T) string { return edit(t, "store: s\n", "store: s\n? [a, b]\n: 1\n") },
			[]string{`2:3: a key in the spec is a list; keys are plain names`}},
		{"a mapping as a code name", func(t *testing.T) string {
			return edit(t, "  NOT_FOUND: -1\n", "  NOT_FOUND: -1\n  ? {a: 1}\n  : -2\n")
		},
			[]string{`8:5: a key in codes is a mapping; keys are plain names`}},
		{"a code beyond int32", func(t *testing.T) string { return edit(t, "NOT_FOUND: -1", "NOT_FOUND: 0x7fffffffffffffff") },
			[]string{`7:14: code NOT_FOUND is 0x7fffffffffffffff; want -2147483648 to 2147483647 (an SDK code is a 32-bit signed integer)`}},
		{"a code just past int32", func(t *testing.T) string { return edit(t, "NOT_FOUND: -1", "NOT_FOUND: -2147483649") },
			[]string{`7:14: code NOT_FOUND is -2147483649; want -2147483648 to 2147483647`}},
		{"a code value beyond int32", func(t *testing.T) string { return edit(t, "NOT_FOUND: -1", "NOT_FOUND: {value: 2147483648}") },
			[]string{`7:22: code NOT_FOUND value is 2147483648; want -2147483648 to 2147483647`}},
		{"a code beyond int64", func(t *testing.T) string { return edit(t, "NOT_FOUND: -1", "NOT_FOUND: -99999999999999999999") },
			[]string{`7:14: code NOT_FOUND is -99999999999999999999; want -2147483648 to 2147483647`}},
		{"a limit beyond int64", func(t *testing.T) string {
			return edit(t, "capabilities: {absent_is_miss: true}\n", "capabilities: {absent_is_miss: true}\nlimits: {max_row_bytes: 99999999999999999999}\n")
		}, []string{`5:25: limits.max_row_bytes is 99999999999999999999; want at most 9223372036854775807`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantErrors(t, c.src(t), c.want...) })
	}
	// The bounds themselves are codes.
	_, err := Load("spec/s.yaml", []byte(edit(t, "  NOT_FOUND: -1\n", "  NOT_FOUND: -2147483648\n  MAX: 2147483647\n")))
	require.NoError(t, err)
}

// TestSchemaErrorsDoNotHideValidation pins that a file with schema errors
// still reports its validator errors, and that a field the schema could
// not read makes the validator invent none.
func TestSchemaErrorsDoNotHideValidation(t *testing.T) {
	t.Run("both kinds reported", func(t *testing.T) {
		src := edit(t, "store: s\n", "store: s\nstroe: x\n")
		src = strings.Replace(src, `NOT_FOUND: {result: MISS, written: "no"}`, `NOT_FOUND: {result: MISS, written: "yes"}`, 1)
		src = strings.Replace(src, "repeated_key, ", "", 1)
		wantErrors(t, src,
			`2:1: unknown key "stroe" in the spec`,
			`26:18: code NOT_FOUND of call get_call is a MISS whose destination may be written`,
			`28:12: admission lacks "repeated_key"`)
	})
	// Each schema error alone: the validator adds nothing about the field.
	cases := []struct{ name, old, new, want string }{
		{"variant of the wrong type", "store: s\n\n", "store: s\nvariant: [s]\n", `2:10: variant must be a string, found a list`},
		{"store missing", "store: s\n", "", `2:1: the spec has no "store"`},
		{"sdk not a mapping", `sdk: {name: s-sdk, versions: ["1"]}`, `sdk: s-sdk`, `3:6: sdk must be a mapping`},
		{"a code named as the package's Spec", "NOT_FOUND: -1", "NOT_FOUND: -1\n  SPEC: -2", `8:3: code SPEC becomes the Go name Spec, which the generated package's own Spec declares too`},
		{"a code named as the package's Calls", "NOT_FOUND: -1", "NOT_FOUND: -1\n  CALLS: -2", `8:3: code CALLS becomes the Go name Calls, which the generated package's own Calls declares too`},
		{"a code named as the package's Pick", "NOT_FOUND: -1", "NOT_FOUND: -1\n  PICK: -2", `8:3: code PICK becomes the Go name Pick, which the generated package's own Pick declares too`},
		{"two codes of one Go name", "NOT_FOUND: -1", "NOT_FOUND: -1\n  NOT__FOUND: -2", `8:3: code NOT__FOUND becomes the Go name NotFound, which code NOT_FOUND (`},
		{"an empty version", `versions: ["1"]`, `versions: ["1", ""]`, `3:36: sdk.versions entry "" is empty`},
		{"a version with a trailing dot", `versions: ["1"]`, `versions: ["8.1."]`, `3:31: sdk.versions entry "8.1." ends in a dot; a release line ends in ".x"`},
		{"a code value that is not a number", "NOT_FOUND: -1", "NOT_FOUND: x", `7:14: code NOT_FOUND must be an integer`},
		{"a capability of the wrong type", "absent_is_miss: true}", "absent_is_miss: true, multi_span: 3}", `4:50: capabilities.multi_span must be true or false`},
		{"an admission rule misspelt", "repeated_key,", "repeated_kye,", `27:24: admission rule is "repeated_kye"`},
		{"a limit that is not a number", "capabilities: {absent_is_miss: true}\n", "capabilities: {absent_is_miss: true}\nlimits: {max_row_bytes: x}\n", `5:25: limits.max_row_bytes must be an integer`},
		{"an access_end misspelt", "    access_end: on_return\n    answers: code\n", "    access_end: on_retrun\n    answers: code\n", `12:17: call put_call access_end is "on_retrun"`},
		{"touches_memory of the wrong type", "    touches_memory: true\n    access_end: on_return\n    answers: code\n", "    touches_memory: 1\n    access_end: on_return\n    answers: code\n", `11:21: call put_call touches_memory must be true or false`},
		{"op misspelt", "    op: get\n", "    op: gte\n", `18:9: call get_call op is "gte"`},
		{"codes not a mapping", "codes:\n  OK: 0\n  NOT_FOUND: -1\n", "codes: [OK, NOT_FOUND]\n", `5:8: codes must be a mapping, found a list`},
		{"calls not a mapping", validSpec[strings.Index(validSpec, "calls:\n"):strings.Index(validSpec, "admission:")], "calls: []\n", `8:8: calls must be a mapping, found a list`},
		{"an outcome result misspelt", `whole: {result: READY, written: "yes"}`, `whole: {result: REDY, written: "yes"}`, `22:21: call get_call whole result is "REDY"`},
		{"an outcome that is not a mapping", `whole: {result: READY, written: "yes"}`, `whole: READY`, `22:12: call get_call whole must be a mapping`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { wantErrors(t, edit(t, c.old, c.new), c.want) })
	}
	// What admission needs follows from capabilities and limits: when one
	// of them cannot be read, admission is not judged against it.
	t.Run("a capability that cannot be read", func(t *testing.T) {
		src := edit(t, "absent_is_miss: true}", `absent_is_miss: true, multi_span: "true"}`)
		wantErrors(t, strings.Replace(src, "multi_span, ", "", 1), `4:50: capabilities.multi_span must be true or false`)
	})
	t.Run("a limit that cannot be read", func(t *testing.T) {
		src := edit(t, "capabilities: {absent_is_miss: true}\n", "capabilities: {absent_is_miss: true}\nlimits: {max_row_bytes: 0}\n")
		wantErrors(t, strings.Replace(src, "hint,", "hint, row_too_large,", 1), `5:25: limits.max_row_bytes is 0; want at least 1`)
	})
}

// writeSpecs writes name -> content into a new folder and returns it.
func writeSpecs(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	return dir
}

// TestLoadDirNamesTheRealPath pins that LoadDir's errors name each file by
// the path it was found under, while a spec that loads is named
// spec/<file> in every position it holds (generated code must not depend
// on where drivergen runs).
func TestLoadDirNamesTheRealPath(t *testing.T) {
	dir := writeSpecs(t, map[string]string{"s.yaml": strings.Replace(validSpec, "store: s\n", "store: s\nstroe: x\n", 1)})
	_, err := LoadDir(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Join(dir, "s.yaml")+`:2:1: unknown key "stroe"`)

	specs, err := LoadDir("../spec")
	require.NoError(t, err)
	for _, s := range specs {
		require.True(t, strings.HasPrefix(s.File, "spec/"), s.File)
		n := 0
		var walk func(v reflect.Value)
		walk = func(v reflect.Value) {
			switch v.Kind() {
			case reflect.Pointer:
				if !v.IsNil() {
					walk(v.Elem())
				}
			case reflect.Slice:
				for i := 0; i < v.Len(); i++ {
					walk(v.Index(i))
				}
			case reflect.Struct:
				if p, ok := v.Interface().(Pos); ok {
					n++
					assert.Equal(t, s.File, p.File, "a position left unrenamed")
					return
				}
				for i := 0; i < v.NumField(); i++ {
					walk(v.Field(i))
				}
			}
		}
		walk(reflect.ValueOf(s))
		assert.Greater(t, n, 20, s.File)
	}
}

func TestLoadDirRefusesTwoSpecsForOneStoreVersion(t *testing.T) {
	other := validSpec
	dir := writeSpecs(t, map[string]string{"a.yaml": validSpec, "b.yaml": other})
	_, err := LoadDir(dir)
	require.Error(t, err)
	a, b := filepath.Join(dir, "a.yaml"), filepath.Join(dir, "b.yaml")
	assert.Equal(t, b+`:1:8: store "s" at s-sdk version "1" is also described by `+a+`:1:8; each version of a store has one spec`, err.Error())

	// A release line and a release in it would both hold for 1.2.
	line := strings.Replace(other, `versions: ["1"]`, `versions: ["1.x"]`, 1)
	release := strings.Replace(validSpec, `versions: ["1"]`, `versions: ["1.2"]`, 1)
	_, err = LoadDir(writeSpecs(t, map[string]string{"a.yaml": release, "b.yaml": line}))
	assert.ErrorContains(t, err, `store "s" at s-sdk version "1.x" overlaps version "1.2" of `)

	// The same store and version of another SDK (a server fork) is another spec.
	fork := strings.Replace(other, `name: s-sdk`, `name: s-fork`, 1)
	require.NotEqual(t, other, fork, "the edit applied")
	_, err = LoadDir(writeSpecs(t, map[string]string{"a.yaml": validSpec, "b.yaml": fork}))
	assert.NoError(t, err, "one store over two SDKs at one version number")

	nextVersion := strings.Replace(other, `versions: ["1"]`, `versions: ["2"]`, 1)
	require.NotEqual(t, other, nextVersion, "the edit applied")
	_, err = LoadDir(writeSpecs(t, map[string]string{"a.yaml": validSpec, "b.yaml": nextVersion}))
	assert.NoError(t, err, "two versions of one store are two specs")

	same := strings.Replace(validSpec, "store: s\n", "store: t\n", 1)
	_, err = LoadDir(writeSpecs(t, map[string]string{"a.yaml": validSpec, "b.yaml": same}))
	assert.NoError(t, err, "two stores are two packages")
}

// TestOneStoresSpecsShareItsPackage: every spec of a store goes into one
// package (a Code constant per code name, one Calls type, a value per
// spec), so CheckSet refuses what that package could not hold, each error
// at its place.
func TestOneStoresSpecsShareItsPackage(t *testing.T) {
	v2 := strings.Replace(validSpec, `versions: ["1"]`, `versions: ["2"]`, 1)
	for _, c := range []struct {
		name, old, new string
		file           string // the second spec's file name
		want           string // "b.yaml:" + this
		first          string // the first spec ("": validSpec)
	}{
		{"a code renumbered", "  NOT_FOUND: -1\n", "  NOT_FOUND: -2\n", "b.yaml", `7:3: code NOT_FOUND is -2 here and -1 in `, ""},
		{"a value renamed", "  NOT_FOUND: -1\n", "  NOT_FOUND: -1\n  GONE: -3\n", "b.yaml", `8:3: code GONE has value -3, which `,
			strings.Replace(validSpec, "  NOT_FOUND: -1\n", "  NOT_FOUND: -1\n  LOST: -3\n", 1)},
		{"a call missing", "  put_call:\n", "  put_it:\n", "b.yaml", `9:3: call put_it is not a call of `, ""},
		{"a call the first spec declares left out", "", "", "b.yaml", `1:1: declares no call put_again, which `,
			strings.Replace(validSpec, "  get_call:\n", "  put_again:\n    op: put\n    touches_memory: true\n    access_end: on_return\n    answers: code\n    codes:\n      OK: {result: READY}\n    otherwise: {result: FAULT}\n  get_call:\n", 1)},
		{"a call answering otherwise", "    answers: size\n    whole: {result: READY, written: \"yes\"}\n    short: {result: FAULT, written: \"yes\"}\n", "    answers: code\n", "b.yaml", `17:3: call get_call answers code here and size in `, ""},
		{"a variant in one spec only", "store: s\n\n", "store: s\nvariant: fast\n", "b.yaml", `2:10: variant is "fast" here and "" in `, ""},
		{"a file name that is no Go name", "", "", "1b.yaml", `1:1: the spec file's name "1b" (without .yaml) must be letters and digits`, ""},
		{"a file name that is a package name", "", "", "specs.yaml", `1:1: the spec file's name "specs" becomes the Go name Specs, which the generated package's own Specs declares too`, ""},
		{"a file name that is a code's", "", "", "not-found.yaml", `1:1: the spec file's name "not-found" becomes the Go name NotFound, which code NOT_FOUND (`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(v2, c.old, c.new, 1)
			if c.old != "" {
				require.NotEqual(t, v2, src, "the edit applied")
			}
			first := validSpec
			if c.first != "" {
				first = c.first
			}
			dir := writeSpecs(t, map[string]string{"a.yaml": first, c.file: src})
			_, err := LoadDir(dir)
			assert.ErrorContains(t, err, filepath.Join(dir, c.file)+":"+c.want)
		})
	}
}

func TestReadSpecRefusesWhatIsNoSpecFile(t *testing.T) {
	_, err := ReadSpec("/dev/zero")
	assert.ErrorContains(t, err, "/dev/zero: a device, not a regular file")
	dir := t.TempDir()
	_, err = ReadSpec(dir)
	assert.ErrorContains(t, err, "a folder, not a regular file")

	big := filepath.Join(dir, "big.yaml")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("#", MaxSpecBytes+1)), 0o644))
	_, err = ReadSpec(big)
	assert.ErrorContains(t, err, "larger than 1048576 bytes (1 MiB)")
	require.NoError(t, os.WriteFile(big, []byte(strings.Repeat("#", MaxSpecBytes)), 0o644))
	b, err := ReadSpec(big)
	require.NoError(t, err)
	assert.Len(t, b, MaxSpecBytes)

	dir = writeSpecs(t, map[string]string{"a.yaml": validSpec})
	require.NoError(t, os.Mkdir(filepath.Join(dir, "b.yaml"), 0o755))
	_, err = LoadDir(dir)
	assert.ErrorContains(t, err, "b.yaml: a folder, not a regular file")
}

// TestASizeCallNeedsWholeAndShort: a call that answers sizes and lacks
// either outcome is refused (each alone, not only both).
func TestASizeCallNeedsWholeAndShort(t *testing.T) {
	for _, drop := range []string{"    whole: {result: READY, written: \"yes\"}\n", "    short: {result: FAULT, written: \"yes\"}\n"} {
		_, err := Load("s.yaml", []byte(edit(t, drop, "")))
		assert.ErrorContains(t, err, `answers sizes; it needs both "whole" and "short"`, "without %q", strings.TrimSpace(drop))
	}
}

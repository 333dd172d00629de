package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	oldSpec = "../../gen/testdata/diff/old.yaml"
	newSpec = "../../gen/testdata/diff/new.yaml"
)

// TestDiffPrintsExactlyTheChangedCodeAndRule: the two specs differ in one
// code and one rule; the review text names exactly those (with both
// positions) and the one case they change, and exits 1 as diff(1) does.
func TestDiffPrintsExactlyTheChangedCodeAndRule(t *testing.T) {
	code, out, stderr := runCLI("diff", oldSpec, newSpec)
	require.Equal(t, 1, code, stderr)
	var changes []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  ") {
			changes = append(changes, strings.TrimSpace(l))
		}
	}
	require.Len(t, changes, 3, out)
	assert.True(t, strings.HasPrefix(changes[0], "~ LEASE_EXPIRED: -707 -> -708 (renumbered)  ("+oldSpec+":12:3 -> "+newSpec+":12:3)"), changes[0])
	assert.True(t, strings.HasPrefix(changes[1], "~ get_call OBJECT_NOT_FOUND: result MISS -> FAULT  ("+oldSpec+":30:25 -> "+newSpec+":30:25)"), changes[1])
	assert.True(t, strings.HasPrefix(changes[2], "~ get_call/OBJECT_NOT_FOUND: "), changes[2])

	code, out, stderr = runCLI("diff", "-json", oldSpec, newSpec)
	require.Equal(t, 1, code, stderr)
	var d struct {
		Codes struct {
			Added, Removed []any
			Renumbered     []struct {
				Name     string
				OldValue int64 `json:"old_value"`
				NewValue int64 `json:"new_value"`
			}
		}
		Rules []struct{ Call, Answer, Kind string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	assert.Empty(t, d.Codes.Added)
	assert.Empty(t, d.Codes.Removed)
	require.Len(t, d.Codes.Renumbered, 1)
	assert.Equal(t, "LEASE_EXPIRED -707 -708", fmt.Sprint(d.Codes.Renumbered[0].Name, " ", d.Codes.Renumbered[0].OldValue, " ", d.Codes.Renumbered[0].NewValue))
	require.Len(t, d.Rules, 1)
	assert.Equal(t, "get_call OBJECT_NOT_FOUND changed", d.Rules[0].Call+" "+d.Rules[0].Answer+" "+d.Rules[0].Kind)

	code, out, _ = runCLI("diff", oldSpec, oldSpec)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "no differences")
}

// TestDiffRedis7ToValkey81 pins what the repository's two versions of the
// Redis store differ in: the SDK, one code (LOST, which only the Redis 7
// driver derives) and one rule (store answers NIL on Valkey 8.1), and the
// generated case each brings. Positions are left out: comments may move.
func TestDiffRedis7ToValkey81(t *testing.T) {
	code, out, stderr := runCLI("diff", "../../spec/redis-7.yaml", "../../spec/redis-valkey-8.1.yaml")
	require.Equal(t, 1, code, stderr)
	var changes []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  ") {
			l, _, _ = strings.Cut(strings.TrimSpace(l), "  (")
			changes = append(changes, l)
		}
	}
	assert.Equal(t, []string{
		"~ variant: watch -> ifeq",
		"~ sdk.name: redis-server -> valkey-server",
		"~ sdk.versions: [7.x] -> [8.1.x]",
		"- LOST = -4",
		`+ store NIL: {result: FAULT, text: "the key no longer held this writer's pending marker (its TTL ran out); nothing was stored"}`,
		`- store LOST: {result: FAULT, text: "the pending marker expired before the object was stored"}`,
		"+ store/NIL: store answers NIL(-1) => FAULT code -1, written no",
		"- store/LOST: store answers LOST(-4) => FAULT code -4, written no",
	}, changes, out)
}

// failingWriter fails every write, as a closed pipe does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestDiffJSONThatCannotBeWrittenIsTrouble: diff -json whose output cannot
// be written exits 2 (trouble), not 0 or 1, which would answer whether
// the specs differ.
func TestDiffJSONThatCannotBeWrittenIsTrouble(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 2, run([]string{"diff", "-json", oldSpec, oldSpec}, failingWriter{}, &stderr))
	assert.Equal(t, "drivergen diff: writing the JSON: broken pipe\n", stderr.String())
}

func TestDiffUsage(t *testing.T) {
	code, _, stderr := runCLI("diff", oldSpec)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "want two spec files")
	code, _, stderr = runCLI("diff", oldSpec, "../../spec/memory.yaml")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "diff compares two specs of one store")
	code, _, _ = runCLI("diff", oldSpec, "no-such.yaml")
	assert.Equal(t, 2, code)
}

// TestNewFromStartsTheNextVersion: new --from copies a spec, comments and
// all, with the new version; the copy loads, differs from its
// origin in identity alone, and is never written over an existing file.
func TestNewFromStartsTheNextVersion(t *testing.T) {
	dir := t.TempDir()
	from := filepath.Join(dir, "hdr-1.yaml")
	src, err := os.ReadFile(oldSpec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(from, src, 0o644))

	code, out, stderr := runCLI("new", "--from", from, "--version", "2.0-rc1")
	require.Equal(t, 0, code, stderr)
	to := filepath.Join(dir, "hdr-2.0-rc1.yaml")
	assert.Contains(t, out, "wrote "+to+" (store hdr, Hdr20Rc1 in generated/hdr, SDK hdr-sdk 2.0-rc1)")
	assertPerm(t, to, 0o644)
	got, err := os.ReadFile(to)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(got), "# Started from "+from+" by 'drivergen new --from': read the SDK's changes since\n# [1], edit what they change, then 'drivergen diff "+from+" "+to+"'.\n"+strings.SplitAfter(string(src), "\n")[0]),
		"the copy starts by saying where it came from and what to do, then the origin's text:\n%s", got)
	assert.Contains(t, string(got), "# gen/diff_test.go: new.yaml differs", "comments are kept")
	assert.Contains(t, string(got), `sdk: {name: hdr-sdk, versions: ["2.0-rc1"]}`)

	code, out, _ = runCLI("diff", "-json", from, to)
	assert.Equal(t, 1, code)
	var d struct {
		Identity []struct{ Field, Old, New string }
		Rules    []any
		Codes    struct{ Added, Removed, Renumbered []any }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &d))
	require.Len(t, d.Identity, 1)
	assert.Equal(t, "sdk.versions", d.Identity[0].Field)
	assert.Equal(t, "[2.0-rc1]", d.Identity[0].New)
	assert.Empty(t, d.Rules)
	assert.Empty(t, d.Codes.Renumbered)

	code, _, stderr = runCLI("new", "--from", from, "--version", "2.0-rc1")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "exists; refusing to overwrite it")
	code, _, stderr = runCLI("new", "--from", from)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--from needs --version")
}

// TestNewFromRewritesABlockList: versions written as a block list are
// rewritten too.
func TestNewFromRewritesABlockList(t *testing.T) {
	got, err := respec([]byte("store: s\nsdk:\n  name: n\n  versions:\n    - \"1\"\n    - \"1.1\"\ncodes: {}\n"), "2")
	require.NoError(t, err)
	assert.Equal(t, "store: s\nsdk:\n  name: n\n  versions: [\"2\"]\ncodes: {}\n", string(got))
}

// TestNewFromEmptiesVerified: a new release was verified on no commit, so
// the copy's sdk.verified is empty, whether the origin wrote it as a flow
// or a block list, or on one line with sdk.versions, before or after it
// (two edits of one line, made from its end).
func TestNewFromEmptiesVerified(t *testing.T) {
	for in, want := range map[string]string{
		"store: s\nsdk: {name: n, versions: [\"1.0.0\"], verified: [\"3b5a59413\"]}\ncodes: {}\n":                   "store: s\nsdk: {name: n, versions: [\"2\"], verified: []}\ncodes: {}\n",
		"store: s\nsdk: {name: n, verified: [\"3b5a59413\"], versions: [\"1.0.0\"]}\ncodes: {}\n":                   "store: s\nsdk: {name: n, verified: [], versions: [\"2\"]}\ncodes: {}\n",
		"store: s\nsdk:\n  name: n\n  versions: [\"1\"]\n  verified: [\"3b5a59413\"] # main\ncodes: {}\n":           "store: s\nsdk:\n  name: n\n  versions: [\"2\"]\n  verified: [] # main\ncodes: {}\n",
		"store: s\nsdk:\n  name: n\n  versions: [\"1\"]\n  verified:\n    - 3b5a59413\n    - 0123abcd\ncodes: {}\n": "store: s\nsdk:\n  name: n\n  versions: [\"2\"]\n  verified: []\ncodes: {}\n",
	} {
		got, err := respec([]byte(in), "2")
		require.NoError(t, err)
		assert.Equal(t, want, string(got))
	}
}

// TestValidateHeader: -header checks each spec's codes against the enum;
// a renumbered code is an error at the spec's position naming the
// header's line.
func TestValidateHeader(t *testing.T) {
	spec := "../../gen/testdata/header/hdr-1.yaml"
	code, out, stderr := runCLI("validate", "-header", "../../gen/testdata/header/ok", "-enum", "ErrorCode", spec)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, spec+": ok, codes match ErrorCode in ../../gen/testdata/header/ok/sdk.h (6 codes)\n", out)

	code, out, stderr = runCLI("validate", "-header", "../../gen/testdata/header/renumbered/sdk.h", "-enum", "ErrorCode", spec)
	assert.Equal(t, 1, code)
	assert.Empty(t, out, "no ok before (or beside) a mismatch")
	assert.Equal(t, spec+":13:3: code LEASE_EXPIRED is -707 here, but ../../gen/testdata/header/renumbered/sdk.h:8 declares LEASE_EXPIRED = -708\n", stderr)

	code, _, stderr = runCLI("validate", "-header", "../../gen/testdata/header/ok", spec)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-header needs -enum")
	code, _, stderr = runCLI("validate", "-header", t.TempDir(), "-enum", "ErrorCode", spec)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no header")
}

// TestValidateOnlyTheSpecOfTheBuild: with -sdk-version, a CI job's glob of
// every version's spec checks only the spec that holds for its build (by
// release, whatever its commit), says which it left out, and a build no
// spec holds for is an error giving the command that starts its spec.
func TestValidateOnlyTheSpecOfTheBuild(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "hdr-1.yaml")
	src, err := os.ReadFile("../../gen/testdata/header/hdr-1.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(one, src, 0o644))
	code, _, stderr := runCLI("new", "--from", one, "--version", "2")
	require.Equal(t, 0, code, stderr)
	two := filepath.Join(dir, "hdr-2.yaml")

	// The header renumbers a code of both: only the build's spec is named.
	code, out, stderr := runCLI("validate", "-sdk-version", "2 (git: 3b5a59413)", "-header", "../../gen/testdata/header/renumbered/sdk.h", "-enum", "ErrorCode", one, two)
	assert.Equal(t, 1, code)
	assert.Equal(t, one+`: left out: it holds for hdr-sdk 1, not "2 (git: 3b5a59413)"`+"\n", out)
	assert.Contains(t, stderr, two+":")
	assert.NotContains(t, stderr, one+":")

	code, out, stderr = runCLI("validate", "-sdk-version", "1", one, two)
	assert.Equal(t, 0, code, stderr)
	assert.Equal(t, two+": left out: it holds for hdr-sdk 2, not \"1\"\n"+one+": ok\n", out)

	code, _, stderr = runCLI("validate", "-sdk-version", "3", one, two)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "the SDK 3 has no spec; kvblob holds specs for hdr-sdk 1 ("+one+"); hdr-sdk 2 ("+two+")")
	assert.Contains(t, stderr, "'drivergen new --from "+two+" --version 3'")
}

// TestNewTakesNamesOnlyAsOnePlainSegment: drivergen builds a file's name
// from a version (new --from: STORE-VERSION.yaml beside SPEC) or a store
// (new: spec/STORE.yaml and its folders), so each is taken only as one
// plain file-name segment; anything else is refused with exit 2 and an
// error naming the argument and what is allowed, and nothing is written,
// inside the spec's folder or out of it (tried: without the version's
// check, "../../escaped" writes a spec two folders up).
func TestNewTakesNamesOnlyAsOnePlainSegment(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "repo", "spec")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	from := filepath.Join(dir, "hdr-1.yaml")
	src, err := os.ReadFile(oldSpec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(from, src, 0o644))
	for _, c := range []struct {
		args []string
		want string // what stderr must say
	}{
		{[]string{"--from", from, "--version", "../../escaped"}, `--version "../../escaped" is not one plain file-name segment`},
		{[]string{"--from", from, "--version", "../x"}, `--version "../x" is not one plain file-name segment`},
		{[]string{"--from", from, "--version", "2/3"}, `--version "2/3" is not one plain file-name segment`},
		{[]string{"--from", from, "--version", `2\3`}, `--version "2\\3" is not one plain file-name segment`},
		{[]string{"--from", from, "--version", ".."}, `--version ".." is not one plain file-name segment`},
		{[]string{"--from", from, "--version", ".hidden"}, `--version ".hidden" is not one plain file-name segment`},
		{[]string{"--from", from, "--version", "1 2"}, `--version "1 2" is not one plain file-name segment`},
		{[]string{"-root", root, "../escaped"}, `store name "../escaped" must be lower-case letters and digits`},
		{[]string{"-root", root, "a/b"}, `store name "a/b" must be lower-case letters and digits`},
	} {
		t.Run(strings.Join(c.args[len(c.args)-1:], ""), func(t *testing.T) {
			code, out, stderr := runCLI(append([]string{"new"}, c.args...)...)
			assert.Equal(t, 2, code, "stdout: %s", out)
			assert.Contains(t, stderr, c.want)
			var files []string
			require.NoError(t, filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
				if err == nil && !e.IsDir() {
					files = append(files, p)
				}
				return err
			}))
			assert.Equal(t, []string{from}, files, "new wrote a file")
		})
	}
	code, _, stderr := runCLI("new", "--from", from, "--version", "0.3.12.post1+b1_x")
	assert.Equal(t, 0, code, stderr)
	assert.FileExists(t, filepath.Join(dir, "hdr-0.3.12.post1+b1_x.yaml"))
}

// TestNameCharactersAtTheirRangesEnds: a version is ASCII letters, digits
// and "._+-", starting with a letter or a digit; a store is lower-case
// letters and digits, starting with a letter. Each range is tried at both
// ends and at the character just past each.
func TestNameCharactersAtTheirRangesEnds(t *testing.T) {
	for _, c := range []struct {
		s                 string
		version, package_ bool
	}{
		{"a", true, true}, {"z", true, true}, {"A", true, false}, {"Z", true, false},
		{"0", true, false}, {"9", true, false},
		{"az09", true, true}, {"aAzZ09", true, false}, {"z9", true, true}, {"0.3.12.post1+x_y-z", true, false},
		{"`", false, false}, {"{", false, false}, {"@", false, false}, {"[", false, false}, {"/", false, false}, {":", false, false},
		{"a`", false, false}, {"a{", false, false}, {"a@", false, false}, {"a[", false, false}, {"a/", false, false}, {"a:", false, false},
		{".a", false, false}, {"_a", false, false}, {"+a", false, false}, {"-a", false, false}, {"a.", true, false},
		{"", false, false}, {"é", false, false}, {"aé", false, false},
	} {
		assert.Equal(t, c.version, plainSegment("--version", c.s) == nil, "version %q", c.s)
		assert.Equal(t, c.package_, isPackageName(c.s), "store %q", c.s)
	}
}

// TestNewFromRefusesWhatItCannotCopy: new --from refuses (exit 1), saying
// what and where, and writing nothing, an origin it cannot read or load,
// an sdk.versions flow list spanning lines (it rewrites one only on one
// line), and a copy that does not load beside its origin (both holding
// for one version).
func TestNewFromRefusesWhatItCannotCopy(t *testing.T) {
	src, err := os.ReadFile(oldSpec)
	require.NoError(t, err)
	for _, c := range []struct {
		name, origin, version, want string // origin "": none
	}{
		{"no origin", "", "2", "hdr-1.yaml: no such file or directory"},
		{"an origin that does not load", "store: hdr\n", "2", "hdr-1.yaml:1:1: "},
		{"versions spanning lines", strings.Replace(string(src), `versions: ["1"]}`, "versions: [\"1\",\n    \"1.1\"]}", 1), "2",
			"drivergen new: {from}: line 4: sdk.versions spans lines; write it on one line\n"},
		{"the origin's own version", string(src), "1", "drivergen new: the copy does not load:\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			from := filepath.Join(dir, "hdr-1.yaml")
			if c.origin != "" {
				require.NoError(t, os.WriteFile(from, []byte(c.origin), 0o644))
			}
			code, out, stderr := runCLI("new", "--from", from, "--version", c.version, "-o", filepath.Join(dir, "copy.yaml"))
			assert.Equal(t, 1, code)
			assert.Empty(t, out)
			assert.Contains(t, stderr, strings.ReplaceAll(c.want, "{from}", from))
			entries, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(entries), 1, "only the origin is there")
		})
	}
}

// TestRespecRefusesWhatItCannotRewrite: respec rewrites only a mapping
// whose sdk is a mapping holding a versions list (and a verified list,
// when given), each flow list on one line; anything else is an error
// saying what it found, never a panic or a half-rewritten copy.
func TestRespecRefusesWhatItCannotRewrite(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"[1, 2]\n", "not a spec mapping"},
		{"", "not a spec mapping"},
		{"store: s\n", "no sdk to rewrite"},
		{"store: s\nsdk: x\n", "no sdk to rewrite"},
		{"sdk: {name: n}\n", "no sdk.versions list to rewrite"},
		{"sdk: {versions: \"1\"}\n", "no sdk.versions list to rewrite"},
		{"sdk: {versions: [\"1\",\n  \"2\"]}\n", "line 1: sdk.versions spans lines; write it on one line"},
		{"sdk: {versions: [\"1\"], verified: abc}\n", "sdk.verified is not a list"},
		{"sdk: {versions: [\"1\"], verified: [a,\n  b]}\n", "line 1: sdk.verified spans lines; write it on one line"},
	} {
		_, err := respec([]byte(c.in), "2")
		if assert.Error(t, err, "%q", c.in) {
			assert.Equal(t, c.want, err.Error(), "%q", c.in)
		}
	}
}

// TestNewFromRemovesACopyItCouldNotWrite: a copy whose write failed is
// removed, and new --from fails saying why (here the file is opened
// read-only, so its write fails).
func TestNewFromRemovesACopyItCouldNotWrite(t *testing.T) {
	dir := t.TempDir()
	from := filepath.Join(dir, "hdr-1.yaml")
	src, err := os.ReadFile(oldSpec)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(from, src, 0o644))
	createSpec = func(name string) (*os.File, error) {
		return os.OpenFile(name, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o644)
	}
	defer func() { createSpec = createSpecFile }()
	code, out, stderr := runCLI("new", "--from", from, "--version", "2")
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, stderr, "bad file descriptor")
	_, err = os.Stat(filepath.Join(dir, "hdr-2.yaml"))
	assert.True(t, os.IsNotExist(err), "the copy is removed")
}

package gen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// generated is a file drivergen wrote: its header first.
const generated = "// " + Header + "\n\npackage s\n"

// TestCheckOutRefusesWhatGenerateMustNotTouch: generate writes only into
// package folders of its own. A module root, a package path that is not a
// folder and Go drivergen did not write (not a regular file, or without
// its header) are refused, each named, all of them in one error; tests,
// other files, drivergen's own files and folders not there yet are not.
func TestCheckOutRefusesWhatGenerateMustNotTouch(t *testing.T) {
	want := map[string][]byte{"s/s.go": nil, "s/scases/cases.go": nil, "t/t.go": nil}
	for _, c := range []struct {
		name  string
		files map[string]string // under outDir; "->x" is a link to x
		want  []string          // each line of the error, {out} for outDir; none: no error
	}{
		{"nothing there yet", nil, nil},
		{"drivergen's files, tests and others", map[string]string{
			"s/s.go": generated, "s/old.go": generated, "s/s_test.go": "package s\n", "s/README.md": "", "s/scases/cases.go": generated, "u/u.go": "package u\n",
		}, nil},
		{"a module root", map[string]string{"go.mod": "module m\n"}, []string{
			"{out} holds go.mod: it is a module root, not a folder of generated packages; want -out naming the folder the packages go in (e.g. generated)",
		}},
		{"Go drivergen did not write, in two packages", map[string]string{"s/mine.go": "package s\n", "t/t.go": "package t\n", "s/short.go": ""}, []string{
			`{out}/s/mine.go does not start with "// ` + Header + `": drivergen did not write it, and writes only into package folders of its own; move it, or pick another -out`,
			`{out}/s/short.go does not start with "// ` + Header + `": drivergen did not write it, and writes only into package folders of its own; move it, or pick another -out`,
			`{out}/t/t.go does not start with "// ` + Header + `": drivergen did not write it, and writes only into package folders of its own; move it, or pick another -out`,
		}},
		{"a link", map[string]string{"s/x.go": generated, "s/link.go": "->x.go"}, []string{
			"{out}/s/link.go is not a regular file; drivergen writes only regular files into its package folders",
		}},
		{"a file where a package folder goes", map[string]string{"s": "", "t/t.go": "package t\n"}, []string{
			"{out}/s is not a folder; drivergen writes package s there",
			"stat {out}/s/scases: not a directory",
			`{out}/t/t.go does not start with "// ` + Header + `": drivergen did not write it, and writes only into package folders of its own; move it, or pick another -out`,
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			for name, body := range c.files {
				p := filepath.Join(out, filepath.FromSlash(name))
				require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
				if target, ok := strings.CutPrefix(body, "->"); ok {
					require.NoError(t, os.Symlink(target, p))
					continue
				}
				require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
			}
			err := CheckOut(out, want)
			if c.want == nil {
				assert.NoError(t, err)
				return
			}
			if assert.Error(t, err) {
				assert.Equal(t, strings.ReplaceAll(strings.Join(c.want, "\n"), "{out}", out), err.Error())
			}
		})
	}
}

// TestPackagesAndEmptiedFolders: the package folders of a set of
// generated files, each once, sorted; and the folders that removing stale
// files may leave empty, each once, deepest first (then by name), so a
// folder is tried only after every folder inside it.
func TestPackagesAndEmptiedFolders(t *testing.T) {
	assert.Equal(t, []string{"a", "a/c", "b"},
		Packages(map[string][]byte{"b/x.go": nil, "a/y.go": nil, "a/c/z.go": nil, "a/w.go": nil}))
	assert.Empty(t, Packages(nil))

	for _, c := range []struct {
		removed, want []string
	}{
		{nil, nil},
		{[]string{"top.go"}, nil},
		{[]string{"a/b.go"}, []string{"a"}},
		{[]string{"z/y/x.go", "a/b.go"}, []string{"z/y", "a", "z"}},
		{[]string{"a/b/c.go", "a/d.go", "x/y.go", "a/b/e.go"}, []string{"a/b", "a", "x"}},
		{[]string{"m/n/o/p.go", "b/q.go"}, []string{"m/n/o", "m/n", "b", "m"}},
	} {
		assert.Equal(t, c.want, EmptiedFolders(c.removed), "%q", c.removed)
	}
}

// TestDriftNamesWhatDiffersAndWhatIsStale: Drift's files that differ are
// those want holds and outDir lacks or holds otherwise; its stale files
// are drivergen's files (regular, .go, not a test, with the header) that
// want lacks, in a package folder want writes, or anywhere under a folder
// of outDir that is wholly drivergen's; a folder holding any other Go is
// not looked into. Both lists are sorted.
func TestDriftNamesWhatDiffersAndWhatIsStale(t *testing.T) {
	out := t.TempDir()
	want := map[string][]byte{
		"s/same.go": []byte(generated), "s/edited.go": []byte(generated), "s/missing.go": []byte(generated),
		"s/scases/cases.go": []byte(generated), "a/a.go": []byte(generated),
	}
	for name, body := range map[string]string{
		"s/same.go": generated, "s/edited.go": generated + "// edited\n", "s/scases/cases.go": generated, "a/a.go": generated,
		"s/old.go": generated, "s/scases/old.go": generated, // stale: in a package folder want writes
		"s/mine.go": "package s\n", "s/old_test.go": generated, "s/notes.txt": generated, // not drivergen's Go
		"gone/x.go": generated, "gone/sub/y.go": generated, "gone/z_test.go": "package gone\n", // a whole folder of drivergen's
		"mixed/x.go": generated, "mixed/y.go": "package mixed\n", // holds other Go (after drivergen's): none of it is stale
		"tests/x_test.go": generated, // no Go but a test: nothing to be stale
		"a/old.go":        generated, // stale, in a package folder that is wholly drivergen's too: once
		"gone/f.go/y.go":  generated, // a folder named like Go is walked, not read
		"linked/x.go":     generated, // with a link among its Go, the folder is not drivergen's
	} {
		p := filepath.Join(out, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	require.NoError(t, os.Symlink("same.go", filepath.Join(out, "s", "link.go")))
	require.NoError(t, os.Symlink("x.go", filepath.Join(out, "linked", "l.go")))
	differ, stale, err := Drift(out, want)
	require.NoError(t, err)
	assert.Equal(t, []string{"s/edited.go", "s/missing.go"}, differ)
	assert.Equal(t, []string{"a/old.go", "gone/f.go/y.go", "gone/sub/y.go", "gone/x.go", "s/old.go", "s/scases/old.go"}, stale)

	differ, stale, err = Drift(filepath.Join(out, "nothing"), want)
	require.NoError(t, err)
	assert.Equal(t, []string{"a/a.go", "s/edited.go", "s/missing.go", "s/same.go", "s/scases/cases.go"}, differ, "a missing outDir: every file differs")
	assert.Empty(t, stale)
}

package docs_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/s3/s3kit"
)

// stepLine is a step of a store's deps.sh: apt_step, go_step or
// fetch_step, and the step's name.
var stepLine = regexp.MustCompile(`(?m)^\s*(?:apt|go|fetch)_step\s+(\S+)`)

// depsSteps are the steps of every stores/*/deps.sh, each with the
// script it is in (relative to the module root).
func depsSteps(t *testing.T, root string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "stores", "*", "deps.sh"))
	require.NoError(t, err)
	steps := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		rel, _ := filepath.Rel(root, f)
		for _, m := range stepLine.FindAllStringSubmatch(string(b), -1) {
			require.NotContains(t, steps, m[1], "step %s is in both %s and %s", m[1], steps[m[1]], rel)
			steps[m[1]] = rel
		}
	}
	require.NotEmpty(t, steps, "no store has a deps.sh step")
	return steps
}

// firstRunRow is a row of the README's first-run table that names a
// step: its name and the deps.sh it says runs it.
var firstRunRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\| `(stores/[^`]+/deps\\.sh)`")

// TestTheFirstRunTableIsTheDepsSteps: README.md's first-run table has a
// row per step of a store's deps.sh, naming the script it is in, and no
// other; a new store's step is a new row, and nothing is numbered.
func TestTheFirstRunTableIsTheDepsSteps(t *testing.T) {
	root := repoRoot(t)
	steps := depsSteps(t, root)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	rows := map[string]string{}
	for _, m := range firstRunRow.FindAllStringSubmatch(string(b), -1) {
		rows[m[1]] = m[2]
	}
	assert.Equal(t, steps, rows, "README.md's first-run table (step: script) against the steps of stores/*/deps.sh")
	assert.NotRegexp(t, `\[\d+/\d+\]`, string(b), "a numbered step: a new store would renumber it")
}

// TestAStoreDepsStep runs the steps of scripts/deps.sh against stand-ins
// for apt-get and go: a server found in a folder the step names is left
// alone; one missing is installed, saying so; one that cannot be set up
// says why, and fails under CI=true only; go install's progress is a
// line every 50 packages.
func TestAStoreDepsStep(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	root := repoRoot(t)
	tmp := t.TempDir()
	lib := filepath.Join(tmp, "lib")
	bin := filepath.Join(tmp, "bin") // where the stand-in apt-get installs
	for _, d := range []string{filepath.Join(lib, "15", "bin"), bin} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(lib, "15", "bin", "kvblob-found"), []byte("#!/bin/sh\n"), 0o755))
	script := func(name, body string) string {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
		return p
	}
	aptOK := script("apt-ok", `[ "$1" = install ] && printf '#!/bin/sh\n' > `+bin+`/kvblob-installed && chmod +x `+bin+`/kvblob-installed; exit 0`+"\n")
	aptFail := script("apt-fail", "exit 100\n")
	// Another process holds the package lock: for the first two calls, or
	// for good.
	lockMsg := "echo 'E: Could not get lock /var/lib/apt/lists/lock. It is held by process 4242 (apt-get)' >&2; exit 100"
	aptLockedTwice := script("apt-locked-twice", `n=$(cat `+tmp+`/tries 2>/dev/null || echo 0); echo $((n+1)) > `+tmp+`/tries; [ "$n" -lt 2 ] && { `+lockMsg+`; }
[ "$1" = install ] && printf '#!/bin/sh\n' > `+bin+`/kvblob-waited && chmod +x `+bin+`/kvblob-waited; exit 0`+"\n")
	aptLocked := script("apt-locked", lockMsg+"\n")
	goFake := script("go", `case "$1" in env) [ "$2" = GOPATH ] && echo `+tmp+`/gopath ;; install) i=0; while [ $i -lt 120 ]; do echo example.com/pkg$i; i=$((i+1)); done ;; esac`+"\n")
	asRoot := os.Geteuid() == 0
	for _, c := range []struct {
		name, step, apt, ci string
		code                int
		want                []string
	}{
		{"found in the step's folder", "apt_step found pkg kvblob-found " + lib + "/*/bin", aptFail, "true", 0, nil},
		{"installed", "apt_step inst kvblob-installed kvblob-installed", aptOK, "", 0,
			[]string{"make deps: inst: apt-get update and install Debian's kvblob-installed (about 10 s)", "make deps: inst: installed"}},
		{"cannot be installed", "apt_step nope pkg kvblob-nope", aptFail, "", 0,
			[]string{"make deps: nope: apt-get update and install Debian's pkg (about 10 s)", "make deps: nope: apt-get install pkg failed; its tests will skip"}},
		{"cannot be installed, under CI", "apt_step nope pkg kvblob-nope", aptFail, "true", 1,
			[]string{"make deps: nope: apt-get update and install Debian's pkg (about 10 s)", "make deps: nope: apt-get install pkg failed; its tests will skip",
				"make deps: nope: CI=true: failing, since the tests would only skip"}},
		{"the package lock is held, then released", "apt_step wait kvblob-waited kvblob-waited", aptLockedTwice, "", 0,
			[]string{"make deps: wait: apt-get update and install Debian's kvblob-waited (about 10 s)",
				"make deps: wait: another process holds Debian's package lock; waiting for it (at most 3 s, 0 s so far)",
				"make deps: wait: installed"}},
		{"the package lock stays held", "apt_step held pkg kvblob-held", aptLocked, "", 0,
			[]string{"make deps: held: apt-get update and install Debian's pkg (about 10 s)",
				"make deps: held: another process holds Debian's package lock; waiting for it (at most 3 s, 0 s so far)",
				"make deps: held: another process held Debian's package lock for 3 s; its tests will skip (retry: make deps)"}},
		{"left out by KVBLOB_DEPS_ONLY", "KVBLOB_DEPS_ONLY='a b' apt_step nope pkg kvblob-nope; KVBLOB_DEPS_ONLY='a nope' fetch_step nope /nonexistent 'a thing' false", aptFail, "", 0,
			[]string{"make deps: nope: fetching a thing", "make deps: nope: could not fetch (retry: false); its tests will skip"}},
		{"go install", "go_step gw example.com/gw@v1 kvblob-gw", aptFail, "", 0,
			[]string{"make deps: gw: go install example.com/gw@v1: downloads its modules and compiles its packages; that can take minutes, a line every 50 packages compiled",
				"make deps: gw: 50 packages compiled", "make deps: gw: 100 packages compiled", "make deps: gw: installed (in go env GOBIN, or GOPATH/bin)"}},
		{"fetched already", "fetch_step v " + filepath.Join(lib, "15", "bin", "kvblob-found") + " 'a thing' false", aptFail, "true", 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			if strings.HasPrefix(c.step, "apt_step") && c.want != nil && !asRoot {
				t.Skip("apt_step installs only as root")
			}
			cmd := exec.Command("bash", "-c", ". scripts/deps.sh; "+c.step)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "PATH="+bin+":/usr/bin:/bin", "GO="+goFake, "KVBLOB_APT_GET="+c.apt, "CI="+c.ci,
				"KVBLOB_APT_LOCK_WAIT=3", "KVBLOB_APT_LOCK_POLL=1")
			out, err := cmd.Output()
			code := 0
			if err != nil {
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee, "%s", out)
				code = ee.ExitCode()
			}
			assert.Equal(t, c.code, code, "%s", out)
			got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if len(out) == 0 {
				got = nil
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// TestS3DepsInstallTheKitsVersitygw: the versitygw stores/s3/deps.sh
// installs is the one s3kit runs (s3kit.Version).
func TestS3DepsInstallTheKitsVersitygw(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "stores", "s3", "deps.sh"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "go_step versitygw github.com/versity/versitygw/cmd/versitygw@"+s3kit.Version+" versitygw\n")
}

// repoRoot is the module root: the folder above docs/.
func repoRoot(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	require.NoError(t, err)
	root := filepath.Dir(wd)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod in %s", root)
	}
	return root
}

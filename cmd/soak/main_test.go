package main

import (
	"bytes"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFlagsAreChecked(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-duration", "0s"}, "-duration must be positive"},
		{[]string{"-attempts", "-1"}, "-attempts not negative"},
		{[]string{"-store", "ceph"}, `unknown store "ceph"`},
		{[]string{"-nope"}, "flag provided but not defined"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		assert.Equal(t, 2, run(c.args, &out, &errb), c.args)
		assert.Contains(t, errb.String(), c.want)
	}
}

func TestAShortRunPrintsTheReport(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"-duration", "5s", "-attempts", "50", "-seed", "3", "-store", "memory"}, &out, &errb)
	assert.Equal(t, 0, code, out.String())
	assert.Contains(t, out.String(), "soak: seed 3")
	assert.Contains(t, out.String(), "invariant violations: 0")
	assert.Contains(t, errb.String(), "soak: seed 3 for 5s")
}

// TestTheLeastDurationIsTaken: -duration 1ns is positive, so a soak of
// one attempt runs (a bound of <= 1 would refuse it).
func TestTheLeastDurationIsTaken(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 0, run([]string{"-duration", "1ns", "-attempts", "1", "-seed", "3", "-store", "memory"}, &out, &errb), errb.String())
}

// TestAViolationExitsOne: any invariant violation, one included, exits 1;
// none exits 0.
func TestAViolationExitsOne(t *testing.T) {
	for n, want := range []int{0, 1, 1} {
		rep := Report{Violations: make([]string, n)}
		assert.Equal(t, want, exitCode(rep), "%d violations", n)
	}
}

// mainEnv makes the test binary run main (TestMain).
const mainEnv = "KVBLOB_SOAK_TEST_MAIN"

// TestMainPassesItsArguments runs the command (this test binary, as main)
// with -duration=0s then -store=ceph: it refuses the first, so main handed
// run every argument after the program's name (skipping one more, run
// would see -store=ceph alone and refuse that instead).
func TestMainPassesItsArguments(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-duration=0s", "-store=ceph")
	cmd.Env = append(os.Environ(), mainEnv+"=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, stderr.String())
	assert.Equal(t, 2, exit.ExitCode())
	assert.Contains(t, stderr.String(), "-duration must be positive", "the first argument reached run")
}

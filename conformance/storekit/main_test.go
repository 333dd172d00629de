package storekit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/testchild"
)

// mainModeEnv makes TestMain run Main instead of the tests: "leak" with a
// setup that leaves a goroutine running, "setup-error" with a setup that
// fails, "clean" with a setup whose teardown says it ran.
const mainModeEnv = "STOREKIT_TEST_MAIN"

// runMain is TestMain under mainModeEnv: Main with the setup mode names,
// over the tests the command line selects. Main ends the process; should
// it return, the run exits 3.
func runMain(m *testing.M, mode string) {
	block := make(chan struct{}) // never closed: the leaked goroutine waits on it
	Main(m, func() (func(), error) {
		switch mode {
		case "leak":
			go func() { <-block }()
		case "setup-error":
			return nil, errors.New("setup: the server would not start")
		}
		return func() { fmt.Println("teardown ran") }, nil
	})
	fmt.Println("Main returned instead of ending the process")
	os.Exit(3)
}

// TestMainFailsTheRunItShould: Main ends the process: with 0 after a
// clean run, having called the teardown setup returned; with 1 when setup
// fails, saying why, and when a goroutine outlived the tests, naming the
// leak.
func TestMainFailsTheRunItShould(t *testing.T) {
	for _, c := range []struct {
		mode   string
		code   int
		output string
	}{
		{"clean", 0, "teardown ran"},
		{"setup-error", 1, "setup: the server would not start"},
		{"leak", 1, "goleak:"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			cmd := testchild.Command("-test.run=^$")
			cmd.Env = append(os.Environ(), mainModeEnv+"="+c.mode)
			out, err := cmd.CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else {
				require.NoError(t, err, "running the test binary")
			}
			assert.Equal(t, c.code, code, "exit code; output:\n%s", out)
			assert.Contains(t, string(out), c.output)
		})
	}
}

// tests is a run of tests that answers code.
type tests struct {
	code int
	ran  bool
}

func (m *tests) Run() int { m.ran = true; return m.code }

// TestRunSaysHowTheRunWent: Main's code is the tests' own when setup
// succeeded and no goroutine outlived them, having called the teardown
// after the tests; 1 when setup failed (no test runs), or when a
// goroutine outlived tests that passed.
func TestRunSaysHowTheRunWent(t *testing.T) {
	for _, c := range []struct {
		name     string
		tests    int // the tests' exit code
		setupErr bool
		leak     bool
		want     int
	}{
		{"clean", 0, false, false, 0},
		{"a test failed", 1, false, false, 1},
		{"setup failed", 0, true, false, 1},
		{"a goroutine outlived the tests", 0, false, true, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &tests{code: c.tests}
			block := make(chan struct{})
			defer close(block) // ends the leaked goroutine, if any
			tornDown := false
			got := run(m, func() (func(), error) {
				if c.setupErr {
					return nil, errors.New("setup: the server would not start")
				}
				if c.leak {
					go func() { <-block }()
				}
				return func() { tornDown = m.ran }, nil
			})
			assert.Equal(t, c.want, got)
			assert.Equal(t, !c.setupErr, m.ran, "the tests ran")
			assert.Equal(t, !c.setupErr, tornDown, "the teardown ran after the tests")
		})
	}
}

package fs_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/conformance"
	gen "github.com/kvblob/kvblob/generated/fs"
	"github.com/kvblob/kvblob/stores/fs/fskit"
)

var env *fskit.Env

// TestMain makes the kit's directory (a tmpfs mount when run as root) for
// the package, and checks no goroutine outlives the tests. Started as the
// killed writer's child, it runs that writer instead.
func TestMain(m *testing.M) {
	if os.Getenv(killedWriterEnv) != "" { // a child of TestATempFileOfAKilledWriterIsSwept
		os.Exit(killedWriter())
	}
	code := func() int {
		var err error
		if env, err = fskit.Setup(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer func() {
			if err := env.Close(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}()
		return m.Run()
	}()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestConformance runs the whole suite and every case generated from
// spec/fs-posix.yaml, each on a directory of its own.
func TestConformance(t *testing.T) {
	conformance.Run(t, fskit.Factory(env), conformance.Suite{
		Scenarios: fskit.Scenarios(), Cases: gen.Cases, Stage: fskit.Stage, SkipReasons: fskit.SkipReasons,
	})
}

// TestSDKChecks asks the filesystem under a driver's root for what the
// spec relies on, as the gate does.
func TestSDKChecks(t *testing.T) {
	for _, c := range fskit.SDKChecks() {
		t.Run(c.Name, func(t *testing.T) {
			check := conformance.Check{Name: c.Name, Run: func(h *conformance.Harness, _ conformance.Scenarios) { c.Run(h) }}
			v := conformance.RunRecorded(check, fskit.Factory(env), conformance.Suite{})
			switch {
			case v.Skipped:
				t.Skip(v.Reason)
			case !v.Passed:
				t.Error(v.Reason)
			}
		})
	}
}

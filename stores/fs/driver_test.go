package fs_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	gen "github.com/kvblob/kvblob/generated/fs"
	"github.com/kvblob/kvblob/stores/fs/fskit"
)

var env *fskit.Env

// TestMain makes the kit's directory (a tmpfs mount when run as root) for
// the package, and checks no goroutine outlives the tests.
func TestMain(m *testing.M) {
	storekit.Main(m, func() (func(), error) {
		var err error
		if env, err = fskit.Setup(); err != nil {
			return nil, err
		}
		return func() {
			if err := env.Close(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}, nil
	})
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

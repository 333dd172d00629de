package s3_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	gen "github.com/kvblob/kvblob/generated/s3"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
)

// env is the package's versitygw; nil when it is not installed (skip names
// why, and CI, which installs it, fails instead).
var (
	env  *s3kit.Env
	skip string
)

// TestMain starts versitygw on loopback for the package, and checks no
// goroutine outlives the tests.
func TestMain(m *testing.M) {
	storekit.Main(m, func() (func(), error) {
		if ok, why := s3kit.Available(); !ok {
			skip = why
			return nil, nil
		}
		var err error
		if env, err = s3kit.Setup(); err != nil {
			return nil, err
		}
		return func() {
			if err := env.Close(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}, nil
	})
}

// need skips t when versitygw is not installed, and fails it under CI.
func need(t testing.TB) {
	t.Helper()
	if env == nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(skip)
		}
		t.Skip(skip)
	}
}

// TestConformance runs the whole suite and every case generated from
// spec/s3-v1.109.yaml, each on a bucket of its own.
func TestConformance(t *testing.T) {
	need(t)
	conformance.Run(t, s3kit.Factory(env), conformance.Suite{
		Scenarios: s3kit.Scenarios(), Cases: gen.Cases, Stage: s3kit.Stage,
	})
}

// TestSDKChecks asks versitygw for what the spec relies on, as the gate
// does.
func TestSDKChecks(t *testing.T) {
	need(t)
	for _, c := range s3kit.SDKChecks() {
		t.Run(c.Name, func(t *testing.T) {
			check := conformance.Check{Name: c.Name, Run: func(h *conformance.Harness, _ conformance.Scenarios) { c.Run(h) }}
			v := conformance.RunRecorded(check, s3kit.Factory(env), conformance.Suite{})
			switch {
			case v.Skipped:
				t.Skip(v.Reason)
			case !v.Passed:
				t.Error(v.Reason)
			}
		})
	}
}

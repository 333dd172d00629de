package s3_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/generated/s3spec"
	"github.com/kvblob/kvblob/generated/s3spec/s3cases"
	"github.com/kvblob/kvblob/internal/s3kit"
	"github.com/kvblob/kvblob/runtime/driver"
)

// TestConformance runs the whole suite, every case generated from
// spec/s3-v1.109.yaml and the checks of the SDK and versitygw, each on a
// bucket of its own in the package's versitygw (over a tmpfs when run as
// root, so that a full disk is real).
func TestConformance(t *testing.T) {
	where := "versitygw " + s3kit.Version + ", HTTPS on loopback, tmpfs"
	if !s3kit.Mounts() {
		where = "versitygw " + s3kit.Version + ", HTTPS on loopback; " + s3kit.NoMount
	}
	conformance.Run(t, conformance.Suite{
		Name: "s3", SDK: s3spec.SDKName + " " + s3spec.SDKVersions()[0] + " (" + where + ")",
		Setup:     func(conformance.T) (string, error) { return skip, nil },
		Factory:   func(t conformance.T) driver.Driver { return s3kit.Open(t, env) },
		Scenarios: s3kit.Scenarios(), Cases: s3cases.All(), Stage: s3kit.Stage, SDKChecks: s3kit.SDKChecks(),
		Integrity: integrity,
	})
}

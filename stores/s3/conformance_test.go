package s3_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	s3gen "github.com/kvblob/kvblob/generated/s3"
	"github.com/kvblob/kvblob/generated/s3/s3cases"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
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
	var small, large []conformance.Case
	for _, c := range s3cases.S3V1109() {
		if multipart[c.Call] || c.Op == conformance.OpGet {
			large = append(large, c)
		}
		if !multipart[c.Call] {
			small = append(small, c)
		}
	}
	conformance.Run(t, conformance.Suite{
		Name: "s3", SDK: s3gen.S3V1109().SDKName + " " + s3gen.S3V1109().SDKVersions[0] + " (" + where + ")",
		Setup:     gw.Setup,
		Factory:   func(t conformance.T) driver.Driver { return s3kit.Open(t, gw.Value()) },
		Scenarios: s3kit.Scenarios(), Cases: small, Stage: s3kit.Stage, SDKChecks: s3kit.SDKChecks(),
		Integrity: integrity, Neighbour: s3kit.Neighbour{},
	})
	// Every row large: the multipart calls' cases, and every get's through
	// ranged GETs.
	conformance.Run(t, conformance.Suite{
		Name: "s3-large", SDK: s3gen.S3V1109().SDKName + " " + s3gen.S3V1109().SDKVersions[0] + " (" + where + "), every row in parts",
		Setup:   gw.Setup,
		Factory: func(t conformance.T) driver.Driver { return s3kit.OpenWith(t, gw.Value(), s3kit.Large) },
		Cases:   large, Stage: s3kit.Stage, Neighbour: s3kit.Neighbour{},
	})
}

// multipart are the calls only a large row makes.
var multipart = map[string]bool{"create_upload": true, "upload_part": true, "complete_upload": true}

package s3kit

import (
	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/gate"
	"github.com/kvblob/kvblob/generated/s3spec"
	"github.com/kvblob/kvblob/generated/s3spec/s3cases"
	"github.com/kvblob/kvblob/runtime/driver"
)

// The S3 store joins the gate over a versitygw the gate starts on
// loopback, with HTTPS from a test CA, over a tmpfs when it runs as root.
func init() {
	var env *Env
	where := "versitygw " + Version + ", HTTPS on loopback, tmpfs"
	if !Mounts() {
		where = "versitygw " + Version + ", HTTPS on loopback; " + NoMount
	}
	s := gate.Store{
		Name: "s3", SDK: s3spec.SDKName + " " + s3spec.SDKVersions()[0] + " (" + where + ")",
		Scenarios: Scenarios(), Cases: s3cases.All(), Stage: Stage, SDKChecks: SDKChecks(),
		Factory: func(t conformance.T) driver.Driver { return Open(t, env) },
	}
	s.Setup = func() (string, func(), error) {
		if ok, why := Available(); !ok {
			return why, nil, nil
		}
		e, err := Setup()
		if err != nil {
			return "", nil, err
		}
		env = e
		return "", func() { _ = e.Close() }, nil
	}
	gate.Register(s)
}

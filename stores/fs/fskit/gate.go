package fskit

import (
	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/gate"
	"github.com/kvblob/kvblob/generated/fsspec"
	"github.com/kvblob/kvblob/generated/fsspec/fscases"
	"github.com/kvblob/kvblob/runtime/driver"
)

// The filesystem store joins the gate over a directory the gate makes: a
// tmpfs mount when it runs as root, so that a full filesystem is real.
func init() {
	var env *Env
	where := "tmpfs"
	if !Mounts() {
		where = "temp dir; " + NoMount
	}
	s := gate.Store{
		Name: "fs", SDK: fsspec.SDKName + " file I/O, " + fsspec.SDKVersions()[0] + " (" + where + ")",
		Cases: fscases.All(), Stage: Stage, SDKChecks: SDKChecks(),
		Factory: func(t conformance.T) driver.Driver { return Open(t, env) },
		// A full filesystem is staged only on the tmpfs Setup mounted.
		ScenariosAfterSetup: func() conformance.Scenarios {
			s := Scenarios()
			if env == nil || !env.Tmpfs {
				s.Full = nil
			}
			return s
		},
		SkipReasons: SkipReasons,
	}
	s.Setup = func() (string, func(), error) {
		e, err := Setup()
		if err != nil {
			return "", nil, err
		}
		env = e
		return "", func() { _ = e.Close() }, nil
	}
	gate.Register(s)
}

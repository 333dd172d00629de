package fs_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/generated/fs/fscases"
)

// TestConformance runs the whole suite, every case generated from each fs
// spec (generated/fs/fscases: spec/fs-posix.yaml) and the checks of the
// filesystem itself, each on a directory of its own in the package's Env
// (a tmpfs when run as root, so that a full filesystem is real), and the
// hostile checks through the kit's Neighbour.
func TestConformance(t *testing.T) {
	where := "tmpfs"
	if !tree.Value().Tmpfs {
		where = "temp dir; " + NoMount
	}
	for _, v := range fscases.All() {
		conformance.Run(t, conformance.Suite{
			Name: v.Name, SDK: v.Spec.SDKName + " file I/O, " + v.Spec.SDKVersions[0] + " (" + where + ")",
			Factory: Factory(tree.Value()), Scenarios: Scenarios(), SkipReasons: SkipReasons,
			Cases: v.Cases, Stage: Stage, SDKChecks: SDKChecks(), Integrity: integrity,
			Neighbour: Neighbour{Env: tree.Value()},
		})
	}
}

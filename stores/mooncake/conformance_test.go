package mooncake_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/generated/mooncake/mooncakecases"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit"
)

// suite is the conformance suite over the fake SDK for version v, named
// name, with drivers over master (nil: a fresh master per driver) whose
// clients report a build of v's spec: every scenario it stages, the
// version's generated cases and the checks the driver is known to fail.
func suite(name string, v mooncakecases.Version, master *fakesdk.Master) conformance.Suite {
	build := mooncakekit.BuildOf(v.Spec.Spec)
	return conformance.Suite{
		Name: name, SDK: mooncakekit.Describe(v.Spec.Spec, build, "fake"), CodeEnum: "ErrorCode",
		Factory: mooncakekit.FactoryOf(master, build), Scenarios: mooncakekit.Scenarios(),
		Cases: v.Cases, Stage: mooncakekit.Stage, KnownFailures: mooncakekit.KnownFailures(false),
		Integrity: integrity, Neighbour: mooncakekit.Neighbour{}, NeighbourFactory: withTrailer(master, false),
	}
}

// TestConformance runs the suite over drivers each on a fake master of
// its own, once per Mooncake spec (generated/mooncake/mooncakecases): the
// mooncake rows of the gate's table, one per version, so a new spec
// joins the gate with no edit here.
func TestConformance(t *testing.T) {
	for _, v := range mooncakecases.All() {
		conformance.Run(t, suite(v.Name, v, nil))
	}
}

// TestConformanceOverASharedMaster runs it over drivers that share one
// fake master.
func TestConformanceOverASharedMaster(t *testing.T) {
	for _, v := range mooncakecases.All() {
		conformance.Run(t, suite(v.Name+"-shared-master", v, fakesdk.NewMaster(0)))
	}
}

// TestSomeCasesAreStageable: the real pool's suite runs only the cases
// the spec marks stageable (StageableOnly), so the spec marks some, and
// not all.
func TestSomeCasesAreStageable(t *testing.T) {
	stageable := 0
	for _, c := range mooncakecases.Mooncake0313() {
		if c.Stageable {
			stageable++
		}
	}
	require.Greater(t, stageable, 0)
	require.Less(t, stageable, len(mooncakecases.Mooncake0313()))
}

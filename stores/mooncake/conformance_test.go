package mooncake_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/generated/mooncakespec"
	"github.com/kvblob/kvblob/generated/mooncakespec/mooncakecases"
	"github.com/kvblob/kvblob/internal/mooncakekit"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

// suite is the conformance suite over the fake SDK, named name, with
// drivers over master (nil: a fresh master per driver): every scenario it
// stages, spec/mooncake-0.3.13.yaml's generated cases and the checks the
// driver is known to fail.
func suite(name string, master *fakesdk.Master) conformance.Suite {
	return conformance.Suite{
		Name: name, SDK: mooncakespec.SDKName + " " + mooncakekit.Version + " (fake)", CodeEnum: "ErrorCode",
		Factory: mooncakekit.Factory(master), Scenarios: mooncakekit.Scenarios(),
		Cases: mooncakecases.All(), Stage: mooncakekit.Stage, KnownFailures: mooncakekit.KnownFailures(),
		Integrity: integrity,
	}
}

// TestConformance runs the suite over drivers each on a fake master of
// its own: the mooncake row of the gate's table.
func TestConformance(t *testing.T) { conformance.Run(t, suite("mooncake", nil)) }

// TestConformanceOverASharedMaster runs it over drivers that share one
// fake master.
func TestConformanceOverASharedMaster(t *testing.T) {
	conformance.Run(t, suite("mooncake-shared-master", fakesdk.NewMaster(0)))
}

// TestSomeCasesAreStageable: the real pool's suite runs only the cases
// the spec marks stageable (StageableOnly), so the spec marks some, and
// not all.
func TestSomeCasesAreStageable(t *testing.T) {
	stageable := 0
	for _, c := range mooncakecases.All() {
		if c.Stageable {
			stageable++
		}
	}
	require.Greater(t, stageable, 0)
	require.Less(t, stageable, len(mooncakecases.All()))
}

package metrics_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/metrics"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memorykit"
)

// TestInstrumentedDriverPassesConformance runs the conformance suite, with
// spec/memory.yaml's generated cases, over instrumented memory drivers,
// blocking and background: the wrapper keeps every promise of the
// contract, and driver.As reaches the store, so the suite stages each
// scenario and case through it.
func TestInstrumentedDriverPassesConformance(t *testing.T) {
	m := metrics.NewDrivers(metrics.Options{})
	for _, mode := range []memory.Mode{memory.Blocking, memory.Background} {
		s := memorykit.Suite("instrumented-memory-"+mode.String(), memory.Options{Mode: mode})
		s.Factory = func(conformance.T) driver.Driver {
			return m.Instrument(memory.New(memory.Options{Mode: mode}), "memory")
		}
		conformance.Run(t, s)
	}
}

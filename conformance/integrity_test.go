package conformance_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/internal/broken"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memorykit"
)

// TestIntegrityPairing runs the integrity check against a memory driver
// with a row key, which must pass, and against its broken twin, which must
// fail.
func TestIntegrityPairing(t *testing.T) {
	keyed := func(conformance.T) driver.Driver { return memory.New(memory.Options{Integrity: storekit.RowKey()}) }
	run := func(f conformance.Factory) conformance.Verdict {
		s := conformance.Suite{Integrity: &conformance.Integrity{Factory: f, Plant: memorykit.Foreign}}
		for _, c := range s.Checks() {
			if c.Name == conformance.IntegrityCheckName {
				return conformance.RunRecorded(c, f, s)
			}
		}
		t.Fatal("a suite with Integrity set runs no integrity check")
		return conformance.Verdict{}
	}
	t.Run("sound", func(t *testing.T) {
		if o := run(keyed); !o.Passed {
			t.Errorf("the sound driver did not pass: skipped=%v %s", o.Skipped, o.Reason)
		}
	})
	t.Run("broken", func(t *testing.T) {
		o := run(func(t conformance.T) driver.Driver { return broken.IntegrityTwin(keyed(t)) })
		if o.Passed || o.Skipped {
			t.Errorf("the broken twin was not caught (passed=%v skipped=%v %s)", o.Passed, o.Skipped, o.Reason)
		} else {
			t.Logf("caught: %s", o.Reason)
		}
	})
	t.Run("without-integrity", func(t *testing.T) {
		// A driver with no row key reads the foreign row READY: the check
		// must catch that too.
		o := run(func(conformance.T) driver.Driver { return memory.New(memory.Options{}) })
		if o.Passed || o.Skipped {
			t.Errorf("a driver without integrity passed the integrity check (%s)", o.Reason)
		}
	})
}

package broken_test

import (
	"bytes"
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/broken"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memtest"
	"github.com/kvblob/kvblob/stores/trailer"
)

// TestIntegrityPairing runs the integrity check against a memory driver
// with a row key, which must pass, and against its broken twin, which must
// fail.
func TestIntegrityPairing(t *testing.T) {
	in, err := trailer.NewIntegrity(bytes.Repeat([]byte{0x42}, 32), nil)
	if err != nil {
		t.Fatal(err)
	}
	keyed := func(conformance.T) driver.Driver { return memory.New(memory.Options{Integrity: in}) }
	c := conformance.IntegrityCheck(memtest.Foreign)
	t.Run("sound", func(t *testing.T) {
		if o := conformance.RunRecorded(c, keyed, conformance.Suite{}); !o.Passed {
			t.Errorf("the sound driver did not pass: skipped=%v %s", o.Skipped, o.Reason)
		}
	})
	t.Run("broken", func(t *testing.T) {
		o := conformance.RunRecorded(c, func(t conformance.T) driver.Driver { return broken.IntegrityTwin(keyed(t)) }, conformance.Suite{})
		if o.Passed || o.Skipped {
			t.Errorf("the broken twin was not caught (passed=%v skipped=%v %s)", o.Passed, o.Skipped, o.Reason)
		} else {
			t.Logf("caught: %s", o.Reason)
		}
	})
	t.Run("without-integrity", func(t *testing.T) {
		// A driver with no row key reads the foreign row READY: the check
		// must catch that too.
		o := conformance.RunRecorded(c, func(conformance.T) driver.Driver { return memory.New(memory.Options{}) }, conformance.Suite{})
		if o.Passed || o.Skipped {
			t.Errorf("a driver without integrity passed the integrity check (%s)", o.Reason)
		}
	})
}

package conformance_test

import (
	"testing"
	"time"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/internal/broken"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memorykit"
)

// suite is what the pairing runs: every scenario the memory store stages.
// The sound driver gets the default deadline, so a loaded machine (the
// race detector, other packages' tests) cannot fail it; its broken twins
// a short one, since some of them fail by timing out.
func suite() conformance.Suite {
	return conformance.Suite{Scenarios: memorykit.Scenarios()}
}

// forTwins is s with the short deadline a check run against a broken twin
// gets, so a twin that fails by hanging fails in 2 s.
func forTwins(s conformance.Suite) conformance.Suite {
	s.Deadline = 2 * time.Second
	return s
}

func sound(conformance.T) driver.Driver { return memory.New(memory.Options{}) }

// TestPairing runs every conformance check against the sound memory driver,
// which must pass, and against its broken twin, which must fail. A check
// with no twin is a defect.
func TestPairing(t *testing.T) {
	s := suite()
	names := map[string]bool{}
	for _, c := range conformance.Checks() {
		names[c.Name] = true
		twin, ok := broken.Twin(c.Name)
		t.Run(c.Name+"/sound", func(t *testing.T) {
			o := conformance.RunRecorded(c, sound, s)
			if !o.Passed {
				t.Errorf("the sound driver did not pass: skipped=%v %s", o.Skipped, o.Reason)
			}
		})
		t.Run(c.Name+"/broken", func(t *testing.T) {
			if !ok {
				t.Fatalf("check %q has no broken twin in internal/broken", c.Name)
			}
			o := conformance.RunRecorded(c, func(t conformance.T) driver.Driver { return twin(sound(t)) }, forTwins(s))
			if o.Passed || o.Skipped {
				t.Errorf("the broken twin was not caught (passed=%v skipped=%v %s)", o.Passed, o.Skipped, o.Reason)
			} else {
				t.Logf("caught: %s", o.Reason)
			}
		})
	}
	for _, name := range broken.Names() {
		if !names[name] {
			t.Errorf("broken twin %q matches no check", name)
		}
	}
}

package conformance_test

import (
	"strings"
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/internal/broken"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory/memorykit"
	"github.com/kvblob/kvblob/stores/trailer"
)

// pairNeighbour is the memory store's Neighbour with every optional
// capability, so that each hostile check runs in the pairing: markers of
// the Redis form, a value no row is standing for one of the wrong type,
// and a tree that stands for nothing (the memory store keeps no folders),
// over which open opens a driver of the factory under test.
type pairNeighbour struct {
	memorykit.Neighbour
	open conformance.Factory
}

func (pairNeighbour) Marker() []byte { return []byte(trailer.NewMarker()) }

func (pairNeighbour) WriteWrongType(d driver.Driver, key string) error {
	memorykit.Memory(d).Store().SetObject(key, []byte("a list"))
	return nil
}

func (n pairNeighbour) OverTree(t conformance.T, _, _ int) (func() (driver.Driver, error), error) {
	return func() (driver.Driver, error) { return n.open(t), nil }, nil
}

// TestHostilePairing runs every hostile check against the sound memory
// driver, which must pass, and its broken twin, which must fail; a check
// with no twin, or a twin with no check, is a defect.
func TestHostilePairing(t *testing.T) {
	s := suite()
	names := map[string]bool{}
	for i, c := range conformance.HostileChecks(pairNeighbour{}) {
		names[c.Name] = true
		twin, ok := broken.HostileTwin(c.Name)
		t.Run(c.Name+"/sound", func(t *testing.T) {
			c := conformance.HostileChecks(pairNeighbour{open: sound})[i]
			o := conformance.RunRecorded(c, sound, s)
			if !o.Passed {
				t.Errorf("the sound driver did not pass: skipped=%v %s", o.Skipped, o.Reason)
			}
		})
		t.Run(c.Name+"/broken", func(t *testing.T) {
			if !ok {
				t.Fatalf("hostile check %q has no broken twin in internal/broken", c.Name)
			}
			f := func(t conformance.T) driver.Driver { return twin(sound(t)) }
			c := conformance.HostileChecks(pairNeighbour{open: f})[i]
			o := conformance.RunRecorded(c, f, forTwins(s))
			if o.Passed || o.Skipped {
				t.Errorf("the broken twin was not caught (passed=%v skipped=%v %s)", o.Passed, o.Skipped, o.Reason)
			} else {
				t.Logf("caught: %s", o.Reason)
			}
		})
	}
	for _, name := range broken.HostileNames() {
		if !names[name] {
			t.Errorf("broken twin %q matches no hostile check", name)
		}
	}
}

// TestHostileChecksSkipWithoutANeighbour: a suite with no Neighbour skips
// every hostile check that needs one, naming Suite.Neighbour, and runs
// the tenant check, which needs none.
func TestHostileChecksSkipWithoutANeighbour(t *testing.T) {
	for _, c := range conformance.HostileChecks(nil) {
		o := conformance.RunRecorded(c, sound, suite())
		if c.Name == conformance.HostileTenantName {
			if !o.Passed {
				t.Errorf("%s: did not pass without a neighbour: %s", c.Name, o.Reason)
			}
			continue
		}
		if !o.Skipped || !strings.Contains(o.Reason, "Suite.Neighbour is nil") {
			t.Errorf("%s: not skipped naming Suite.Neighbour without a neighbour (skipped=%v passed=%v %s)", c.Name, o.Skipped, o.Passed, o.Reason)
		}
	}
}

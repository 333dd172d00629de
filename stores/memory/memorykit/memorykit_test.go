package memorykit_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memorykit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestTheKitsSuitePasses: the suite memorykit builds, with every generated
// case its Stage stages and the integrity check over its keyed factory,
// passes over a memory driver: each case finds on the store what its
// answer needs. (Tried: Stage's Pending, NotFound and Corrupt cases as
// !=, its get's call taken as the put's, PlantCase dropped, and the keyed
// factory left without its row key each fail a check.)
func TestTheKitsSuitePasses(t *testing.T) {
	conformance.Run(t, memorykit.Suite("memorykit", memory.Options{Mode: memory.Background}))
}

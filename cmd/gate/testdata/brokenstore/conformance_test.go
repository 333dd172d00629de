package brokenstore_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/internal/broken"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memorykit"
)

// brokenCheck is the rule the "broken" store breaks.
const brokenCheck = "absent_keys_answer_as_AbsentIsMiss_says"

func TestConformance(t *testing.T) {
	conformance.Run(t, memorykit.Suite("memory", memory.Options{}))
	twin, ok := broken.Twin(brokenCheck)
	if !ok {
		t.Fatalf("internal/broken has no twin for %s", brokenCheck)
	}
	s := memorykit.Suite("broken", memory.Options{})
	s.SDK += " (AbsentIsMiss broken)"
	s.Factory = func(conformance.T) driver.Driver { return twin(memory.New(memory.Options{})) }
	conformance.Run(t, s)
}

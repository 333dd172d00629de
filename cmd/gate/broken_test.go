package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/broken"
	"github.com/kvblob/kvblob/conformance/gate"
	"github.com/kvblob/kvblob/generated/memoryspec/memorycases"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memtest"
)

// brokenCheck is the rule the "broken" store breaks: it answers FAULT
// where the memory store answers MISS.
const brokenCheck = "absent_keys_answer_as_AbsentIsMiss_says"

// The test binary alone registers "broken": the memory store behind the
// twin from conformance/broken that breaks brokenCheck, so the gate's
// reports can be seen to carry a real failure, and a generated case's
// failure with its spec position.
func init() {
	twin, ok := broken.Twin(brokenCheck)
	if !ok {
		panic("conformance/broken has no twin for " + brokenCheck)
	}
	gate.Register(gate.Store{
		Name: "broken", SDK: "kvblob-memory 1 (AbsentIsMiss broken)",
		Factory: func(t conformance.T) driver.Driver {
			return twin(memory.New(memory.Options{}))
		},
		Scenarios: memtest.Scenarios(), Cases: memorycases.All(), Stage: memtest.Stage,
	})
}

// TestScenariosMadeBySetupAndSkipReasons: a store whose scenarios exist
// only once Setup ran gets them from ScenariosAfterSetup, called after
// Setup; a scenario it leaves out is skipped with the store's own reason.
func TestScenariosMadeBySetupAndSkipReasons(t *testing.T) {
	setUp := false
	s := gate.Store{
		Name: "late", SDK: "kvblob-memory 1 (scenarios after set-up)",
		Factory: func(conformance.T) driver.Driver { return memory.New(memory.Options{}) },
		Cases:   memorycases.All(), Stage: memtest.Stage,
		Setup: func() (string, func(), error) { setUp = true; return "", nil, nil },
		ScenariosAfterSetup: func() conformance.Scenarios {
			if !setUp {
				t.Error("ScenariosAfterSetup was called before Setup")
			}
			sc := memtest.Scenarios()
			sc.HoldAccess = nil
			return sc
		},
		SkipReasons: map[conformance.Scenario]string{conformance.HoldAccess: "the late store holds no access here"},
	}
	row := runGateStore(s, nil, io.Discard, false)
	status := map[string]checkResult{}
	for _, c := range row.Checks {
		status[c.Name] = c
	}
	full := status["a_full_store_declines"]
	assert.Equal(t, statusPassed, full.Status, "a check needing the Full scenario Setup made: %s", full.Message)
	held := status["results_and_access_end_are_independent"]
	assert.Equal(t, statusSkipped, held.Status)
	assert.Contains(t, held.Message, "HoldAccess scenario here: the late store holds no access here")
}

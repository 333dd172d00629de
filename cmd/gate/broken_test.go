package main

import (
	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/broken"
	"github.com/kvblob/kvblob/conformance/gate"
	memgen "github.com/kvblob/kvblob/generated/memory"
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
		Scenarios: memtest.Scenarios(), Cases: memgen.Cases, Stage: memtest.Stage,
	})
}

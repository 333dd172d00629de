package memtest

import (
	"github.com/kvblob/kvblob/conformance/gate"
	"github.com/kvblob/kvblob/generated/memoryspec"
	"github.com/kvblob/kvblob/generated/memoryspec/memorycases"
	"github.com/kvblob/kvblob/stores/memory"
)

// The memory store joins the gate in its background mode, where results
// and access end arrive after Put and Get return.
func init() {
	gate.Register(gate.Store{
		Name: "memory", SDK: memoryspec.SDKName + " " + memoryspec.SDKVersions()[0],
		Factory: Factory(memory.Options{Mode: memory.Background}), Scenarios: Scenarios(),
		Cases: memorycases.All(), Stage: Stage,
	})
}

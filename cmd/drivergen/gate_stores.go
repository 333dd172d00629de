package main

import (
	memgen "github.com/kvblob/kvblob/generated/memory"
	mcgen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memtest"
	"github.com/kvblob/kvblob/stores/mooncake/mctest"
)

func init() {
	gateStores = append(gateStores,
		gateStore{
			name: "memory", sdk: memgen.SDKName + " " + memgen.SDKVersions[0],
			factory: memtest.Factory(memory.Options{Mode: memory.Background}), scenarios: memtest.Scenarios(),
			cases: memgen.Cases, stage: memtest.Stage,
		},
		gateStore{
			name: "mooncake", sdk: mcgen.SDKName + " " + mctest.Version + " (fake)",
			factory: mctest.Factory(nil), scenarios: mctest.Scenarios(),
			cases: mcgen.Cases, stage: mctest.Stage,
		},
	)
}

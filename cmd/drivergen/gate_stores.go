package main

import (
	"github.com/kvblob/kvblob/conformance"
	memgen "github.com/kvblob/kvblob/generated/memory"
	mcgen "github.com/kvblob/kvblob/generated/mooncake"
	redisgen "github.com/kvblob/kvblob/generated/redis"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memtest"
	"github.com/kvblob/kvblob/stores/mooncake/mctest"
	"github.com/kvblob/kvblob/stores/redis/redistest"
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

func init() {
	var server *redistest.Server
	gateStores = append(gateStores, gateStore{
		name: "redis", sdk: redisgen.SDKName + " " + redisgen.SDKVersions[0] + ".x (loopback)",
		scenarios: redistest.Scenarios(), cases: redisgen.Cases, stage: redistest.Stage,
		factory: func(t conformance.T) driver.Driver {
			return redistest.Factory(redistest.Deployment{Addrs: []string{server.Addr}})(t)
		},
		setup: func() (string, func(), error) {
			if ok, why := redistest.Available(); !ok {
				return why, nil, nil
			}
			s, err := redistest.Start()
			if err != nil {
				return "", nil, err
			}
			server = s
			return "", s.Stop, nil
		},
	})
}

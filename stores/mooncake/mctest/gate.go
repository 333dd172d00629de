package mctest

import (
	"github.com/kvblob/kvblob/conformance/gate"
	"github.com/kvblob/kvblob/generated/mooncakespec"
	"github.com/kvblob/kvblob/generated/mooncakespec/mooncakecases"
)

// Mooncake joins the gate over the fake SDK; a build with the real SDK
// registers its own store.
func init() {
	gate.Register(gate.Store{
		Name: "mooncake", SDK: mooncakespec.SDKName + " " + Version + " (fake)",
		Factory: Factory(nil), Scenarios: Scenarios(),
		Cases: mooncakecases.All(), Stage: Stage, KnownFailures: KnownFailures(),
		CodeEnum: "ErrorCode",
	})
}

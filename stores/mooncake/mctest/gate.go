package mctest

import (
	"github.com/kvblob/kvblob/conformance/gate"
	gen "github.com/kvblob/kvblob/generated/mooncake"
)

// Mooncake joins the gate over the fake SDK; a build with the real SDK
// registers its own store.
func init() {
	gate.Register(gate.Store{
		Name: "mooncake", SDK: gen.SDKName + " " + Version + " (fake)",
		Factory: Factory(nil), Scenarios: Scenarios(),
		Cases: gen.Cases, Stage: Stage, KnownFailures: KnownFailures(),
		CodeEnum: "ErrorCode",
	})
}

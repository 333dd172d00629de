//go:build mooncake

package realkit

import (
	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/gate"
	"github.com/kvblob/kvblob/conformance/speccase"
	"github.com/kvblob/kvblob/generated/mooncakespec"
	"github.com/kvblob/kvblob/generated/mooncakespec/mooncakecases"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/mooncake/cgosdk"
	"github.com/kvblob/kvblob/stores/mooncake/mctest"
)

// Mooncake joins the gate over the real SDK: 'gate --sdk real', in a gate
// built with -tags mooncake, runs it in place of the fake SDK's store. Its
// set-up starts a mooncake_master on loopback; it runs only the cases a
// real pool stages.
func init() {
	var pool *Pool
	gate.Register(gate.Store{
		Name: "mooncake", Real: true, SDK: mooncakespec.SDKName + " " + cgosdk.SDKVersion + " (real SDK, loopback master)",
		Setup: func() (string, func(), error) {
			p, err := Start()
			if err != nil {
				return "", nil, err
			}
			pool = p
			return "", func() { _ = p.Close() }, nil
		},
		Factory:             func(t conformance.T) driver.Driver { return pool.Factory()(t) },
		ScenariosAfterSetup: func() conformance.Scenarios { return pool.Scenarios() },
		SkipReasons:         SkipReasons,
		Cases:               mooncakecases.All(),
		StageableOnly:       true,
		Deadline:            Deadline,
		Stage: func(h *conformance.Harness, c speccase.Case, key string) error {
			return pool.Stage(h, c, key)
		},
		KnownFailures: mctest.KnownFailures(),
		CodeEnum:      "ErrorCode",
	})
}

//go:build mooncake

package cgosdk_test

import (
	"os"
	"slices"
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/generated/mooncake/mooncakecases"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/cgosdk"
	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit"
	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit/realkit"
)

// TestConformance runs the conformance suite against a real
// mooncake_master it starts on loopback, through real clients
// (P2PHANDSHAKE metadata, tcp): every scenario a real pool stages and every
// case the spec marks stageable, staged by real means (realkit). It runs
// only with MOONCAKE_REAL=1 (see doc.go for the build); 'gate --sdk real'
// runs it as the mooncake row of its table.
//
// Every driver a check opens must be closed by the check's cleanup; one
// that is not fails the check, naming it (realkit.Pool.Factory). The
// driver's known failures are the same over the real SDK; each still runs
// and must still fail (reported as a skip).
func TestConformance(t *testing.T) {
	var pool *realkit.Pool
	// The version whose spec holds for the build (generated/mooncake/
	// mooncakecases): its name is the row's, its cases run, and a build
	// its spec was not verified on runs and is reported unverified.
	v, err := versionOf(cgosdk.SDKVersion)
	if err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, conformance.Suite{
		Name: v.Name, SDK: mooncakekit.Describe(v.Spec.Spec, cgosdk.SDKVersion, "real SDK, loopback master"), CodeEnum: "ErrorCode",
		Setup: func(t conformance.T) (string, error) {
			if os.Getenv("MOONCAKE_REAL") != "1" {
				return "set MOONCAKE_REAL=1 to run against a real mooncake_master", nil
			}
			t.Logf("client SDK: %q (RPC %s)", cgosdk.SDKVersion, cgosdk.RPCVersion)
			p, err := realkit.Start()
			if err != nil {
				return "", err
			}
			pool = p
			t.Cleanup(func() {
				t.Logf("drivers opened %d, closed by their checks %d", p.Opened.Load(), p.Closed.Load())
				if err := p.Close(); err != nil {
					t.Errorf("closing the pool: %v", err)
				}
			})
			t.Logf("mooncake_master pid %d on %s", p.PID(), p.Addr())
			// Logged, not enforced: a client's handshake socket and its TCP
			// transport acceptor bind the wildcard address whatever the
			// config says (Mooncake main at 3b5a594:
			// transfer_metadata_plugin.cpp, findAvailableTcpPort,
			// INADDR_ANY; tcp_transport_session_impl.h, the acceptor on
			// tcp::v6()/v4()); no flag or environment variable changes it.
			addrs, err := storekit.ListeningOf(os.Getpid())
			t.Logf("this test's clients listen on %v (%v)", addrs, err)
			return "", nil
		},
		Factory:             func(t conformance.T) driver.Driver { return pool.Factory()(t) },
		ScenariosAfterSetup: func() conformance.Scenarios { return pool.Scenarios() },
		SkipReasons:         realkit.SkipReasons,
		Cases:               v.Cases,
		StageableOnly:       true,
		Stage: func(h *conformance.Harness, c conformance.Case, key string) error {
			return pool.Stage(h, c, key)
		},
		Deadline:      realkit.Deadline,
		KnownFailures: mooncakekit.KnownFailures(false),
	})
}

// versionOf returns the Mooncake version whose spec holds for build.
func versionOf(build string) (mooncakecases.Version, error) {
	all := mooncakecases.All()
	spec, err := mooncakegen.Pick(mooncake.SDKName, build)
	if err != nil {
		return mooncakecases.Version{}, err
	}
	return all[slices.IndexFunc(all, func(v mooncakecases.Version) bool { return v.Spec == spec })], nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

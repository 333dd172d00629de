//go:build mooncake

package cgosdk_test

import (
	"os"
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	gen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/cgosdk"
	"github.com/kvblob/kvblob/stores/mooncake/cgosdk/realkit"
	"github.com/kvblob/kvblob/stores/mooncake/mctest"
)

// TestRealPool runs the conformance suite against a real mooncake_master it
// starts on loopback, through real clients (P2PHANDSHAKE metadata, tcp):
// every scenario a real pool stages and every case the spec marks
// stageable, staged by real means (realkit). It runs only with
// MOONCAKE_REAL=1; see doc.go for the build.
//
// Every driver a check opens must be closed by the check's cleanup; one
// that is not fails the check, naming it (realkit.Pool.Factory).
func TestRealPool(t *testing.T) {
	if os.Getenv("MOONCAKE_REAL") != "1" {
		t.Skip("set MOONCAKE_REAL=1 to run against a real mooncake_master")
	}
	t.Logf("client SDK: %q (RPC %s)", cgosdk.SDKVersion, cgosdk.RPCVersion)
	pool, err := realkit.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pool.Close(); err != nil {
			t.Errorf("closing the pool: %v", err)
		}
	})
	t.Logf("mooncake_master pid %d on %s", pool.PID(), pool.Addr())
	// Logged, not enforced: a client's handshake socket and its TCP
	// transport acceptor bind the wildcard address whatever the config says
	// (Mooncake main at 3b5a594: transfer_metadata_plugin.cpp,
	// findAvailableTcpPort, INADDR_ANY; tcp_transport_session_impl.h, the
	// acceptor on tcp::v6()/v4()); no flag or environment variable changes it.
	addrs, err := storekit.ListeningOf(os.Getpid())
	t.Logf("this test's clients listen on %v (%v)", addrs, err)

	// The driver's known failures are the same over the real SDK; each still
	// runs and must still fail (reported as a skip).
	suite := conformance.Suite{Scenarios: pool.Scenarios(), SkipReasons: realkit.SkipReasons,
		Cases: gen.Cases, Stage: pool.Stage, StageableOnly: true, Deadline: realkit.Deadline, KnownFailures: mctest.KnownFailures()}
	t.Run("conformance", func(t *testing.T) { conformance.Run(t, pool.Factory(), suite) })
	t.Logf("drivers opened %d, closed by their checks %d", pool.Opened.Load(), pool.Closed.Load())
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

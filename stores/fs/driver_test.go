package fs_test

import (
	"os"
	"testing"

	"github.com/kvblob/kvblob/conformance/storekit"
)

// tree is the kit's directory for the package (a tmpfs mount when run as
// root), made before the tests and removed after them.
var tree = storekit.Own(nil, Setup, (*Env).Close)

// TestMain makes tree and checks no goroutine outlives the tests. Started
// as the killed writer's child, it runs that writer instead.
func TestMain(m *testing.M) {
	if os.Getenv(killedWriterEnv) != "" { // a child of TestATempFileOfAKilledWriterIsSwept
		os.Exit(killedWriter())
	}
	storekit.MainOwning(m, tree)
}

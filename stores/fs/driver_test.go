package fs_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/internal/fskit"
)

var env *fskit.Env

// TestMain makes the kit's directory (a tmpfs mount when run as root) for
// the package, and checks no goroutine outlives the tests. Started as the
// killed writer's child, it runs that writer instead.
func TestMain(m *testing.M) {
	if os.Getenv(killedWriterEnv) != "" { // a child of TestATempFileOfAKilledWriterIsSwept
		os.Exit(killedWriter())
	}
	storekit.Main(m, func() (func(), error) {
		var err error
		if env, err = fskit.Setup(); err != nil {
			return nil, err
		}
		return func() {
			if err := env.Close(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}, nil
	})
}

package s3_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/internal/s3kit"
)

// env is the package's versitygw; nil when it is not installed (skip names
// why, and CI, which installs it, fails instead).
var (
	env  *s3kit.Env
	skip string
)

// TestMain starts versitygw on loopback for the package, and checks no
// goroutine outlives the tests.
func TestMain(m *testing.M) {
	storekit.Main(m, func() (func(), error) {
		if ok, why := s3kit.Available(); !ok {
			skip = why
			return nil, nil
		}
		var err error
		if env, err = s3kit.Setup(); err != nil {
			return nil, err
		}
		return func() {
			if err := env.Close(); err != nil {
				fmt.Fprintln(os.Stderr, err)
			}
		}, nil
	})
}

// need skips t when versitygw is not installed, and fails it under CI.
func need(t testing.TB) {
	t.Helper()
	if env == nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(skip)
		}
		t.Skip(skip)
	}
}

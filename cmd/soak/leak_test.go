package main

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one of them leaves a goroutine
// running. Run again by TestMainPassesItsArguments with mainEnv set, the
// test binary is the command: main with the arguments it was given.
func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) != "" {
		main()
	}
	goleak.VerifyTestMain(m)
}

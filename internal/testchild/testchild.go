// Package testchild runs a test binary again as a child process, as a
// test does that must watch a run end (exit, crash or fail) from outside
// it, and keeps the child's coverage in the parent's.
//
// A test binary built with coverage writes what its run covered into the
// directory its -test.gocoverdir flag names, and go test merges every
// file there into the package's profile; a child started without the
// flag writes into a temporary directory of its own and removes it, so
// the lines only the child runs count as never run (and a mutation
// tester reading the profile would not test them at all). Command passes
// the parent's directory on.
package testchild

import (
	"flag"
	"os"
	"os/exec"
)

// Command is exec.Command of this test binary with args, and with this
// run's -test.gocoverdir when it has one.
func Command(args ...string) *exec.Cmd {
	if dir := CoverDir(); dir != "" {
		args = append(args, "-test.gocoverdir="+dir)
	}
	return exec.Command(os.Args[0], args...)
}

// CoverDir is the directory this test binary writes its coverage into,
// or "" when it was not built with coverage (or is not a test binary).
func CoverDir() string {
	if f := flag.Lookup("test.gocoverdir"); f != nil {
		return f.Value.String()
	}
	return ""
}

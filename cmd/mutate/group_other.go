//go:build !unix

package main

import "os/exec"

// inGroup does nothing where there are no process groups: a test binary
// whose go test is killed runs on to its own -timeout.
func inGroup(cmd *exec.Cmd) {}

//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// inGroup makes cmd the leader of its own process group and has its
// context's end kill the whole group: go test's test binary, its child,
// would otherwise run on, orphaned, to its own -timeout (CI's, for a
// package's unmutated run cut short at the budget's end).
func inGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

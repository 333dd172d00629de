//go:build unix

package main

import (
	"bytes"
	"context"
	"os/exec"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheEndOfAGroupsContextKillsItsChildrenToo: a command run inGroup
// whose context ends is killed with every process it started, as go
// test's test binary must be, not left orphaned to run on. The shell's
// child, a subshell, prints "slept" once its sleep ends: were it (or the
// shell) left alive, the output would hold it.
func TestTheEndOfAGroupsContextKillsItsChildrenToo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, "sh", "-c", "echo started; (sleep 3; echo slept) & wait")
	inGroup(cmd)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	first := make([]byte, len("started\n"))
	_, err = out.Read(first) // the shell runs
	require.NoError(t, err)
	cancel()
	var rest bytes.Buffer
	_, _ = rest.ReadFrom(out) // until every holder of the pipe is gone
	err = cmd.Wait()
	var ee *exec.ExitError
	if assert.ErrorAs(t, err, &ee) {
		ws := ee.Sys().(syscall.WaitStatus)
		assert.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "the shell was not killed: %v", ws)
	}
	assert.Empty(t, rest.String(), "the shell's child ran to its end")
}

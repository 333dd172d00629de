package driverkit

import (
	"context"
	"testing"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoTeardownUnderACallBegunMidDrain: a drain that waited until no call
// was in progress runs finish, and a call may begin while finish runs;
// the drain then must not tear the store client down under it. Staged
// deterministically: finish itself begins the call. The drain answers
// false without running teardown, the call proceeds, and once it ended
// the next drain tears down and ends the waiting call's access. (Tried:
// dropping the drain's "|| l.inProgress > 0" after finish tears the
// client down under the new call.)
func TestNoTeardownUnderACallBegunMidDrain(t *testing.T) {
	var l Lifecycle
	r := region("r")
	reg, err := l.Register(r, admitAll, nil)
	require.NoError(t, err)
	waiter, err := l.Begin(rowsIn(r), admitLive(rowsIn(r)))
	require.NoError(t, err)
	waiter.EndsAtTeardown() // its access ends only when the client goes

	var late *Call
	finish := func(context.Context) bool {
		if late == nil {
			late, err = l.Begin(rowsIn(r), admitLive(rowsIn(r)))
			require.NoError(t, err, "a call begun while the drain runs finish")
		}
		return true
	}
	torn := 0
	teardown := func() error { torn++; return nil }
	assert.False(t, l.DrainTearingDown(context.Background(), finish, teardown), "a call began during the drain")
	assert.Zero(t, torn, "the client was torn down under a call in progress")
	assert.False(t, l.TornDown())
	assert.Equal(t, driver.RuleAccessOpen, rule(l.Unregister(reg, nil)), "the region is still pinned")

	late.End()
	assert.True(t, l.DrainTearingDown(context.Background(), finish, teardown), "the call ended: the teardown ends the waiting call's access")
	assert.Equal(t, 1, torn)
	assert.True(t, l.TornDown())
	require.NoError(t, l.Unregister(reg, nil))
	require.NoError(t, l.Close(nil))
}

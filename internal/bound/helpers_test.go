package bound

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestRecvFailsNamingWhatItWaitedFor: Recv that gets nothing within its
// bound fails its test naming what it waited for (a helper that returned
// the zero value silently would let a test pass on a wait that never
// ended), and one that gets a value returns it without failing.
func TestRecvFailsNamingWhatItWaitedFor(t *testing.T) {
	never := make(chan int)
	ft := &fakeT{}
	t0 := time.Now()
	assert.Equal(t, 0, Recv(ft, 20*time.Millisecond, "row a's result", never))
	assert.Equal(t, "waited 20ms for row a's result", ft.failed)
	assert.Less(t, time.Since(t0), 5*time.Second)

	ready := make(chan int, 1)
	ready <- 7
	ft = &fakeT{}
	assert.Equal(t, 7, Recv(ft, time.Second, "seven", ready))
	assert.Empty(t, ft.failed)
}

// TestGoWaitsAgainUntilItReturns: Go's wait reports false while f runs and
// true once it returned, and may be called again to wait longer; Call
// reports a call still running as not returned.
func TestGoWaitsAgainUntilItReturns(t *testing.T) {
	release := make(chan struct{})
	wait := Go(func() { <-release })
	assert.False(t, wait(10*time.Millisecond), "f is blocked: not returned")
	assert.False(t, wait(10*time.Millisecond), "waiting again: still blocked")
	close(release)
	assert.True(t, wait(5*time.Second), "f returned once released")
	assert.True(t, wait(5*time.Second), "waiting again after it returned")

	block := make(chan struct{})
	assert.False(t, Call(10*time.Millisecond, func() { <-block }), "a call still running")
	close(block)
	assert.True(t, Call(5*time.Second, func() {}), "a call that returns")
}

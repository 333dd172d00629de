package bound

import (
	"fmt"
	"runtime"
	"strings"
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

// helperT records which functions marked themselves test helpers, and
// what failed.
type helperT struct {
	helpers []string
	failed  string
}

func (h *helperT) Helper() {
	pc, _, _, _ := runtime.Caller(1)
	name := runtime.FuncForPC(pc).Name()
	_, fn, _ := strings.Cut(name, "/internal/bound.")
	h.helpers = append(h.helpers, fn)
}

func (h *helperT) Fatalf(format string, args ...any) { h.failed = fmt.Sprintf(format, args...) }

// TestEachHelperMarksItselfAHelper: a failure of Within, Value or Recv
// is reported at the line of the test that waited, not in this package,
// because each marks itself a helper (Value and the Within it calls
// both). fakeT's Helper does nothing, so the other tests pass without
// these marks (tried: dropping each of the three functions' t.Helper()
// fails here).
func TestEachHelperMarksItselfAHelper(t *testing.T) {
	never := make(chan int)
	release := make(chan struct{})
	defer close(release)
	for _, c := range []struct {
		name string
		wait func(TB)
		want []string
	}{
		{"Within", func(t TB) { Within(t, time.Millisecond, "x", func() { <-release }) }, []string{"Within"}},
		{"Value", func(t TB) { Value(t, time.Millisecond, "x", func() int { <-release; return 0 }) }, []string{"Value[...]", "Within"}},
		{"Recv", func(t TB) { Recv(t, time.Millisecond, "x", never) }, []string{"Recv[...]"}},
	} {
		h := &helperT{}
		c.wait(h)
		assert.Equal(t, c.want, h.helpers, c.name)
		assert.NotEmpty(t, h.failed, "%s: the wait timed out", c.name)
	}
}

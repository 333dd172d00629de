// Package bound is how tests wait on code that a broken line can block
// forever (a lock never released, a loop that never ends): the call runs
// on a goroutine of its own and the test waits for it a bounded time, then
// fails naming what it waited for. A deadlock then fails its test in
// seconds, as an assertion, instead of reaching the test binary's
// -timeout, which names no rule and costs minutes.
package bound

import "time"

// Call runs f on a goroutine of its own and waits at most d for it to
// return. It reports whether f returned; when it did not, f goes on
// running, and the caller, a test, fails.
func Call(d time.Duration, f func()) bool { return Go(f)(d) }

// Go runs f on a goroutine of its own and returns wait, which waits at
// most d for f to return and reports whether it did; wait may be called
// again to wait longer.
func Go(f func()) (wait func(d time.Duration) bool) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	return func(d time.Duration) bool {
		select {
		case <-done:
			return true
		case <-time.After(d): // a timer no longer referenced is collected, fired or not
			return false
		}
	}
}

// TB is what Within needs of a test.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Within runs f and fails t, naming what ("Put of row a"), when f has not
// returned within d.
func Within(t TB, d time.Duration, what string, f func()) {
	t.Helper()
	if !Call(d, f) {
		t.Fatalf("%s did not return within %v: a lock never released, or a loop that never ends", what, d)
	}
}

// Value is Within for a function with a result.
func Value[V any](t TB, d time.Duration, what string, f func() V) V {
	t.Helper()
	var v V
	Within(t, d, what, func() { v = f() })
	return v
}

// Recv receives from ch and fails t, naming what it waited for, when
// nothing comes within d.
func Recv[V any](t TB, d time.Duration, what string, ch <-chan V) V {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("waited %v for %s", d, what)
		var zero V
		return zero
	}
}

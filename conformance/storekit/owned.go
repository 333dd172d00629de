package storekit

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/kvblob/kvblob/conformance"
)

// Owned is a server (or a deployment of several, or any set-up) that a
// test package owns: MainOwning starts it before the package's tests, or
// the first test that needs it does (Lazily), and stops it after them. A
// test takes it with Need, which skips the test, saying why, when the
// machine lacks what it needs, and fails it under CI=true, where every
// server must be installed (make deps). Its methods are safe for
// concurrent use.
type Owned[T any] struct {
	available func() (bool, string)
	start     func() (T, error)
	stop      func(T) error
	lazy      bool

	once    sync.Once
	mu      sync.Mutex
	v       T
	up      bool
	why     string // why it is not up: missing from the machine
	err     error  // its start failed
	stopped bool
}

// Own describes what a package owns: available says whether the machine
// has what start needs and, when not, what to install (Available; nil:
// it always has); start starts it; stop stops it (nil: nothing to stop),
// and an error it returns is printed after the tests' results.
func Own[T any](available func() (bool, string), start func() (T, error), stop func(T) error) *Owned[T] {
	return &Owned[T]{available: available, start: start, stop: stop}
}

// Lazily makes o start at the first Need instead of before the tests,
// for a deployment few tests use (a Cluster). It returns o.
func (o *Owned[T]) Lazily() *Owned[T] {
	o.lazy = true
	return o
}

// bringUp starts o once: a missing server records why, a failed start
// its error.
func (o *Owned[T]) bringUp() error {
	o.once.Do(func() {
		if o.available != nil {
			if ok, why := o.available(); !ok {
				o.mu.Lock()
				o.why = why
				o.mu.Unlock()
				return
			}
		}
		v, err := o.start()
		o.mu.Lock()
		defer o.mu.Unlock()
		if o.stopped { // the tests ended while it started
			if err == nil && o.stop != nil {
				_ = o.stop(v)
			}
			o.err = fmt.Errorf("storekit: started after the tests ended")
			return
		}
		o.v, o.up, o.err = v, err == nil, err
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.err
}

// Need returns what o started, starting it first when it is lazy. It
// skips t when the machine lacks what o needs (fails t under CI=true),
// and fails t when o could not start.
func (o *Owned[T]) Need(t testing.TB) T {
	t.Helper()
	if err := o.bringUp(); err != nil {
		t.Fatal(err)
	}
	NeedInstalled(t, func() (bool, string) { why := o.Why(); return why == "", why })
	return o.Value()
}

// NeedInstalled skips t when available says the machine lacks what t
// needs (a server, a build), as Need does, and fails t instead under
// CI=true, so CI never passes by skipping: for a test that starts what
// it needs itself rather than sharing an Owned one.
func NeedInstalled(t testing.TB, available func() (ok bool, why string)) {
	t.Helper()
	if ok, why := available(); !ok {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true, where every server is installed (make deps), but %s", why)
		}
		t.Skip(why)
	}
}

// Value returns what o started: the zero T when it is not up (missing,
// failed, or lazy and not yet needed).
func (o *Owned[T]) Value() T {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.v
}

// Why says why o is not up for lack of something on the machine, and
// what to install; "" when it is up or was not tried.
func (o *Owned[T]) Why() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.why
}

// Setup is a conformance.Suite's Setup over o: it starts o when lazy,
// and gives the reason to skip (Why), which the suite turns into a
// failure under CI=true.
func (o *Owned[T]) Setup(conformance.T) (string, error) {
	if err := o.bringUp(); err != nil {
		return "", err
	}
	return o.Why(), nil
}

// tearDown stops o if it is up.
func (o *Owned[T]) tearDown() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopped = true
	if o.up && o.stop != nil {
		if err := o.stop(o.v); err != nil {
			fmt.Fprintln(os.Stderr, "storekit: stopping what the tests owned:", err)
		}
	}
	o.up = false
}

// Owner is an *Owned of any type, for MainOwning.
type Owner interface {
	bringUp() error
	isLazy() bool
	tearDown()
}

func (o *Owned[T]) isLazy() bool { return o.lazy }

// MainOwning is the TestMain of a package that owns servers: it starts
// each owned that is not lazy, in order (one the machine lacks is no
// error: its tests skip, saying why), runs the tests, stops every one
// that started in the reverse order, and fails the run on a goroutine
// the tests leaked (Main). A start that fails ends the run with exit
// code 1 before any test.
func MainOwning(m *testing.M, owned ...Owner) {
	Main(m, func() (func(), error) { return bringUpAll(owned) })
}

// bringUpAll starts every owned that is not lazy, in order, and returns
// what stops them all in the reverse order; on a failed start it stops
// those started and returns the error.
func bringUpAll(owned []Owner) (func(), error) {
	teardown := func() {
		for i := len(owned) - 1; i >= 0; i-- {
			owned[i].tearDown()
		}
	}
	for _, o := range owned {
		if o.isLazy() {
			continue
		}
		if err := o.bringUp(); err != nil {
			teardown()
			return nil, err
		}
	}
	return teardown, nil
}

package conformance

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// verdict is how one check went on a recorder.
type verdict struct {
	Check   string
	Passed  bool
	Skipped bool
	Reason  string // the skip reason or the failures, one per line
}

// recordCheck runs one check of s on a recorder instead of a *testing.T,
// with a fresh driver from f, and reports whether it passed, was skipped
// or failed, and why: how Run runs a known failure, which must fail
// without failing the suite, before it reports it (reportKnown).
func recordCheck(c Check, f Factory, s Suite) verdict {
	return record(c.Name, func(t T) { runCheck(t, c, f, s) })
}

// runRecorded is recordCheck with a known failure's report applied, as go
// test would show it: a check in s.KnownFailures that fails is reported
// as skipped, and one that passes as failed.
func runRecorded(c Check, f Factory, s Suite) verdict {
	v := recordCheck(c, f, s)
	if why, known := s.KnownFailures[c.Name]; known {
		v = record(c.Name, func(t T) { reportKnown(t, v, why) })
	}
	return v
}

func record(name string, run func(T)) verdict {
	r := &recorder{name: name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				r.Errorf("panic: %v", p)
			}
		}()
		run(r)
	}()
	<-done
	r.runCleanups()
	v := verdict{Check: name, Passed: !r.failed && !r.skipped, Skipped: r.skipped && !r.failed}
	v.Reason = strings.Join(r.msgs, "\n")
	return v
}

// recorder is a T that records failures; Fatal and Skip end the check's
// goroutine as testing does.
type recorder struct {
	name     string
	mu       sync.Mutex
	failed   bool
	skipped  bool
	msgs     []string
	logs     []string
	cleanups []func()
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }
func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}
func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}
func (r *recorder) Error(args ...any) { r.fail(fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.fail(fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any) {
	r.fail(fmt.Sprint(args...))
	runtime.Goexit()
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fail(fmt.Sprintf(format, args...))
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.mu.Lock()
	r.skipped = true
	r.msgs = append(r.msgs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
	runtime.Goexit()
}

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
	r.msgs = append(r.msgs, msg)
}

func (r *recorder) runCleanups() {
	r.mu.Lock()
	cs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}

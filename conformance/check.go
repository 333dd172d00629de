package conformance

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// Outcome is how one check went when run by Check.
type Outcome struct {
	Check   string
	Passed  bool
	Skipped bool
	Reason  string // the skip reason or the failures
}

// CheckAll runs checks (Checks, CaseChecks or both) outside go test and
// reports each outcome, with
// errors.Join of the failures (nil when none failed).
func CheckAll(f Factory, s Scenarios, checks []Check) ([]Outcome, error) {
	var outs []Outcome
	var errs []error
	for _, c := range checks {
		o := RunRecorded(c, f, s)
		outs = append(outs, o)
		if !o.Passed && !o.Skipped {
			errs = append(errs, fmt.Errorf("%s: %s", c.Name, o.Reason))
		}
	}
	return outs, errors.Join(errs...)
}

// RunRecorded runs one check on a recorder instead of a *testing.T, and
// reports whether it passed, was skipped or failed, and why.
func RunRecorded(c Check, f Factory, s Scenarios) Outcome {
	r := &recorder{name: c.Name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				r.Errorf("panic: %v", p)
			}
		}()
		RunCheck(r, c, f, s)
	}()
	<-done
	r.runCleanups()
	o := Outcome{Check: c.Name, Passed: !r.failed && !r.skipped, Skipped: r.skipped && !r.failed}
	o.Reason = strings.Join(r.msgs, "; ")
	return o
}

// recorder is a T that records failures; Fatal and Skip end the check's
// goroutine as testing does.
type recorder struct {
	name     string
	mu       sync.Mutex
	failed   bool
	skipped  bool
	msgs     []string
	cleanups []func()
}

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }
func (r *recorder) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Error(args ...any)   { r.fail(fmt.Sprint(args...)) }
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

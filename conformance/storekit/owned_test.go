package storekit

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a testing.TB whose Skip and Fatal are recorded, ending the
// goroutine as the real ones do.
type recorder struct {
	testing.TB
	skipped, failed string
	helpers         []string // the functions that marked themselves helpers
}

func (r *recorder) Helper() {
	pc, _, _, _ := runtime.Caller(1)
	r.helpers = append(r.helpers, runtime.FuncForPC(pc).Name())
}
func (r *recorder) Skip(args ...any)  { r.skipped = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any) { r.failed = fmt.Sprint(args...); runtime.Goexit() }
func (r *recorder) Fatalf(f string, args ...any) {
	r.failed = fmt.Sprintf(f, args...)
	runtime.Goexit()
}

// need runs o.Need on a recorder and returns what it got and the recorder.
func need[T any](t *testing.T, o *Owned[T]) (T, *recorder) {
	r := &recorder{TB: t}
	var v T
	done := make(chan struct{})
	go func() { defer close(done); v = o.Need(r) }()
	<-done
	return v, r
}

// owning is what a test package owns, each logging its start and stop.
func owning(log *[]string, name string, missing string, fail error) *Owned[string] {
	return Own(func() (bool, string) { return missing == "", missing },
		func() (string, error) { *log = append(*log, "start "+name); return name, fail },
		func(v string) error { *log = append(*log, "stop "+v); return nil })
}

func TestOwnedStartsBeforeTheTestsAndStopsAfterInReverse(t *testing.T) {
	var log []string
	a, b := owning(&log, "a", "", nil), owning(&log, "b", "", nil)
	lazy := owning(&log, "lazy", "", nil).Lazily()
	unused := owning(&log, "unused", "", nil).Lazily()
	teardown, err := bringUpAll([]Owner{a, lazy, unused, b})
	require.NoError(t, err)
	assert.Equal(t, []string{"start a", "start b"}, log, "a lazy one waits for a test that needs it")
	v, r := need(t, lazy)
	assert.Equal(t, "lazy", v)
	v, r2 := need(t, lazy)
	assert.Equal(t, "lazy", v)
	assert.Empty(t, r.failed+r.skipped+r2.failed+r2.skipped)
	assert.Equal(t, "a", a.Value())
	teardown()
	assert.Equal(t, []string{"start a", "start b", "start lazy", "stop b", "stop lazy", "stop a"}, log,
		"started once each, stopped in reverse, the unused lazy one never started")
}

func TestOwnedThatTheMachineLacksSkipsItsTests(t *testing.T) {
	var log []string
	o := owning(&log, "x", "x-server is not installed (apt-get install x-server)", nil)
	teardown, err := bringUpAll([]Owner{o})
	require.NoError(t, err, "a missing server is no error")
	t.Setenv("CI", "")
	_, r := need(t, o)
	assert.Equal(t, "x-server is not installed (apt-get install x-server)", r.skipped)
	t.Setenv("CI", "true")
	_, r = need(t, o)
	assert.Empty(t, r.skipped)
	assert.Equal(t, "CI=true, where every server is installed (make deps), but x-server is not installed (apt-get install x-server)", r.failed)
	why, err := o.Setup(nil)
	assert.NoError(t, err)
	assert.Equal(t, o.Why(), why, "a suite's Setup skips with the reason")
	teardown()
	assert.Empty(t, log, "nothing started, nothing stopped")
}

func TestOwnedThatFailsToStartEndsTheRun(t *testing.T) {
	var log []string
	boom := errors.New("x-server exited before it answered")
	a, b, c := owning(&log, "a", "", nil), owning(&log, "b", "", boom), owning(&log, "c", "", nil)
	_, err := bringUpAll([]Owner{a, b, c})
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, []string{"start a", "start b", "stop a"}, log, "what started is stopped; nothing after the failure starts")

	lazy := owning(&log, "lazy", "", boom).Lazily()
	_, r := need(t, lazy)
	assert.Equal(t, boom.Error(), r.failed, "a lazy start that fails fails the test that needed it")
}

// TestNeedMarksItselfAHelper: a test that Need skips or fails is reported
// at the test's line, not in storekit, because Need, and NeedInstalled
// under it, mark themselves helpers (tried: dropping Need's t.Helper()
// fails here; the recorder's Helper did nothing before).
func TestNeedMarksItselfAHelper(t *testing.T) {
	t.Setenv("CI", "")
	var log []string
	_, r := need(t, owning(&log, "a", "not installed", nil))
	assert.Equal(t, "not installed", r.skipped)
	require.Len(t, r.helpers, 2)
	assert.Contains(t, r.helpers[0], "storekit.(*Owned[...]).Need")
	assert.Contains(t, r.helpers[1], "storekit.NeedInstalled")
}

// TestNeedInstalledSkipsOrFailsWhatTheMachineLacks: NeedInstalled lets a
// test run when what it needs is installed, skips it with the reason when
// not, and fails it instead under CI=true; it reports at the test's line
// (it marks itself a helper).
func TestNeedInstalledSkipsOrFailsWhatTheMachineLacks(t *testing.T) {
	run := func(ci string, ok bool) *recorder {
		t.Setenv("CI", ci)
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			NeedInstalled(r, func() (bool, string) { return ok, "x-server is not installed" })
		}()
		<-done
		return r
	}
	r := run("true", true)
	assert.Empty(t, r.skipped+r.failed, "installed: the test runs")
	r = run("", false)
	assert.Equal(t, "x-server is not installed", r.skipped)
	assert.Empty(t, r.failed)
	require.Len(t, r.helpers, 1)
	assert.Contains(t, r.helpers[0], "storekit.NeedInstalled")
	r = run("true", false)
	assert.Empty(t, r.skipped)
	assert.Equal(t, "CI=true, where every server is installed (make deps), but x-server is not installed", r.failed)
}

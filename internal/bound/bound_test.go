package bound

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// fakeT records a Fatalf instead of ending the test.
type fakeT struct{ failed string }

func (f *fakeT) Helper() {}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = fmt.Sprintf(format, args...)
}

// TestADeadlockFailsNamingWhatWasAwaited: a call blocked on a lock that is
// never released fails its test within the bound, naming the call; one
// that returns does not. (Breaking Call to wait on done alone makes the
// blocked case hang.)
func TestADeadlockFailsNamingWhatWasAwaited(t *testing.T) {
	var mu sync.Mutex
	mu.Lock()
	release := make(chan struct{})
	defer func() { close(release); mu.Unlock() }()
	for _, c := range []struct {
		name    string
		f       func()
		failure string
	}{
		{"returns", func() {}, ""},
		{"blocked", func() { <-release }, "Put of row a did not return within 50ms: a lock never released, or a loop that never ends"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ft := &fakeT{}
			t0 := time.Now()
			Within(ft, 50*time.Millisecond, "Put of row a", c.f)
			assert.Equal(t, c.failure, ft.failed)
			assert.Less(t, time.Since(t0), 5*time.Second)
		})
	}
	ft := &fakeT{}
	assert.Equal(t, 7, Value(ft, time.Second, "seven", func() int { return 7 }))
	assert.Empty(t, ft.failed)
}

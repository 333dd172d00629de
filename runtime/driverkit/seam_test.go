package driverkit

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/bound"
)

func TestANilSeamChangesNothing(t *testing.T) {
	var s *Seam
	p := s.Enter("get", "a")
	assert.Nil(t, p)
	assert.NoError(t, p.Err())
	_, ok := p.Answer(0)
	assert.False(t, ok)
	assert.Zero(t, s.Armed())
}

func TestSeamFaultsApplyOnceToTheirCallAndKey(t *testing.T) {
	var s Seam
	// Each call bounded: a lock the seam never releases fails the test
	// in seconds (tried: dropping s.mu.Unlock() in Enter).
	enter := func(call string, keys ...string) *Pass {
		return bound.Value(t, 10*time.Second, "Seam.Enter", func() *Pass { return s.Enter(call, keys...) })
	}
	armed := func() int { return bound.Value(t, 10*time.Second, "Seam.Armed", s.Armed) }
	s.Answer("get", "b", -704)
	s.Raise("put", "a", nil)
	boom := errors.New("connection reset")
	s.Raise("put", "a", boom)
	assert.Equal(t, 3, armed())

	assert.Nil(t, enter("get", "a", "c"), "no fault for these keys")
	assert.Nil(t, enter("exists", "b"), "a fault belongs to its call's name")
	p := enter("get", "a", "b")
	code, ok := p.Answer(1)
	assert.True(t, ok)
	assert.EqualValues(t, -704, code)
	_, ok = p.Answer(0)
	assert.False(t, ok, "only the armed key is answered")
	assert.NoError(t, p.Err())
	assert.Nil(t, enter("get", "b"), "a fault applies once")

	assert.ErrorIs(t, enter("put", "a").Err(), ErrStaged)
	assert.ErrorIs(t, enter("put", "a").Err(), boom, "faults of one call and key apply in order")
	assert.Zero(t, armed())
}

func TestSeamHoldsACallUntilReleased(t *testing.T) {
	var s Seam
	entered, release := s.Hold("get", "k")
	done := make(chan *Pass)
	go func() { done <- s.Enter("get", "k") }()
	bound.Recv(t, 10*time.Second, "the held call to enter", entered)
	select {
	case <-done:
		t.Fatal("a held call went on before release")
	default:
	}
	release()
	release() // twice is harmless
	require.NotNil(t, bound.Recv(t, 10*time.Second, "the released call to return", done))
}

// code stands for a store's generated Code type.
type code int64

const (
	codeErr     code = -1
	codeTimeout code = -2
)

var errTimeout = errors.New("i/o timeout")

func classifyForTest(err error) code {
	if errors.Is(err, errTimeout) {
		return codeTimeout
	}
	return codeErr
}

func TestStageAnswersForTheStoreOnlyWhatATestStaged(t *testing.T) {
	cases := []struct {
		name       string
		arm        func(*Seam)
		wantStaged bool
		wantCode   code
		wantErr    string
	}{
		{name: "nothing armed: the store is called", arm: func(*Seam) {}},
		{name: "a raise is classified like the store's own errors", arm: func(s *Seam) { s.Raise("get", "k", errTimeout) },
			wantStaged: true, wantCode: codeTimeout, wantErr: "i/o timeout"},
		{name: "a negative code is answered, with an error that says it was staged", arm: func(s *Seam) { s.Answer("get", "k", -704) },
			wantStaged: true, wantCode: -704, wantErr: "get: staged through the seam"},
		{name: "a size would promise bytes nobody moved", arm: func(s *Seam) { s.Answer("get", "k", 4096) },
			wantStaged: true, wantCode: codeErr, wantErr: "only negative codes can be staged"},
		{name: "OK likewise", arm: func(s *Seam) { s.Answer("get", "k", 0) },
			wantStaged: true, wantCode: codeErr, wantErr: "only negative codes can be staged"},
		{name: "another key's fault is not this call's", arm: func(s *Seam) { s.Raise("get", "other", nil) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s Seam
			c.arm(&s)
			got, staged, err := Stage(&s, "get", "k", classifyForTest)
			assert.Equal(t, c.wantStaged, staged)
			assert.Equal(t, c.wantCode, got)
			if c.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, c.wantErr)
			}
		})
	}
	_, staged, err := Stage[code](nil, "get", "k", classifyForTest)
	assert.False(t, staged, "a nil Seam (production) stages nothing")
	assert.NoError(t, err)
}

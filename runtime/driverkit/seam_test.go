package driverkit

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	s.Answer("get", "b", -704)
	s.Raise("put", "a", nil)
	boom := errors.New("connection reset")
	s.Raise("put", "a", boom)
	assert.Equal(t, 3, s.Armed())

	assert.Nil(t, s.Enter("get", "a", "c"), "no fault for these keys")
	assert.Nil(t, s.Enter("exists", "b"), "a fault belongs to its call's name")
	p := s.Enter("get", "a", "b")
	code, ok := p.Answer(1)
	assert.True(t, ok)
	assert.EqualValues(t, -704, code)
	_, ok = p.Answer(0)
	assert.False(t, ok, "only the armed key is answered")
	assert.NoError(t, p.Err())
	assert.Nil(t, s.Enter("get", "b"), "a fault applies once")

	assert.ErrorIs(t, s.Enter("put", "a").Err(), ErrStaged)
	assert.ErrorIs(t, s.Enter("put", "a").Err(), boom, "faults of one call and key apply in order")
	assert.Zero(t, s.Armed())
}

func TestSeamHoldsACallUntilReleased(t *testing.T) {
	var s Seam
	entered, release := s.Hold("get", "k")
	done := make(chan *Pass)
	go func() { done <- s.Enter("get", "k") }()
	<-entered
	select {
	case <-done:
		t.Fatal("a held call went on before release")
	default:
	}
	release()
	release() // twice is harmless
	require.NotNil(t, <-done)
}

package driver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRegistry(t *testing.T) {
	var y Registry
	r := &Region{Name: "r"}
	g := y.Add(r, 42)
	assert.True(t, y.Live(r))
	assert.Equal(t, r, g.Region())
	got, err := y.Lookup(g)
	require.NoError(t, err)
	assert.Equal(t, 42, got.Data)
	y.Remove(got)
	assert.False(t, y.Live(r))
	_, err = y.Lookup(g)
	assert.True(t, IsRejected(err), "a removed registration is unknown")
	assert.Zero(t, y.Len())
}

func TestCallsWaitForNoneInProgress(t *testing.T) {
	var c Calls
	assert.True(t, c.Wait(0))
	c.Enter()
	assert.False(t, c.Wait(time.Millisecond))
	done := make(chan bool)
	go func() { done <- c.Wait(time.Minute) }()
	c.Leave()
	assert.True(t, <-done)
	assert.Zero(t, c.InProgress())
}

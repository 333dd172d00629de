package redis

import (
	"bytes"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/bound"
)

// recordingConn records each write and the gets in flight when it was
// made.
type recordingConn struct {
	net.Conn
	gate *fetchGate
	mu   sync.Mutex
	got  bytes.Buffer
	cuts []int
	busy []int // the gate's gets in flight at each write
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.gate.mu.Lock()
	n := c.gate.inFlight
	c.gate.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got.Write(p)
	c.cuts, c.busy = append(c.cuts, len(p)), append(c.busy, n)
	return len(p), nil
}

// TestAPublishConnectionYieldsToGetsInFlight: a publish connection's
// write goes out in slices of at most yieldBytes, none of them while a
// get of the driver is in flight: the writer waits (the gate sees it
// wait) and writes only once the get left. A connection that wrote at
// once, or in one piece, fails here.
func TestAPublishConnectionYieldsToGetsInFlight(t *testing.T) {
	// The bound on a wait is not what this test is about: at 250 µs a
	// slow (-race, loaded) machine let the slice go before the test
	// ended its get, and the test failed by the clock.
	defer func(was time.Duration) { maxYield = was }(maxYield)
	maxYield = time.Hour
	gate := &fetchGate{}
	waiting := make(chan struct{}, 1)
	gate.waiting = func() { waiting <- struct{}{} }
	rec := &recordingConn{gate: gate}
	c := &yieldingConn{Conn: rec, gate: gate}
	p := bytes.Repeat([]byte("0123456789abcdef"), (3*yieldBytes+100)/16)

	bound.Within(t, 5*time.Second, "fetchGate.enter", gate.enter)
	done := make(chan error)
	go func() {
		n, err := c.Write(p)
		if err == nil && n != len(p) {
			err = assert.AnError
		}
		done <- err
	}()
	bound.Recv(t, 10*time.Second, "the write to wait for the get in flight (it never did, or the gate's lock was never released)", waiting)
	bound.Within(t, 5*time.Second, "fetchGate.leave", gate.leave)
	require.NoError(t, bound.Recv(t, 10*time.Second, "the write's end", done))

	assert.Equal(t, p, rec.got.Bytes(), "every byte written, in order")
	assert.Greater(t, len(rec.cuts), 1, "written in slices")
	for i, n := range rec.cuts {
		assert.LessOrEqual(t, n, yieldBytes, "slice %d", i)
		assert.Zero(t, rec.busy[i], "slice %d went out while a get was in flight", i)
	}

	// With no get in flight, a write goes out without waiting.
	gate.waiting = func() { t.Error("waited with no get in flight") }
	_, err := c.Write([]byte("x"))
	require.NoError(t, err)
}

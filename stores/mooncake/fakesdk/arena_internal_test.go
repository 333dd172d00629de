package fakesdk

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTheArenaGrowsOnlyWhenItIsNotReserved: where the reservation is
// refused (a host that will not map it), the segment is a heap slice
// that grows to hold each span asked for, keeping the bytes already in
// it; a reserved arena never moves, so a span past its end is a fault of
// the fake's own accounting and panics, naming the sizes, instead of
// growing (and so moving) memory a transfer may be copying without the
// lock.
func TestTheArenaGrowsOnlyWhenItIsNotReserved(t *testing.T) {
	m := NewMaster(0)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.arena, m.fixed = nil, false // as where reserve failed
	copy(m.bytesLocked(span{off: 0, size: 4}), "abcd")
	b := m.bytesLocked(span{off: 2, size: 6})
	assert.Len(t, b, 6)
	assert.Equal(t, "cd", string(b[:2]), "growing keeps the bytes written")
	assert.Len(t, m.arena, 8)

	m.arena, m.fixed = make([]byte, 8), true
	assert.PanicsWithValue(t, "fakesdk: the segment's 8 reserved bytes are full (need 9)", func() { m.bytesLocked(span{off: 4, size: 5}) })
	assert.Len(t, m.arena, 8, "a reserved arena never grows")
}

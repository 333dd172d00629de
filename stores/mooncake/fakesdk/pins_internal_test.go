package fakesdk

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAPinnedSpanIsFreedAtItsLastUnpin: a span a transfer copies without
// the lock is not placed again until the transfer is done with it.
func TestAPinnedSpanIsFreedAtItsLastUnpin(t *testing.T) {
	m := NewMaster(0)
	m.mu.Lock()
	defer m.mu.Unlock()
	a, _ := m.allocLocked(100)
	m.pinLocked(a)
	m.pinLocked(a)
	m.freeLocked(a)
	b, _ := m.allocLocked(100)
	assert.NotEqual(t, a.off, b.off, "a pinned span is not placed again")
	m.unpinLocked(a)
	c, _ := m.allocLocked(100)
	assert.NotEqual(t, a.off, c.off, "nor while one pin is left")
	m.unpinLocked(a)
	d, _ := m.allocLocked(100)
	assert.Equal(t, a.off, d.off, "the last unpin frees it")
	assert.Empty(t, m.pins)
	assert.Empty(t, m.deferred)
}

// TestAnObjectAGetReadsIsReusedOnlyOnceRead: an object dropped while a get
// still reads it (a copy without the lock, a transfer a frozen owner
// holds) is not handed to a new object until the get is done with it.
func TestAnObjectAGetReadsIsReusedOnlyOnceRead(t *testing.T) {
	m := NewMaster(0)
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.newObjectLocked(span{0, 8})
	o.readers++
	m.dropObjectLocked(o)
	assert.NotSame(t, o, m.newObjectLocked(span{8, 8}), "not while a get reads it")
	m.unreadLocked(o)
	assert.Same(t, o, m.newObjectLocked(span{16, 8}), "its last reader spares it")
	assert.Equal(t, object{span: span{16, 8}, putAt: m.now}, *o, "as new")
}

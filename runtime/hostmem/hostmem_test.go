package hostmem

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/driver"
)

func TestAMappingIsOffHeapAndUnmapsOnClose(t *testing.T) {
	r, err := Map("r", driver.Layout{SlotBytes: 4096, Slots: 3})
	require.NoError(t, err)
	require.NoError(t, r.Validate())
	assert.Equal(t, driver.Host, r.Kind)
	assert.Len(t, r.Mem, 3*4096)
	assert.NotZero(t, r.Addr)
	r.Mem[len(r.Mem)-1] = 7 // writable
	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "a second close is a no-op")

	_, err = Map("bad", driver.Layout{})
	assert.Error(t, err)
	_, err = Alloc(0)
	assert.Error(t, err)
}

// The lender's tests run bounded (the lender's methods lock): a lock a
// method never releases fails them in seconds, where it hung them until
// the binary's -timeout (tried: dropping Return's defer l.mu.Unlock()).

func TestLenderKeepsRegionsWhileHeld(t *testing.T) {
	l, err := NewLender("pool", driver.Layout{SlotBytes: 64, Slots: 2})
	require.NoError(t, err)
	bound.Within(t, 10*time.Second, "the lender's calls", func() {
		h, err := l.Hold()
		require.NoError(t, err)
		assert.Len(t, h.Regions(), 1)
		assert.Error(t, l.Close(), "close must be refused while a hold is out")
		require.NoError(t, h.Release())
		assert.Error(t, h.Release(), "a hold is released once")
		assert.True(t, h.Released())
		require.NoError(t, l.Close())
		_, err = l.Hold()
		assert.Error(t, err, "a closed lender gives no holds")
	})
}

func TestLenderSlots(t *testing.T) {
	l, err := NewLender("pool", driver.Layout{SlotBytes: 64, Slots: 2})
	require.NoError(t, err)
	bound.Within(t, 10*time.Second, "the lender's calls", func() {
		defer l.Close() // inside the bound: it locks too
		a, ok := l.Acquire()
		require.True(t, ok)
		b, ok := l.Acquire()
		require.True(t, ok)
		assert.NotEqual(t, a.Offset, b.Offset)
		_, ok = l.Acquire()
		assert.False(t, ok, "two slots only")
		require.NoError(t, l.Return(a))
		assert.Error(t, l.Return(a), "returning a slot twice")
		c, ok := l.Acquire()
		require.True(t, ok, "a slot returned is free again")
		assert.Equal(t, a, c)
		require.NoError(t, l.Return(b))
		require.NoError(t, l.Return(c))
	})
}

func TestGuardedFindsWritesOutsideWindows(t *testing.T) {
	g, err := NewGuarded("g", driver.Layout{SlotBytes: 128, Slots: 2})
	require.NoError(t, err)
	defer g.Close()
	w := driver.Span{Region: g.Region, Offset: 16, Length: 32}
	g.Open(w)
	for i := range w.Bytes() {
		w.Bytes()[i] = 0 // inside the window: allowed
	}
	require.NoError(t, g.Check())

	cases := []struct {
		name string
		at   int // offset in the mapping
	}{
		{"just before the window", guardBytes + 15},
		{"just after the window", guardBytes + 48},
		{"in the other slot", guardBytes + 200},
		{"before the region", guardBytes - 1},
		{"after the region", guardBytes + 256},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := g.Mapping()
			old := m[c.at]
			m[c.at] ^= 0xff
			assert.Error(t, g.Check())
			m[c.at] = old
			assert.NoError(t, g.Check())
		})
	}
	g.Reset()
	w.Bytes()[0] ^= 0xff
	assert.Error(t, g.Check(), "after Reset the window is closed")
}

// TestALenderCountsEveryHold: with two holds out, releasing one still
// keeps the regions (Close is refused naming the one left), and only the
// last release lets Close free them. Every step is bounded, so a lock
// never released fails here in seconds. (Tried: Close refusing only
// while more than one hold is out fails here, where the one-hold test
// passes; dropping Release's h.l.mu.Unlock() fails on the bound.)
func TestALenderCountsEveryHold(t *testing.T) {
	l, err := NewLender("pool", driver.Layout{SlotBytes: 64, Slots: 2})
	require.NoError(t, err)
	bound.Within(t, 10*time.Second, "the lender's holds and close", func() {
		a, err := l.Hold()
		require.NoError(t, err)
		b, err := l.Hold()
		require.NoError(t, err)
		assert.Equal(t, 2, l.Holds())
		assert.False(t, a.Released())
		require.NoError(t, a.Release())
		assert.True(t, a.Released())
		assert.False(t, b.Released())
		assert.Equal(t, 1, l.Holds())
		assert.ErrorContains(t, l.Close(), "1 holds outstanding")
		require.NoError(t, b.Release())
		assert.Equal(t, 0, l.Holds())
		require.NoError(t, l.Close())
		require.NoError(t, l.Close(), "a second close frees nothing again")
	})
}

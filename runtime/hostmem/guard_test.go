package hostmem

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
)

// TestGuardedFindsAShiftedCopyOfItsCanaries: a run of k canaries copied k
// bytes along (a stray copy of guarded memory over its neighbour), for
// every k up to two pages of the canary's period, no longer matches the
// canaries there, so Check finds it.
func TestGuardedFindsAShiftedCopyOfItsCanaries(t *testing.T) {
	g, err := NewGuarded("g", driver.Layout{SlotBytes: 256, Slots: 2})
	require.NoError(t, err)
	defer g.Close()
	m := g.Mapping()
	for k := 1; k <= 512; k++ {
		g.Reset()
		copy(m[k:2*k], m[:k])
		if g.Check() == nil {
			t.Errorf("a run of %d canaries copied %d bytes along was not found", k, k)
		}
	}
	g.Reset()
	assert.NoError(t, g.Check(), "after Reset every canary is back")
}

// TestGuardedSaysWhereTheStrayWriteWas: Check's error names the offset of
// the changed byte from the region's start and whether it lies inside the
// region or in a guard before or after it.
func TestGuardedSaysWhereTheStrayWriteWas(t *testing.T) {
	g, err := NewGuarded("g", driver.Layout{SlotBytes: 128, Slots: 2})
	require.NoError(t, err)
	defer g.Close()
	for _, c := range []struct {
		off   int // from the region's start
		where string
	}{
		{-1, "outside region"},
		{0, "inside region"},
		{255, "inside region"},
		{256, "outside region"},
	} {
		t.Run(fmt.Sprint(c.off), func(t *testing.T) {
			g.Reset()
			g.Mapping()[guardBytes+c.off] ^= 0xff
			err := g.Check()
			require.Error(t, err)
			assert.Contains(t, err.Error(), fmt.Sprintf("byte at offset %d (%s)", c.off, c.where))
		})
	}
}

// TestMappingsRefuseAnInvalidLayout: Map and NewGuarded map nothing for a
// layout with no slot and return the layout's error.
func TestMappingsRefuseAnInvalidLayout(t *testing.T) {
	bad := driver.Layout{SlotBytes: 64, Slots: 0}
	m, err := Map("m", bad)
	assert.Nil(t, m)
	assert.ErrorContains(t, err, "slot count 0 must be positive")
	g, err := NewGuarded("g", bad)
	assert.Nil(t, g)
	assert.ErrorContains(t, err, "slot count 0 must be positive")
}

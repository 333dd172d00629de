package backend_test

import (
	"context"
	"errors"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
)

// TestBindRefusesRegionsWhoseMemoryOverlaps: two Region values over the
// same bytes (whole, in part, or one region given twice) are refused before
// the driver registers anything, with the hold released and both regions
// named; before, they bound, and two rows fetched into one slot both
// answered READY. Regions side by side in one mapping, and a device region
// at a host region's address, bind.
func TestBindRefusesRegionsWhoseMemoryOverlaps(t *testing.T) {
	mem, err := hostmem.Alloc(4 * 4096)
	require.NoError(t, err)
	t.Cleanup(func() { _ = hostmem.Free(mem) })
	host := func(name string, from, slots int) *driver.Region {
		b := mem[from*4096 : (from+slots)*4096]
		return &driver.Region{Name: name, Kind: driver.Host, Layout: driver.Layout{SlotBytes: 4096, Slots: slots}, Mem: b, Addr: uintptr(unsafe.Pointer(&b[0]))}
	}
	a := host("a", 0, 2)
	device := &driver.Region{Name: "device", Kind: driver.Device, Layout: driver.Layout{SlotBytes: 4096, Slots: 2}, Addr: a.Addr}
	for _, c := range []struct {
		name    string
		regions []*driver.Region
		overlap bool
	}{
		{"the same bytes", []*driver.Region{a, host("a-again", 0, 2)}, true},
		{"in part", []*driver.Region{host("c", 2, 2), a, host("b", 1, 2)}, true},
		{"one region twice", []*driver.Region{a, a}, true},
		{"side by side", []*driver.Region{a, host("b", 2, 2)}, false},
		{"a device region at a host address", []*driver.Region{a, device}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &regDriver{caps: driver.Capabilities{DeviceMemory: true}, registered: map[string]bool{}}
			h := &testHold{}
			b, err := backend.Bind(context.Background(), c.regions, d, h)
			if !c.overlap {
				require.NoError(t, err)
				assert.Len(t, b.Regions(), len(c.regions))
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, backend.ErrConstructionRejected), "%v", err)
			assert.ErrorContains(t, err, "share memory")
			assert.Empty(t, d.registered, "the driver registered a region")
			assert.Equal(t, 1, h.released, "the hold is released: nothing stays registered")
		})
	}
}

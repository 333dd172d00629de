package backend_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
)

// TestMisuseIsAnErrorNamingTheArgument: every misuse of Bind and New a
// caller can write is an error that names the argument, returned on the
// caller's goroutine, and leaves no goroutine of the backend's behind to
// panic later: a nil hold made Bind succeed and a later Shutdown panic on
// the progress goroutine (Release on a nil hold); a nil or typed-nil
// driver, a nil binding and a RegionBinding literal panicked in Bind or
// New; a host region shorter than its layout was registered, for a worker
// to slice past its end. Bind releases a hold it was given and refuses
// with ErrConstructionRejected; nothing reaches the driver. (Tried:
// dropping each check of bindArgs and New fails its row.)
func TestMisuseIsAnErrorNamingTheArgument(t *testing.T) {
	host := func(name string, mem int) *driver.Region {
		return &driver.Region{Name: name, Kind: driver.Host, Layout: driver.Layout{SlotBytes: 8, Slots: 2}, Mem: make([]byte, mem)}
	}
	var nilCtx context.Context
	for _, c := range []struct {
		name    string
		ctx     context.Context
		regions []*driver.Region
		nilDrv  bool
		typed   bool // a typed nil driver: (*regDriver)(nil)
		nilHold bool
		typedH  bool // a typed nil hold: (*testHold)(nil)
		want    string
	}{
		{name: "nil hold", nilHold: true, want: "Bind's hold is nil"},
		{name: "typed nil hold", nilHold: true, typedH: true, want: "Bind's hold is nil (*backend_test.testHold)"},
		{name: "nil driver", nilDrv: true, want: "Bind's driver is nil"},
		{name: "typed nil driver", nilDrv: true, typed: true, want: "Bind's driver is nil (*backend_test.regDriver)"},
		{name: "nil ctx", ctx: nilCtx, want: "Bind's ctx is nil"},
		{name: "nil region", regions: []*driver.Region{host("a", 16), nil}, want: "Bind's regions[1] is nil"},
		{name: "host memory shorter than its layout", regions: []*driver.Region{host("a", 16), host("short", 15)}, want: `Bind's regions[1] is no valid region: driver: region "short" has 15 bytes of host memory; its layout needs 16`},
		{name: "unknown memory kind", regions: []*driver.Region{{Name: "odd", Kind: 9, Layout: driver.Layout{SlotBytes: 8, Slots: 1}}}, want: `Bind's regions[0] is no valid region: region "odd": driver: memory kind 9 is unknown`},
		{name: "slots of no bytes", regions: []*driver.Region{{Name: "empty", Kind: driver.Host, Layout: driver.Layout{Slots: 1}}}, want: `Bind's regions[0] is no valid region: region "empty": driver: layout slot size 0 must be positive`},
	} {
		t.Run("Bind/"+c.name, func(t *testing.T) {
			ctx := c.ctx
			if c.name != "nil ctx" {
				ctx = t.Context()
			}
			regions := c.regions
			if regions == nil {
				regions = []*driver.Region{host("a", 16)}
			}
			d := &regDriver{registered: map[string]bool{}}
			var drv driver.Driver = d
			if c.nilDrv {
				drv = nil
				if c.typed {
					drv = (*regDriver)(nil)
				}
			}
			h := &testHold{}
			var hold backend.Hold = h
			if c.nilHold {
				hold = nil
				if c.typedH {
					hold = (*testHold)(nil)
				}
			}
			b, err := backend.Bind(ctx, regions, drv, hold)
			require.Error(t, err)
			assert.Nil(t, b)
			assert.ErrorContains(t, err, c.want)
			assert.ErrorIs(t, err, backend.ErrConstructionRejected)
			assert.Empty(t, d.registered, "a refused Bind called the driver")
			if !c.nilHold {
				assert.Equal(t, 1, h.released, "Bind refused and kept the hold")
			}
		})
	}

	bound := func(t *testing.T) *backend.RegionBinding {
		b, err := backend.Bind(t.Context(), []*driver.Region{host("a", 16)}, &regDriver{registered: map[string]bool{}}, &testHold{})
		require.NoError(t, err)
		return b
	}
	for _, c := range []struct {
		name    string
		binding func(t *testing.T) *backend.RegionBinding
		want    string
	}{
		{"nil binding", func(*testing.T) *backend.RegionBinding { return nil }, "New's binding is nil; build one with Bind"},
		{"a RegionBinding literal", func(*testing.T) *backend.RegionBinding { return &backend.RegionBinding{} }, "New's binding was not made by Bind"},
		{"a binding another backend owns", func(t *testing.T) *backend.RegionBinding {
			b := bound(t)
			first, err := backend.New(b, backend.Config{})
			require.NoError(t, err)
			t.Cleanup(func() {
				// t.Context has ended by the time a cleanup runs.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				require.NoError(t, first.Shutdown(ctx))
			})
			return b
		}, "New's binding belongs to another backend already"},
		{"a binding a Shutdown released", func(t *testing.T) *backend.RegionBinding {
			b := bound(t)
			first, err := backend.New(b, backend.Config{})
			require.NoError(t, err)
			require.NoError(t, first.Shutdown(t.Context()))
			require.True(t, b.HoldReleased())
			return b
		}, "New's binding has released its hold"},
	} {
		t.Run("New/"+c.name, func(t *testing.T) {
			be, err := backend.New(c.binding(t), backend.Config{})
			require.Error(t, err)
			assert.Nil(t, be)
			assert.ErrorContains(t, err, c.want)
		})
	}
}

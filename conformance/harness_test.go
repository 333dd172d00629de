package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kvblob/kvblob/runtime/driver"
)

// stuckDriver accepts registrations and never drains.
type stuckDriver struct{ drains bool }

type reg struct{ r *driver.Region }

func (g reg) Region() *driver.Region { return g.r }

func (d *stuckDriver) Capabilities() driver.Capabilities                           { return driver.Capabilities{} }
func (d *stuckDriver) Register(r *driver.Region) (driver.Registration, error)      { return reg{r}, nil }
func (d *stuckDriver) Unregister(driver.Registration) error                        { return nil }
func (d *stuckDriver) Put(context.Context, []driver.Row) (driver.Operation, error) { return nil, nil }
func (d *stuckDriver) Get(context.Context, []driver.Row, driver.Hint) (driver.Operation, error) {
	return nil, nil
}
func (d *stuckDriver) Drain(context.Context) bool { return d.drains }
func (d *stuckDriver) Close() error               { return nil }

// TestTheHarnessKeepsMemoryADriverMayTouch: when the driver does not
// drain, the harness leaves its region mapped; when it drains, the region
// is freed.
func TestTheHarnessKeepsMemoryADriverMayTouch(t *testing.T) {
	for _, drains := range []bool{false, true} {
		var h *Harness
		c := Check{Name: "capture", Run: func(x *Harness, _ Scenarios) { h = x }}
		old := Deadline
		Deadline = 10 * time.Millisecond
		o := RunRecorded(c, func(T) driver.Driver { return &stuckDriver{drains: drains} }, Scenarios{})
		Deadline = old
		assert.True(t, o.Passed, o.Reason)
		assert.Equal(t, !drains, h.Mem.Mapped(), "drains=%v", drains)
		if !drains {
			_ = h.Mem.Close() // this test knows no store is behind it
		}
	}
}

package backend_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
)

// deadlineDriver is a regDriver that records every Register it is asked
// for, in order, and at the Register of one region ends the caller's ctx
// from inside the call: while the call blocks (stuck until let go), or as
// it returns with the region registered (a registration that completes
// exactly at the caller's deadline). It is built to break Bind's rule if
// Bind does not keep it: it would register every region it is asked to.
type deadlineDriver struct {
	*regDriver
	at     string
	end    func()
	stuck  *stuck
	mu     sync.Mutex
	called []string
}

func (d *deadlineDriver) Register(r *driver.Region) (driver.Registration, error) {
	d.mu.Lock()
	d.called = append(d.called, r.Name)
	d.mu.Unlock()
	if r.Name == d.at {
		if d.stuck != nil {
			d.end()
			d.stuck.block()
		} else {
			defer d.end()
		}
	}
	return d.regDriver.Register(r)
}

// TestBindRegistersNothingOnceItsContextEnded: once the caller's ctx ended
// inside one region's Register, Bind's goroutine asks the driver to
// register no further region, whichever way that Register ends (stuck and
// let go later, or returning at the deadline); every region it registered
// is unregistered and the hold given back, whatever Bind answered; and
// when the ctx ended in the last region's Register, Bind either returns
// the binding with every region registered and the hold kept, or an
// error after which the regions are rolled back: never a binding missing
// a region, nor an error that leaves one registered. (Tried: dropping
// register's ctx check before each region fails the first two cases, the
// driver asked for host-b.)
func TestBindRegistersNothingOnceItsContextEnded(t *testing.T) {
	for _, c := range []struct {
		name  string
		at    string
		stuck bool
		want  []string // the Registers the driver is asked for
	}{
		{"stuck in the first region's Register", "host-a", true, []string{"host-a"}},
		{"the first region's Register returns at the deadline", "host-a", false, []string{"host-a"}},
		{"the last region's Register returns at the deadline", "host-b", false, []string{"host-a", "host-b"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for range 20 { // the last case's outcome is the scheduler's pick: try both
				rd := &regDriver{registered: map[string]bool{}}
				ctx, cancel := context.WithCancelCause(t.Context())
				stop := errors.New("the caller's deadline")
				d := &deadlineDriver{regDriver: rd, at: c.at, end: func() { cancel(stop) }}
				if c.stuck {
					s := newStuck()
					d.stuck = &s
				}
				h := &signalHold{released: make(chan struct{})}
				type answer struct {
					b   *backend.RegionBinding
					err error
				}
				a := bound.Value(t, 10*time.Second, "Bind", func() answer {
					b, err := backend.Bind(ctx, regions(), d, h)
					return answer{b, err}
				})
				if c.stuck {
					close(d.stuck.letGo)
				}
				if a.err == nil {
					require.Equal(t, "host-b", c.at, "Bind returned a binding though its ctx ended before every region was registered")
					assert.Equal(t, map[string]bool{"host-a": true, "host-b": true}, rd.registered)
					assert.False(t, a.b.HoldReleased())
				} else {
					assert.ErrorIs(t, a.err, stop, "the error wraps the ctx's cause")
					bound.Recv(t, 10*time.Second, "the hold given back once every region is unregistered", h.released)
					assert.Empty(t, rd.registered, "a region stays registered after Bind failed")
				}
				d.mu.Lock()
				assert.Equal(t, c.want, d.called, "the Registers the driver was asked for")
				d.mu.Unlock()
				cancel(nil)
				if t.Failed() {
					return
				}
			}
		})
	}
}

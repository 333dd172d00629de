package driverkit

import (
	"testing"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestACallPinsEveryRegionItsRowsLieIn: a call whose rows lie in several
// regions (rows in one region and another, a row whose spans lie in two,
// a region named by several spans) pins each of them, not only the first
// it meets: while the call may touch its memory, Unregister of every one
// is refused, and once its access ended every one unregisters. A region
// the call's rows do not lie in is not pinned. Each way a call's access
// stays open (in progress, returned with its access open, unprovable,
// ending at teardown) keeps every region pinned. (Tried, each failing
// every case: containsRegion's x == r as x != r, so a call pins only the
// first region it meets, which the package's other tests pass; the pin's
// l.pinned[r]++ dropped; Unregister refusing only a region pinned twice.)
func TestACallPinsEveryRegionItsRowsLieIn(t *testing.T) {
	for _, c := range []struct {
		name string
		hold func(*Call) // what the call did before Unregister is tried
		end  bool        // whether End then ends its access (else it never does)
	}{
		{"in progress", func(*Call) {}, true},
		{"returned, access open", (*Call).Done, true},
		{"unprovable", (*Call).Unprovable, false},
		{"ends at teardown", (*Call).EndsAtTeardown, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var l Lifecycle
			a, b, cc, other := region("a"), region("b"), region("c"), region("other")
			regs := map[*driver.Region]driver.Registration{}
			for _, r := range []*driver.Region{a, b, cc, other} {
				g, err := l.Register(r, admitAll, nil)
				require.NoError(t, err)
				regs[r] = g
			}
			rows := []driver.Row{
				{Key: "in-a", Spans: []driver.Span{a.Slot(0)}},
				{Key: "in-a-again", Spans: []driver.Span{a.Slot(1)}},
				{Key: "in-b-and-c", Spans: []driver.Span{b.Slot(0), cc.Slot(0)}},
				{Key: "in-c", Spans: []driver.Span{cc.Slot(1)}},
			}
			call, err := l.Begin(rows, admitLive(rows))
			require.NoError(t, err)
			c.hold(call)
			for _, r := range []*driver.Region{a, b, cc} {
				assert.Equal(t, driver.RuleAccessOpen, rule(l.Unregister(regs[r], nil)), "region %s: the call may still touch it", r.Name)
			}
			require.NoError(t, l.Unregister(regs[other], nil), "no row lies in region other")
			call.End()
			for _, r := range []*driver.Region{a, b, cc} {
				err := l.Unregister(regs[r], nil)
				if c.end {
					assert.NoError(t, err, "region %s: the call's access ended", r.Name)
				} else {
					assert.Equal(t, driver.RuleAccessOpen, rule(err), "region %s: the call never proved its access ended", r.Name)
				}
			}
		})
	}
}

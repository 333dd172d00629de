package soak

import (
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/runtime/driver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestShortSoak is the soak's short version in make test: a few hundred
// attempts over both stores with a fixed seed.
func TestShortSoak(t *testing.T) {
	rep := Run(Config{Seed: 1, Duration: 20 * time.Second, Attempts: 400})
	t.Log(rep.String())
	assert.Empty(t, rep.Violations)
	assert.GreaterOrEqual(t, rep.Attempts, 400)
	assert.Greater(t, rep.RowsChecked, 0, "some READY rows were checked")
	for _, kind := range []string{"random_code", "cancel", "shutdown", "delay"} {
		assert.Greater(t, rep.Faults[kind], 0, "no %s fault was injected", kind)
	}
}

// TestTheChecksBite feeds each invariant check a violation and asserts it
// is reported, so a quiet soak means something.
func TestTheChecksBite(t *testing.T) {
	region := &driver.Region{Name: "r", Kind: driver.Host, Layout: driver.Layout{SlotBytes: slotBytes, Slots: 1}, Mem: make([]byte, slotBytes)}
	tl := &tally{faults: map[string]int{}}
	c := &checker{Driver: acceptAll{}, t: tl}
	c.ops, c.rs = append(c.ops, openOp{}), append(c.rs, []*driver.Region{region})

	_ = c.Unregister(reg{region})
	(&checkHold{chk: c}).Release()

	e, err := newEpoch("memory", rand.New(rand.NewSource(1)), tl)
	require.NoError(t, err)
	at := &attempt{fetch: true, slots: []int{0}, names: []int{3}}
	e.checkRow(at, 0)       // the slot holds zeros, not name 3's content
	e.mem.Mapping()[0] ^= 1 // a write before the region
	e.checkGuard("test")
	e.shutdown(&Report{})

	all := strings.Join(tl.violations, "\n")
	for _, want := range []string{"unregistered while an operation may still touch it", "hold was released while an operation",
		"does not read back byte for byte", "written outside every window"} {
		assert.Contains(t, all, want)
	}
}

// openOp is an operation whose access never ends.
type openOp struct{}

func (openOp) Poll() ([]driver.Result, bool) { return nil, false }
func (openOp) AccessEnded() bool             { return false }
func (openOp) AccessUnprovable() bool        { return false }
func (openOp) Cancel()                       {}

type reg struct{ r *driver.Region }

func (g reg) Region() *driver.Region { return g.r }

// acceptAll is a driver that accepts every unregister.
type acceptAll struct{ driver.Driver }

func (acceptAll) Unregister(driver.Registration) error { return nil }

package memory_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memorykit"
)

// TestConformance runs the suite, with spec/memory.yaml's generated cases
// and the integrity check, over the memory driver in its background mode,
// where results and access end arrive after Put and Get return: the
// memory row of the gate's table.
func TestConformance(t *testing.T) {
	conformance.Run(t, memorykit.Suite("memory", memory.Options{Mode: memory.Background}))
}

// TestConformanceInEveryMode runs the same suite over the memory driver's
// other ways: blocking, without hints, over a store drivers share, and
// with a pool registered before any check ran.
func TestConformanceInEveryMode(t *testing.T) {
	for _, w := range []struct {
		name string
		opt  memory.Options
	}{
		{"memory-blocking", memory.Options{}},
		{"memory-hint-free", memory.Options{NoHints: true}},
		{"memory-shared-store", memory.Options{Store: memory.NewStore(0)}},
	} {
		conformance.Run(t, memorykit.Suite(w.name, w.opt))
	}
	s := memorykit.Suite("memory-pool-registered-first", memory.Options{Mode: memory.Background})
	s.Factory = func(t conformance.T) driver.Driver {
		d := memory.New(memory.Options{Mode: memory.Background})
		pool, err := hostmem.Map("pool", driver.Layout{SlotBytes: 4096, Slots: 4})
		if err != nil {
			t.Fatal(err)
		}
		reg, err := d.Register(pool.Region)
		if err != nil {
			t.Fatal(err)
		}
		return &poolFirst{Driver: d, pool: pool, reg: reg}
	}
	conformance.Run(t, s)
}

// poolFirst is a memory driver with a pool registered before any check ran;
// its Close unregisters the pool first, as the pool's owner would.
type poolFirst struct {
	*memory.Driver
	pool *hostmem.Mapping
	reg  driver.Registration
}

// As reaches the memory driver underneath (see driver.As).
func (p *poolFirst) As(target any) bool { return driver.As(p.Driver, target) }

func (p *poolFirst) Close() error {
	if p.reg != nil {
		if err := p.Driver.Unregister(p.reg); err != nil {
			return err
		}
		p.reg = nil
		_ = p.pool.Close()
	}
	return p.Driver.Close()
}

package memory_test

import (
	"bytes"
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/generated/memoryspec/memorycases"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/memory/memtest"
	"github.com/kvblob/kvblob/stores/trailer"
)

// TestConformance runs the suite, with spec/memory.yaml's generated cases,
// over the memory driver five ways.
func TestConformance(t *testing.T) {
	shared := memory.NewStore(0)
	ways := []struct {
		name string
		f    conformance.Factory
	}{
		{"blocking", memtest.Factory(memory.Options{})},
		{"hint-free", memtest.Factory(memory.Options{NoHints: true})},
		{"background", memtest.Factory(memory.Options{Mode: memory.Background})},
		{"shared-store", memtest.Factory(memory.Options{Store: shared})},
		{"pool-registered-first", func(t conformance.T) driver.Driver {
			d := memory.New(memory.Options{Mode: memory.Background})
			pool, err := hostmem.NewRegion("pool", driver.Layout{SlotBytes: 4096, Slots: 4})
			if err != nil {
				t.Fatal(err)
			}
			reg, err := d.Register(pool.Region)
			if err != nil {
				t.Fatal(err)
			}
			return &poolFirst{Driver: d, pool: pool, reg: reg}
		}},
	}
	for _, w := range ways {
		t.Run(w.name, func(t *testing.T) {
			conformance.Run(t, w.f, conformance.Suite{Scenarios: memtest.Scenarios(), Cases: memorycases.All(), Stage: memtest.Stage})
		})
	}
}

// TestIntegrity runs the integrity check over memory drivers with a row key,
// blocking and in the background.
func TestIntegrity(t *testing.T) {
	in, err := trailer.NewIntegrity(bytes.Repeat([]byte{0x42}, 32), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []memory.Mode{memory.Blocking, memory.Background} {
		t.Run(mode.String(), func(t *testing.T) {
			conformance.RunIntegrity(t, memtest.Factory(memory.Options{Mode: mode, Integrity: in}), memtest.Foreign, conformance.Suite{})
		})
	}
}

// poolFirst is a memory driver with a pool registered before any check ran;
// its Close unregisters the pool first, as the pool's owner would.
type poolFirst struct {
	*memory.Driver
	pool *hostmem.Region
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

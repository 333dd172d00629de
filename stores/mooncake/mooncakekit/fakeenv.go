package mooncakekit

import (
	"errors"
	"time"

	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

// FakeEnv runs scenarios over fakesdk, on the fake master's clock: every
// client lives in this process, and time passes only when a step lets it.
type FakeEnv struct {
	// Version is what the fake clients report.
	Version string

	m     *fakesdk.Master
	t0    time.Time
	alloc [][]byte
}

var _ Env = (*FakeEnv)(nil)

// Master is the fake master of the scenario being run.
func (e *FakeEnv) Master() *fakesdk.Master { return e.m }

func (e *FakeEnv) Open(cfg Config) ([]mooncake.SDK, error) {
	capacity := cfg.Segment
	if cfg.PoolOn == Both {
		capacity *= int64(cfg.Clients)
	}
	e.m = fakesdk.NewMaster(capacity)
	k := fakesdk.DefaultKnobs()
	k.RPCTimeout, k.StatusTimeout, k.Lease, k.ClientTTL, k.Discard = cfg.RPCTimeout, cfg.StatusTimeout, cfg.Lease, cfg.ClientTTL, cfg.Discard
	e.m.SetKnobs(k)
	e.t0 = e.m.Now()
	var out []mooncake.SDK
	for i := 0; i < cfg.Clients; i++ {
		c := fakesdk.NewClient(e.m, e.Version)
		if i == cfg.PoolOn && i == B {
			e.m.SetOwner(c)
		}
		out = append(out, c)
	}
	return out, nil
}

// HostMemory is a Memory over bytes in this process, off the Go heap
// (runtime/hostmem), as both the fake and the recorder's client A use.
type HostMemory []byte

func (h HostMemory) Buffer() mooncake.Buffer   { return mooncake.BufferOf(h) }
func (h HostMemory) Write(off int64, p []byte) { copy(h[off:], p) }
func (h HostMemory) Read(off, n int64) []byte  { return append([]byte(nil), h[off:off+n]...) }

// Alloc maps n bytes off the Go heap, as runtime/hostmem does for slots.
func (e *FakeEnv) Alloc(_ int, n int64) (Memory, error) {
	p, err := hostmem.Alloc(int(n))
	if err != nil {
		return nil, err
	}
	e.alloc = append(e.alloc, p)
	return HostMemory(p), nil
}

func (e *FakeEnv) Go(call func()) <-chan struct{}   { return e.m.Go(call) }
func (e *FakeEnv) Settle()                          { e.m.Settle() }
func (e *FakeEnv) Await(done <-chan struct{}) error { return e.m.Await(done) }
func (e *FakeEnv) Advance(d time.Duration)          { e.m.Advance(d) }
func (e *FakeEnv) Now() time.Duration               { return e.m.Now().Sub(e.t0) }
func (e *FakeEnv) KillMaster() error                { e.m.KillMaster(); return nil }
func (e *FakeEnv) RestartMaster() error             { e.m.RestartMaster(); return nil }
func (e *FakeEnv) FreezeMaster() error              { e.m.FreezeMaster(); return nil }
func (e *FakeEnv) ThawMaster() error                { e.m.ThawMaster(); return nil }
func (e *FakeEnv) FreezePeer() error                { e.m.FreezePeer(); return nil }
func (e *FakeEnv) ThawPeer() error                  { e.m.ThawPeer(); return nil }
func (e *FakeEnv) KillPeer() error                  { e.m.KillPeer(); return nil }

// Close unmaps the scenario's memory.
func (e *FakeEnv) Close() error {
	var err error
	for _, p := range e.alloc {
		err = errors.Join(err, hostmem.Free(p))
	}
	e.alloc = nil
	return err
}

// Package memorykit wires the memory store into the conformance suite: the
// scenarios its Store can stage, the stager for generated/memory/memorycases,
// and the factories of the five ways the suite runs over it.
package memorykit

import (
	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/stores/trailer"

	"github.com/kvblob/kvblob/conformance"
	memorygen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/generated/memory/memorycases"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
)

// Memory returns the *memory.Driver d is or wraps (see driver.As).
func Memory(d driver.Driver) *memory.Driver { return storekit.Unwrap[*memory.Driver](d) }

// Scenarios are every scenario the memory store stages.
func Scenarios() conformance.Scenarios {
	return conformance.Scenarios{
		HoldGet: func(d driver.Driver, key string) (<-chan struct{}, func()) {
			return Memory(d).Store().Hold(memory.CallGet, key)
		},
		Writing:    func(d driver.Driver, key string) func() { return Memory(d).Store().BeginExternal(key) },
		Full:       func(d driver.Driver, key string) { Memory(d).Store().Inject(memory.CallPut, key, memorygen.Full) },
		FailPut:    func(d driver.Driver, key string) { Memory(d).Store().Inject(memory.CallPut, key, memorygen.IOError) },
		FailRead:   func(d driver.Driver, key string) { Memory(d).Store().Inject(memory.CallGet, key, memorygen.IOError) },
		Unprovable: func(d driver.Driver, _ string) { Memory(d).LoseEvidenceNext() },
		HoldAccess: func(d driver.Driver) func() { return Memory(d).HoldAccessNext() },
	}
}

// Suite is the conformance suite over memory drivers with opt, named
// name: every scenario the store stages, spec/memory.yaml's generated
// cases, the integrity check over the same drivers with a row key, and the
// hostile checks through Neighbour.
func Suite(name string, opt memory.Options) conformance.Suite {
	keyed := opt
	keyed.Integrity = storekit.RowKey()
	return conformance.Suite{
		Name: name, SDK: memorygen.Memory().SDKName + " " + memorygen.Memory().SDKVersions[0],
		Factory: Factory(opt), Scenarios: Scenarios(), Cases: memorycases.Memory(), Stage: Stage,
		Integrity: &conformance.Integrity{Factory: Factory(keyed), Plant: Foreign},
		Neighbour: Neighbour{},
	}
}

// Factory returns a conformance factory for memory drivers with opt. A nil
// opt.Store gives each driver a store of its own.
func Factory(opt memory.Options) conformance.Factory {
	return func(conformance.T) driver.Driver { return memory.New(opt) }
}

// Stage makes the memory store answer case c for key.
func Stage(h *conformance.Harness, c conformance.Case, key string) error {
	st := Memory(h.D).Store()
	payload, done, _ := storekit.PlantCase(c, key, func(key string, obj []byte) error { st.SetObject(key, obj); return nil })
	if done {
		return nil
	}
	switch {
	case memorygen.Code(c.Answer.Code) == memorygen.OK:
	case memorygen.Code(c.Answer.Code) == memorygen.Pending:
		st.BeginExternal(key)
		st.SetObject(key, nil)
		st.Delete(key)
	case memorygen.Code(c.Answer.Code) == memorygen.NotFound && c.Op == conformance.OpGet:
		st.Delete(key)
	case memorygen.Code(c.Answer.Code) == memorygen.Corrupt:
		obj := trailer.Encode(key, payload)
		obj[0] ^= 0xff
		st.SetObject(key, obj)
	default:
		call := memory.CallPut
		if c.Op == conformance.OpGet {
			call = memory.CallGet
		}
		st.Inject(call, key, memorygen.Code(c.Answer.Code))
	}
	return nil
}

// Foreign stores, under key, the row another writer without a row key
// would: payload and a valid unkeyed trailer (conformance.Foreign).
func Foreign(d driver.Driver, key string, payload []byte) error {
	Memory(d).Store().SetObject(key, trailer.Encode(key, payload))
	return nil
}

// Neighbour writes a memory store's objects as another client of the same
// Store would (conformance.Neighbour). The memory store keeps a key's
// pending state beside its bytes, not in a value, and one kind of value,
// and no folders: it gives none of the optional capabilities.
type Neighbour struct{}

// WriteRaw stores value as key's object, unframed.
func (Neighbour) WriteRaw(d driver.Driver, key string, value []byte) error {
	Memory(d).Store().SetObject(key, append([]byte(nil), value...))
	return nil
}

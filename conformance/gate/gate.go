// Package gate is the registry of stores the conformance gate runs
// (cmd/gate). A store joins the gate from its own tree, the way an image
// format joins package image: its test kit registers a Store in an init
// function, and cmd/gate imports that package for its side effect.
//
//	func init() {
//		gate.Register(gate.Store{Name: "redis", SDK: "redis-server 7.x", ...})
//	}
package gate

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/speccase"
)

// Store is one store the gate can run: its embedded default driver, the
// scenarios it stages and the cases generated from its spec.
type Store struct {
	// Name is how --store selects it ("redis").
	Name string
	// SDK names the SDK and version the gate exercises, as the table
	// prints it ("redis-server 7.x (loopback)").
	SDK string
	// Real marks the store over a real SDK that only a build tag links
	// (Mooncake's cgo SDK: -tags mooncake). 'gate --sdk real' runs it in
	// place of the store of the same name; the default, --sdk fake, runs
	// the other.
	Real bool
	// Factory makes a fresh driver for each check. It is called only after
	// Setup succeeded.
	Factory conformance.Factory
	// Scenarios are what the store can stage.
	Scenarios conformance.Scenarios
	// ScenariosAfterSetup, when set, is called once after Setup succeeded
	// and its scenarios replace Scenarios: for a store whose scenarios
	// depend on what Setup found (a tmpfs mounted, a helper server up).
	ScenariosAfterSetup func() conformance.Scenarios
	// SkipReasons says why the store stages no such scenario here, per
	// scenario it leaves nil (conformance.Suite.SkipReasons).
	SkipReasons map[conformance.Scenario]string
	// Cases and Stage run the cases generated from the store's spec.
	Cases []speccase.Case
	Stage conformance.Stager
	// StageableOnly runs only the cases the spec marks stageable: for a
	// store whose stager gives real answers alone (conformance.Suite).
	StageableOnly bool
	// Deadline bounds every wait of a check (conformance.Suite.Deadline;
	// zero: conformance.DefaultDeadline), for a store whose calls take
	// longer (a real master down answers after its connect retries).
	Deadline time.Duration
	// KnownFailures are the checks the store is known to fail, each with
	// why (see conformance.Suite.KnownFailures).
	KnownFailures map[string]string
	// Setup readies what the store needs (a server to start). It returns a
	// reason to skip the store when the machine lacks it, and a teardown.
	// Nil means nothing to set up.
	Setup func() (skip string, teardown func(), err error)

	// SDKChecks check the store's SDK itself against facts its spec relies
	// on, asked of the SDK or its server (its version; the replies the
	// rules map). Each runs after Setup, with a fresh driver from Factory.
	SDKChecks []SDKCheck
	// CodeEnum names the enum in the SDK's headers that declares its codes
	// (Mooncake: ErrorCode). 'gate --sdk-include DIR' checks the spec's
	// code table against it.
	CodeEnum string
	// Spec is the spec file (base name, "mooncake-0.3.13.yaml") the store's
	// generated package comes from. It may be left empty while only one
	// spec describes the store.
	Spec string
}

// SDKCheck is conformance.SDKCheck.
type SDKCheck = conformance.SDKCheck

var (
	mu     sync.Mutex
	stores = map[string]Store{}
)

// Register adds s to the gate. It panics when s has no name or factory, or
// when a store of that name is registered already: both are programming
// errors in a store's init function.
func Register(s Store) {
	mu.Lock()
	defer mu.Unlock()
	if s.Name == "" || s.Factory == nil {
		panic(fmt.Sprintf("gate: Register of %q needs a name and a factory", s.Name))
	}
	k := s.Name
	if s.Real {
		k += " (real SDK)"
	}
	if _, dup := stores[k]; dup {
		panic(fmt.Sprintf("gate: store %q is registered twice", k))
	}
	stores[k] = s
}

// Stores returns every registered store, sorted by name.
func Stores() []Store {
	mu.Lock()
	defer mu.Unlock()
	out := make([]Store, 0, len(stores))
	for _, s := range stores {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

package main

import (
	"strings"

	"github.com/kvblob/kvblob/gen"
)

type scaffoldFile struct{ path, body string }

// scaffold returns the files 'drivergen new STORE' writes, in the pattern of
// stores/fs, the store docs/writing-a-store.md follows: a spec with every
// block, an adapter on the shared lifecycle that honours cancellation, takes
// its fault seam in Options and turns every answer (and every error the SDK
// raises, classified into the spec's codes) into a row result through the
// spec, a test kit in the store's test files (stores/STORE/kit_test.go)
// that stages through that seam, a test that runs the conformance suite,
// and the store's deps.sh, where make deps finds the servers its tests
// need: everything in the store's folder but its spec.
func scaffold(store string) []scaffoldFile {
	r := strings.NewReplacer("UPPERSTORE", strings.ToUpper(store), "STORE", store, "SPECGO", gen.GoIdent(store))
	return []scaffoldFile{
		{"spec/" + store + ".yaml", r.Replace(specTemplate)},
		{"stores/" + store + "/driver.go", r.Replace(driverTemplate)},
		{"stores/" + store + "/conformance_test.go", r.Replace(testTemplate)},
		{"stores/" + store + "/kit_test.go", r.Replace(kitTemplate)},
		{"stores/" + store + "/deps.sh", r.Replace(depsTemplate)},
	}
}

const depsTemplate = `#!/usr/bin/env bash
# What STORE's tests start on loopback: make deps runs this file, and
# scripts/deps.sh says how each step runs. TODO: a step per server the
# tests need (none yet), and a row per step in README.md's first-run
# table (a test holds the two alike), e.g. for a server Debian packages:
#   apt_step STEP-NAME DEBIAN-PACKAGE PROGRAM [FOLDER...]
set -uo pipefail
. scripts/deps.sh
`

const specTemplate = `# Store STORE over STORE-sdk 1.0. spec/README.md documents every key.
# Rename it after the SDK version it was read from (spec/STORE-1.0.yaml);
# its name names its value in generated/STORE (STOREgen.SPECGO, then
# STOREgen.SPECGO10), which the driver picks by the version its SDK
# reports. Comments here are carried into the generated code's doc
# comments.
store: STORE
sdk:
  name: STORE-sdk
  # The versions (or release lines, "1.x") this spec was read from; the
  # driver refuses any other (STOREgen.Pick).
  versions: ["1.0"]

capabilities:
  absent_is_miss: true
  device_memory: false
  multi_span: false
  hints: false
  probe: false
  evicts: false
  max_rows_per_op: 0

# The largest row the store takes; or {bound: N, at_open: true} when the
# deployment sets it (the driver then admits through
# its spec's Admission.WithMaxRowBytes). Add row_too_large to admission with it.
# limits:
#   max_row_bytes: 536870912

# The keys the store refuses; each part needs its admission rule
# (key_too_long, key_bytes, key_format).
# keys:
#   max_bytes: 250
#   refuse: [space, control]

codes:
  OK: {value: 0, doc: "the call succeeded"}
  NOT_FOUND: {value: -1, doc: "no object under the key"}
  # An error the SDK raised is classified into a code (classify in
  # stores/STORE/driver.go): ERR is every error no other code names, and
  # each call's otherwise makes it a FAULT carrying the error.
  ERR: {value: -1000, doc: "an error the SDK raised that no other code names"}

calls:
  sdk_put:
    op: put
    doc: "writes a row's bytes under its key"
    touches_memory: true
    access_end: on_return
    answers: code
    codes:
      OK: {result: READY}
    otherwise: {result: FAULT, example: ERR}
  sdk_get:
    op: get
    doc: "reads a key's object into the row's span"
    touches_memory: true
    access_end: on_return
    answers: size
    whole: {result: READY, written: "yes"}
    short: {result: FAULT, written: "yes"}
    codes:
      NOT_FOUND: {result: MISS, written: "no"}
    otherwise: {result: FAULT, written: "maybe", example: ERR}

admission:
  - empty_key
  - repeated_key
  - multi_span
  - span_outside_registration
  - hint
  - device_region

# Settings the driver refuses at open (its spec's CheckEnvironment), each
# with the reason it prints.
# environment:
#   UPPERSTORE_UNSAFE: {allow: ["", "0"], reason: "it lets the SDK reuse a buffer after the call returned"}

# The backend's defaults for this store.
config:
  workers: 4
  rows_per_batch: 64
  bytes_per_batch: 67108864
`

const driverTemplate = `// Package STORE is kvblob's driver for STORE. Every code-to-result rule is
// spec/STORE.yaml's (generated/STORE): this package only calls the SDK
// and classifies what it raises into the spec's codes.
package STORE

import (
	"context"
	"fmt"
	"os"

	STOREgen "github.com/kvblob/kvblob/generated/STORE"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
)

// Options configure a Driver.
type Options struct {
	// TODO: what the SDK needs to reach the store (addresses, credentials).

	// Seam, when set, is entered before each spec call (sdk_put, sdk_get)
	// on a key: a held call waits in it, a raise is answered as if the SDK
	// had raised that error (classified into the spec's codes), and a
	// staged answer is the call's answer without calling the SDK. Tests
	// stage what a real store cannot do on cue through it; production
	// leaves it nil.
	Seam *driverkit.Seam
}

// Driver is a driver.Driver over the STORE SDK. Its lifecycle
// (registrations, calls in progress, drain, close) is driverkit's.
type Driver struct {
	opt  Options
	spec *STOREgen.Spec // the spec of the SDK's version, picked at Open
	life driverkit.Lifecycle
}

var _ driver.Driver = (*Driver)(nil)

// Open picks the spec that holds for the SDK's version among every spec
// of the store (generated/STORE's Specs: a new version is a spec file and
// 'make generate'), checks that the environment is one it allows, and
// returns the driver.
func Open(opt Options) (*Driver, error) {
	version := "1.0" // TODO: the version the SDK (or the server) reports
	spec, err := STOREgen.Pick("STORE-sdk", version)
	if err != nil {
		return nil, err
	}
	if err := spec.CheckEnvironment(os.Getenv); err != nil {
		return nil, fmt.Errorf("STORE: %w", err)
	}
	// TODO: open the SDK client. When the deployment sets the row limit
	// (the spec's limits.max_row_bytes at_open), read it here and admit
	// Put and Get through spec.Admission.WithMaxRowBytes(the limit read).
	return &Driver{opt: opt, spec: spec}, nil
}

// Capabilities are the picked spec's.
func (d *Driver) Capabilities() driver.Capabilities { return d.spec.Capabilities }

// Register admits r. TODO: register its memory with the SDK in the attach
// function (return its handle), if the SDK needs that.
func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	return d.life.Register(r, d.spec.Admission.Register, nil)
}

// Unregister refuses while a call may touch the region. TODO: unregister
// with the SDK in the detach function, if Register registered.
func (d *Driver) Unregister(reg driver.Registration) error { return d.life.Unregister(reg, nil) }

// Drain waits for the calls in progress.
func (d *Driver) Drain(ctx context.Context) bool { return d.life.Drain(ctx, nil) }

// Close closes the driver once every call ended and every region is
// unregistered; an idle driver needs no Drain first, and Close says when
// one must come first (a call still in progress). TODO: pass a function
// that closes the SDK client.
func (d *Driver) Close() error { return d.life.Close(nil) }

// Put stores each row through the spec's sdk_put call. A row ctx stopped
// before it started is CANCELLED (driverkit.Lifecycle.EachRow).
func (d *Driver) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	return d.life.EachRow(ctx, rows, func(live func(*driver.Region) bool) error {
		return d.spec.Admission.Put(rows, live)
	}, func(r driver.Row) driver.Result { return d.put(ctx, r) })
}

// Get reads each row through the spec's sdk_get call.
func (d *Driver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	return d.life.EachRow(ctx, rows, func(live func(*driver.Region) bool) error {
		return d.spec.Admission.Get(rows, hint, live)
	}, func(r driver.Row) driver.Result { return d.get(ctx, r) })
}

func (d *Driver) put(ctx context.Context, r driver.Row) driver.Result {
	code, err := d.call("sdk_put", r.Key, func() (int64, error) {
		// TODO: write r.Spans[0].Bytes() under r.Key with the SDK (passing
		// ctx when it takes one) and return its answer code.
		return 0, notWritten("sdk_put")
	})
	return d.spec.Calls.SdkPut.Map(code).WithCause(err)
}

func (d *Driver) get(ctx context.Context, r driver.Row) driver.Result {
	answer, err := d.call("sdk_get", r.Key, func() (int64, error) {
		// TODO: read r.Key's object with the SDK (passing ctx when it takes
		// one) into r.Spans[0].Bytes(), and return the byte count it read,
		// or a negative code.
		return 0, notWritten("sdk_get")
	})
	return d.spec.Calls.SdkGet.Map(answer, r.Bytes()).WithCause(err)
}

// call makes one spec call on key through the seam: a test may hold it,
// raise an error in it or answer for the SDK. An error, raised by a test
// or by the SDK, is classified into the spec's codes, so what it means for
// the row is the spec's rule for that code (a FAULT carrying the error,
// through rules.Mapping.WithCause). An sdk function that knows its code
// (a check of what the SDK returned failed: CORRUPT) answers it (any code
// but 0) with the error as its cause, and the code stands: only an error
// with answer 0 is classified.
func (d *Driver) call(call, key string, sdk func() (int64, error)) (int64, error) {
	if code, staged, err := driverkit.Stage(d.opt.Seam, call, key, classify); staged {
		return int64(code), err
	}
	answer, err := sdk()
	if err != nil && answer == 0 {
		return int64(classify(err)), err
	}
	return answer, err
}

// classify turns an error the SDK raised into a code of spec/STORE.yaml.
// TODO: give the errors the spec names (a timeout, a refused connection,
// a full store) codes of their own; every other error is ERR.
func classify(err error) STOREgen.Code {
	if err == nil {
		return STOREgen.OK
	}
	return STOREgen.Err
}

func notWritten(call string) error {
	return fmt.Errorf("STORE: %s is not written yet", call)
}
`

const kitTemplate = `package STORE_test

// This file is the STORE driver's test kit: drivers with a fault seam, the
// scenarios the store stages, and the stager of the cases generated from
// spec/STORE.yaml. Until it stages on a real store, everything is staged
// through the seam, by the spec's call names. It lives in the store's test
// files while only the store's own tests use it; its names are exported as
// a kit package's would be, so that when another package needs it (a
// benchmark, a subpackage's tests) it moves to stores/STORE/STOREkit
// changing only its package clause and its callers' qualifiers
// (docs/writing-a-store.md).

import (
	"errors"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/stores/STORE"
)

// Driver is a STORE driver from Open, with its seam.
type Driver struct {
	*STORE.Driver
	// Seam is the driver's Options.Seam, keyed by spec/STORE.yaml's call
	// names.
	Seam *driverkit.Seam
}

// Open opens a driver with a seam. TODO: point the driver's Options at the
// store's server (a storekit.Spec started with storekit.Start, owned by
// the test package: storekit.Own), in a namespace of its own
// (storekit.Namespace: a database, table, bucket or prefix).
func Open(t conformance.T) *Driver {
	seam := &driverkit.Seam{}
	d, err := STORE.Open(STORE.Options{Seam: seam})
	if err != nil {
		t.Fatal(err)
	}
	return &Driver{Driver: d, Seam: seam}
}

// Factory returns a fresh driver for each check.
func Factory() conformance.Factory {
	return func(t conformance.T) driver.Driver { return Open(t) }
}

// Parts returns the kit's Driver behind d.
func Parts(d driver.Driver) *Driver { return storekit.Unwrap[*Driver](d) }

// Scenarios are what the store stages. TODO: stage Writing (another
// client holds the key) and Full (the store refuses a put) on the real
// store where it can; a scenario left nil gets its reason in the suite's
// SkipReasons.
func Scenarios() conformance.Scenarios {
	return conformance.SeamScenarios(seamOf, "sdk_put", "sdk_get")
}

// Stage stages each generated case through the seam. TODO: stage on the
// real store the cases it can answer for real (spec: stageable).
var Stage = conformance.SeamStager(seamOf)

func seamOf(d driver.Driver) *driverkit.Seam { return Parts(d).Seam }

// Neighbour writes to the store around the driver, as another client with
// write access would, for the suite's hostile checks (a neighbour's bytes
// never read READY: frame each object, stores/trailer). TODO: WriteRaw
// with a client of the kit's own; add MarkerWriter, WrongTypeWriter or
// TreeWriter where the store keeps markers in values, typed values or
// folders.
type Neighbour struct{}

// WriteRaw stores value, byte for byte, as key's whole object.
func (Neighbour) WriteRaw(d driver.Driver, key string, value []byte) error {
	return errors.New("STORE kit: Neighbour.WriteRaw is not written yet")
}
`

const testTemplate = `package STORE_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	STOREgen "github.com/kvblob/kvblob/generated/STORE"
)

// TestMain runs the tests and fails on a goroutine they leaked. TODO: when
// the store has a server, own it here (var srv = storekit.Own(available,
// start, stop); storekit.MainOwning(m, srv)) and take it in tests with
// srv.Need(t).
func TestMain(m *testing.M) { storekit.MainOwning(m) }

// TestConformance runs the lifecycle checks (admission, registration,
// access ends, drain, unregister, close), which the adapter passes before
// any SDK call is written; the gate (make run) runs it through go test.
// Once Put and Get call the SDK, run the whole suite with the kit's
// scenarios and the generated cases (generated/STORE/STOREcases):
//
//	for _, v := range STOREcases.All() { // one suite per spec
//		conformance.Run(t, conformance.Suite{
//			Name: v.Name, SDK: v.Spec.SDKName + " " + v.Spec.SDKVersions[0], Factory: Factory(),
//			Scenarios: Scenarios(), Cases: v.Cases, Stage: Stage,
//			Neighbour: Neighbour{}, // the hostile checks
//			// Setup: srv.Setup, // a server the package owns: skips, saying why, when it is missing
//			// SkipReasons: why the kit leaves a scenario nil
//		})
//	}
func TestConformance(t *testing.T) {
	spec := STOREgen.Specs()[0]
	sdk := spec.SDKName + " " + spec.SDKVersions[0]
	conformance.Run(t, conformance.Suite{Name: "STORE", SDK: sdk, Factory: Factory(), Only: conformance.Lifecycle})
}
`

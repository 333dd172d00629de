package main

import "strings"

type scaffoldFile struct{ path, body string }

// scaffold returns the files 'drivergen new STORE' writes: a spec to fill
// in, a thin adapter skeleton and a test that runs the conformance suite.
func scaffold(store string) []scaffoldFile {
	r := strings.NewReplacer("STORE", store)
	return []scaffoldFile{
		{"spec/" + store + ".yaml", r.Replace(specTemplate)},
		{"stores/" + store + "/driver.go", r.Replace(driverTemplate)},
		{"stores/" + store + "/driver_test.go", r.Replace(testTemplate)},
	}
}

const specTemplate = `# Store STORE. See spec/README.md for every key.
store: STORE
package: STORE
sdk:
  name: STORE-sdk
  versions: ["1.0"]

capabilities:
  absent_is_miss: true
  device_memory: false
  multi_span: false
  hints: false

codes:
  OK: {value: 0, doc: "the call succeeded"}
  NOT_FOUND: {value: -1, doc: "no object under the key"}

calls:
  sdk_put:
    op: put
    touches_memory: true
    access_end: on_return
    answers: code
    codes:
      OK: {result: READY}
    otherwise: {result: FAULT}
  sdk_get:
    op: get
    touches_memory: true
    access_end: on_return
    answers: size
    whole: {result: READY, written: "yes"}
    short: {result: FAULT, written: "yes"}
    codes:
      NOT_FOUND: {result: MISS, written: "no"}
    otherwise: {result: FAULT, written: "maybe"}

admission:
  - empty_key
  - repeated_key
  - multi_span
  - span_outside_registration
  - hint
  - device_region
`

const driverTemplate = `// Package STORE is the kvblob driver for STORE. Every code-to-result
// decision comes from generated/STORE; this adapter only calls the SDK.
package STORE

import (
	"context"

	gen "github.com/kvblob/kvblob/generated/STORE"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
)

// Driver is a driver.Driver over the STORE SDK. Its lifecycle
// (registrations, calls in progress, drain, close) is driverkit's; the
// adapter adds only its SDK calls.
type Driver struct {
	life driverkit.Lifecycle
}

var _ driver.Driver = (*Driver)(nil)

// Capabilities are spec/STORE.yaml's.
func (d *Driver) Capabilities() driver.Capabilities { return gen.Capabilities }

// Register admits r; TODO: register its memory with the SDK in the attach
// function (return its handle), if the SDK needs that.
func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	return d.life.Register(r, gen.AdmitRegister, nil)
}

// Unregister refuses while a call may touch the region; TODO: unregister
// with the SDK in the detach function, if Register registered.
func (d *Driver) Unregister(reg driver.Registration) error { return d.life.Unregister(reg, nil) }

// Put stores each row. TODO: call the SDK, map each answer with gen.MapSdkPut.
func (d *Driver) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return gen.AdmitPut(rows, live) })
	if err != nil {
		return nil, err
	}
	defer call.End()
	return driverkit.Finished(notWritten(len(rows), "put")), nil
}

// Get reads each row. TODO: call the SDK, map each answer with gen.MapSdkGet.
func (d *Driver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return gen.AdmitGet(rows, hint, live) })
	if err != nil {
		return nil, err
	}
	defer call.End()
	return driverkit.Finished(notWritten(len(rows), "get")), nil
}

// notWritten answers every row FAULT until the SDK calls are written.
func notWritten(n int, call string) []driver.Result {
	res := make([]driver.Result, n)
	for i := range res {
		res[i] = driver.FaultResult(0, "STORE: %s is not written yet", call)
	}
	return res
}

// Drain waits for the calls in progress.
func (d *Driver) Drain(ctx context.Context) bool { return d.life.Drain(ctx, nil) }

// Close closes the driver once drained. TODO: pass a function that closes
// the SDK client.
func (d *Driver) Close() error { return d.life.Close(nil) }
`

const testTemplate = `package STORE_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/STORE"
)

// TestConformance runs the lifecycle checks (admission, registration,
// access ends, drain, unregister, close), which the adapter passes before
// any SDK call is written. Once Put and Get call the SDK, drop Only and add
// the scenarios your store stages, the generated cases and their stager:
//
//	conformance.Suite{Scenarios: ..., Cases: gen.Cases, Stage: ...}
func TestConformance(t *testing.T) {
	conformance.Run(t, func(conformance.T) driver.Driver { return &STORE.Driver{} }, conformance.Suite{Only: conformance.Lifecycle})
}
`

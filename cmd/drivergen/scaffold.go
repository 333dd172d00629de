package main

import "strings"

type scaffoldFile struct{ path, body string }

// scaffold returns the files 'drivergen new STORE' writes: a spec to fill
// in, a thin adapter on the shared lifecycle whose calls pass through a
// fault seam, a test kit that stages scenarios and cases through that seam,
// and a test that runs the conformance suite.
func scaffold(store string) []scaffoldFile {
	r := strings.NewReplacer("STORE", store)
	return []scaffoldFile{
		{"spec/" + store + ".yaml", r.Replace(specTemplate)},
		{"stores/" + store + "/driver.go", r.Replace(driverTemplate)},
		{"stores/" + store + "/driver_test.go", r.Replace(testTemplate)},
		{"stores/" + store + "/" + store + "test/" + store + "test.go", r.Replace(kitTemplate)},
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
// adapter adds only its SDK calls, each passed through Seam under the
// spec's name for it, so tests can stage faults by call name.
type Driver struct {
	life driverkit.Lifecycle
	// Seam is where tests stage faults; nil in production.
	Seam *driverkit.Seam
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

// Put stores each row through the spec's sdk_put call.
func (d *Driver) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return gen.AdmitPut(rows, live) })
	if err != nil {
		return nil, err
	}
	defer call.End()
	pass := d.Seam.Enter("sdk_put", keys(rows)...)
	res := make([]driver.Result, len(rows))
	for i := range rows {
		if err := pass.Err(); err != nil {
			res[i] = driver.FaultResult(0, "sdk_put raised: %v", err)
			continue
		}
		if code, staged := pass.Answer(i); staged {
			res[i] = gen.MapSdkPut(code).Result
			continue
		}
		// TODO: call the SDK for rows[i] and map its answer with gen.MapSdkPut.
		res[i] = driver.FaultResult(0, "STORE: sdk_put is not written yet")
	}
	return driverkit.Finished(res), nil
}

// Get reads each row through the spec's sdk_get call.
func (d *Driver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return gen.AdmitGet(rows, hint, live) })
	if err != nil {
		return nil, err
	}
	defer call.End()
	pass := d.Seam.Enter("sdk_get", keys(rows)...)
	res := make([]driver.Result, len(rows))
	for i, row := range rows {
		if err := pass.Err(); err != nil {
			res[i] = driver.FaultResult(0, "sdk_get raised: %v", err)
			continue
		}
		if answer, staged := pass.Answer(i); staged {
			res[i] = gen.MapSdkGet(answer, row.Bytes()).Result
			continue
		}
		// TODO: read rows[i] with the SDK into its spans and map the answer
		// (a byte count or a negative code) with gen.MapSdkGet.
		res[i] = driver.FaultResult(0, "STORE: sdk_get is not written yet")
	}
	return driverkit.Finished(res), nil
}

func keys(rows []driver.Row) []string {
	ks := make([]string, len(rows))
	for i, r := range rows {
		ks[i] = r.Key
	}
	return ks
}

// Drain waits for the calls in progress.
func (d *Driver) Drain(ctx context.Context) bool { return d.life.Drain(ctx, nil) }

// Close closes the driver once drained. TODO: pass a function that closes
// the SDK client.
func (d *Driver) Close() error { return d.life.Close(nil) }
`

const kitTemplate = `// Package STOREtest wires the STORE driver into kvblob's conformance
// suite: a factory, the scenarios the store stages and the stager of the
// cases generated from spec/STORE.yaml. Until a real server stages them,
// the scenarios and cases are staged through the adapter's Seam, by the
// spec's call names.
package STOREtest

import (
	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/stores/STORE"
)

// Factory returns a fresh driver for each check. TODO: open a client to
// the store (a server started with conformance/storekit, say), and
// register its cleanup with t.
func Factory() conformance.Factory {
	return func(conformance.T) driver.Driver { return &STORE.Driver{Seam: &driverkit.Seam{}} }
}

// Seam returns the seam of the STORE driver d is or wraps.
func Seam(d driver.Driver) *driverkit.Seam {
	var s *STORE.Driver
	if !driver.As(d, &s) {
		panic("STOREtest: not a STORE driver")
	}
	return s.Seam
}

// Scenarios are what the store stages. TODO: stage Writing (another
// client holds the key) and Full (the store refuses a put) on the real
// store where it can.
func Scenarios() conformance.Scenarios {
	return conformance.SeamScenarios(Seam, "sdk_put", "sdk_get")
}

// Stage stages each generated case through the seam. TODO: stage on the
// real store the cases it can answer for real (spec: stageable).
var Stage = conformance.SeamStager(Seam)
`

const testTemplate = `package STORE_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/stores/STORE/STOREtest"
)

// TestConformance runs the lifecycle checks (admission, registration,
// access ends, drain, unregister, close), which the adapter passes before
// any SDK call is written. Once Put and Get call the SDK, run the whole
// suite with the kit's scenarios and the generated cases:
//
//	conformance.Suite{Name: "STORE", Factory: STOREtest.Factory(), Scenarios: STOREtest.Scenarios(), Cases: gen.Cases, Stage: STOREtest.Stage}
func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Suite{Name: "STORE", Factory: STOREtest.Factory(), Only: conformance.Lifecycle})
}
`

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
	"time"

	gen "github.com/kvblob/kvblob/generated/STORE"
	"github.com/kvblob/kvblob/runtime/driver"
)

// Driver is a driver.Driver over the STORE SDK.
type Driver struct {
	regs  driver.Registry // live registrations
	calls driver.Calls    // calls in progress, for Drain
}

var _ driver.Driver = (*Driver)(nil)

func (d *Driver) Capabilities() driver.Capabilities { return gen.Capabilities }

func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	if err := gen.AdmitRegister(r); err != nil {
		return nil, err
	}
	// TODO: register r with the SDK; on success:
	return d.regs.Add(r, nil), nil
}

func (d *Driver) Unregister(reg driver.Registration) error {
	g, err := d.regs.Lookup(reg)
	if err != nil {
		return err
	}
	// TODO: refuse while a call may touch g.Region(); unregister with the SDK.
	d.regs.Remove(g)
	return nil
}

func (d *Driver) Put(rows []driver.Row) (driver.Operation, error) {
	if err := gen.AdmitPut(rows, d.regs.Live); err != nil {
		return nil, err
	}
	panic("TODO: call the SDK, map each answer with gen.MapSdkPut")
}

func (d *Driver) Get(rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	if err := gen.AdmitGet(rows, hint, d.regs.Live); err != nil {
		return nil, err
	}
	panic("TODO: call the SDK, map each answer with gen.MapSdkGet")
}

func (d *Driver) Drain(timeout time.Duration) bool { return d.calls.Wait(timeout) }
func (d *Driver) Close() error                     { panic("TODO: close the SDK client") }
`

const testTemplate = `package STORE_test

import (
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/STORE"
)

func TestConformance(t *testing.T) {
	t.Skip("TODO: remove once the driver is written")
	conformance.Run(t, func(conformance.T) driver.Driver { return &STORE.Driver{} }, conformance.Scenarios{})
}
`

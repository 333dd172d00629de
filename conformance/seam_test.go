package conformance_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/runtime/rules"
)

// seamed is the smallest sound adapter that routes its store calls through
// a driverkit.Seam: a map store with a spec's "put" (codes) and "get"
// (sizes) calls, mapped by rules of its own.
type seamed struct {
	life driverkit.Lifecycle
	seam driverkit.Seam
	mu   sync.Mutex
	objs map[string][]byte
}

const notFound = -704

var (
	ready    = rules.Meaning{Mapping: rules.Mapping{Result: driver.Result{Status: driver.Ready}, Written: rules.WrittenNo}}
	putRule  = &rules.CallRule{Call: "put", Access: rules.AccessOnReturn, CodeName: func(int64) string { return "CODE" }, Otherwise: rules.Meaning{Mapping: rules.Mapping{Result: driver.Result{Status: driver.Fault}, Written: rules.WrittenNo}}, Codes: map[int64]rules.Meaning{0: ready, -1: {Mapping: rules.Mapping{Result: driver.Result{Status: driver.Declined}, Written: rules.WrittenNo}}}}
	getRule  = &rules.CallRule{Call: "get", Access: rules.AccessOnReturn, Sized: true, CodeName: func(int64) string { return "CODE" }, Whole: rules.Meaning{Mapping: rules.Mapping{Result: driver.Result{Status: driver.Ready}, Written: rules.WrittenYes}}, Short: rules.Meaning{Mapping: rules.Mapping{Result: driver.Result{Status: driver.Fault}, Written: rules.WrittenYes}}, Codes: map[int64]rules.Meaning{notFound: {Mapping: rules.Mapping{Result: driver.Result{Status: driver.Miss}, Written: rules.WrittenNo}}}, Otherwise: rules.Meaning{Mapping: rules.Mapping{Result: driver.Result{Status: driver.Fault}, Written: rules.WrittenMaybe}}}
	admitAll = rules.Admission{MultiSpan: false}
)

func (d *seamed) Capabilities() driver.Capabilities { return driver.Capabilities{AbsentIsMiss: true} }
func (d *seamed) Register(r *driver.Region) (driver.Registration, error) {
	return d.life.Register(r, admitAll.Register, nil)
}
func (d *seamed) Unregister(reg driver.Registration) error { return d.life.Unregister(reg, nil) }
func (d *seamed) Drain(ctx context.Context) bool           { return d.life.Drain(ctx, nil) }
func (d *seamed) Close() error                             { return d.life.Close(nil) }

func keys(rows []driver.Row) []string {
	ks := make([]string, len(rows))
	for i, r := range rows {
		ks[i] = r.Key
	}
	return ks
}

func (d *seamed) Put(_ context.Context, rows []driver.Row) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return admitAll.Put(rows, live) })
	if err != nil {
		return nil, err
	}
	defer call.End()
	res := make([]driver.Result, len(rows))
	pass := d.seam.Enter("put", keys(rows)...)
	for i, r := range rows {
		if err := pass.Err(); err != nil {
			res[i] = driver.FaultResult(0, "put raised: %v", err)
			continue
		}
		code, staged := pass.Answer(i)
		if !staged {
			d.mu.Lock()
			d.objs[r.Key] = append([]byte(nil), r.Spans[0].Bytes()...)
			d.mu.Unlock()
		}
		res[i] = putRule.Map(code, 0).Result
	}
	return driverkit.Finished(res), nil
}

func (d *seamed) Get(_ context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return admitAll.Get(rows, hint, live) })
	if err != nil {
		return nil, err
	}
	defer call.End()
	res := make([]driver.Result, len(rows))
	pass := d.seam.Enter("get", keys(rows)...)
	for i, r := range rows {
		if err := pass.Err(); err != nil {
			res[i] = driver.FaultResult(0, "get raised: %v", err)
			continue
		}
		answer, staged := pass.Answer(i)
		if !staged {
			d.mu.Lock()
			obj, ok := d.objs[r.Key]
			d.mu.Unlock()
			answer = notFound
			if ok {
				answer = int64(len(obj))
				if int64(len(obj)) == r.Bytes() {
					copy(r.Spans[0].Bytes(), obj)
				}
			}
		}
		res[i] = getRule.Map(answer, r.Bytes()).Result
	}
	return driverkit.Finished(res), nil
}

func newSeamed(conformance.T) driver.Driver { return &seamed{objs: map[string][]byte{}} }

func seamOf(d driver.Driver) *driverkit.Seam { return &storekit.Unwrap[*seamed](d).seam }

// TestASeamStagesScenariosAndCasesForAnyAdapter runs the whole suite over
// an adapter whose only test kit is its seam: the scenarios and the cases
// are staged by call name, with no knowledge of the store.
func TestASeamStagesScenariosAndCasesForAnyAdapter(t *testing.T) {
	ans := func(code int64, name string) conformance.Answer {
		return conformance.Answer{Code: code, CodeName: name}
	}
	cases := []conformance.Case{
		{ID: "put/OK", Op: conformance.OpPut, Call: "put", Answer: ans(0, "OK"), Want: driver.Ready, Written: rules.WrittenNo, AccessEnded: true},
		{ID: "put/FULL", Op: conformance.OpPut, Call: "put", Answer: ans(-1, "FULL"), Want: driver.Declined, Written: rules.WrittenNo, AccessEnded: true},
		{ID: "put/otherwise", Op: conformance.OpPut, Call: "put", Answer: ans(-9, "X"), Want: driver.Fault, WantCode: -9, Written: rules.WrittenNo, AccessEnded: true},
		{ID: "get/whole", Op: conformance.OpGet, Call: "get", Answer: conformance.Answer{Size: conformance.SizeWhole}, Want: driver.Ready, Written: rules.WrittenYes, AccessEnded: true},
		{ID: "get/short", Op: conformance.OpGet, Call: "get", Answer: conformance.Answer{Size: conformance.SizeShort}, Want: driver.Fault, Written: rules.WrittenYes, AccessEnded: true},
		{ID: "get/NOT_FOUND", Op: conformance.OpGet, Call: "get", Answer: ans(notFound, "NOT_FOUND"), Want: driver.Miss, Written: rules.WrittenNo, AccessEnded: true},
	}
	conformance.Run(t, conformance.Suite{
		Name: "seamed", Factory: newSeamed,
		Scenarios: conformance.SeamScenarios(seamOf, "put", "get"),
		Cases:     cases,
		Stage:     conformance.SeamStager(seamOf),
	})
}

// TestAStageableCaseStagedThroughTheSeamFails: a case the spec marks
// stageable must be staged the way a real server answers, and the suite
// fails one its stager staged through the seam; unmarked, it passes.
func TestAStageableCaseStagedThroughTheSeamFails(t *testing.T) {
	c := conformance.Case{ID: "put/FULL", Op: conformance.OpPut, Call: "put", Answer: conformance.Answer{Code: -1, CodeName: "FULL"}, Want: driver.Declined, Written: rules.WrittenNo, AccessEnded: true}
	run := func(c conformance.Case) conformance.Verdict {
		s := conformance.Suite{Name: "seamed", Factory: newSeamed, Only: conformance.SpecCases, Cases: []conformance.Case{c}, Stage: conformance.SeamStager(seamOf)}
		_, _, vs := conformance.RunOnRecorders(s)
		return vs[0].Verdict
	}
	if o := run(c); !o.Passed {
		t.Errorf("the unmarked case staged through the seam failed: %s", o.Reason)
	}
	c.Stageable = true
	o := run(c)
	if o.Passed || o.Skipped {
		t.Fatalf("a case marked stageable but staged through the seam was not caught (passed=%v skipped=%v)", o.Passed, o.Skipped)
	}
	if !strings.Contains(o.Reason, "the seam's answer to put") {
		t.Errorf("the failure does not say how the case was staged: %s", o.Reason)
	}
}

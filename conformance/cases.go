package conformance

import (
	"testing"

	"github.com/kvblob/kvblob/conformance/speccase"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
)

// Stager makes the store behind h.D answer case c for key: it plants
// objects and programs the SDK's answers. It returns an error, and the case
// is skipped with it, when the store cannot stage the case.
type Stager func(h *Harness, c speccase.Case, key string) error

// RunCases runs the conformance cases generated from a spec: the stager
// makes the SDK answer the case's call, and the driver's operation must end
// with the wanted result, code and access state, leaving an unwritten
// destination untouched. With stageableOnly, only the cases a real server
// can stage run.
func RunCases(t *testing.T, f Factory, cases []speccase.Case, stage Stager, stageableOnly bool) {
	t.Helper()
	for _, c := range CaseChecks(cases, stage, stageableOnly) {
		t.Run(c.Name, func(t *testing.T) { RunCheck(t, c, f, Scenarios{}) })
	}
}

// CaseChecks turns generated cases into checks, so that RunRecorded and
// CheckAll can run them outside go test too.
func CaseChecks(cases []speccase.Case, stage Stager, stageableOnly bool) []Check {
	out := make([]Check, len(cases))
	for i, c := range cases {
		out[i] = Check{Name: c.ID, Run: func(h *Harness, _ Scenarios) { runCase(h, c, stage, stageableOnly) }}
	}
	return out
}

func runCase(h *Harness, c speccase.Case, stage Stager, stageableOnly bool) {
	t := h.T
	if stageableOnly && !c.Stageable {
		t.Skipf("%s: a real server cannot stage this case", c.Pos)
	}
	key := h.Key("case")
	if err := stage(h, c, key); err != nil {
		t.Skipf("%s: cannot stage: %v", c.Pos, err)
	}
	var op driver.Operation
	var res []driver.Result
	var before []byte
	dst := h.Row(key, 1)
	if c.Op == speccase.OpPut {
		src := h.Row(key, 0)
		Fill(src.Spans[0], 0x42)
		res, op = h.Put(src)
	} else {
		h.Dest(dst)
		before = Snapshot(dst)
		var err error
		op, err = h.D.Get(h.Ctx, []driver.Row{dst}, driver.Hint{})
		if err != nil {
			t.Fatalf("%s: Get = %v", c.Pos, err)
		}
		res = h.Wait(op, 1)
	}
	got := res[0]
	if got.Status != c.Want {
		t.Errorf("%s (%s): got %v, want %v", c.ID, c.Pos, got, c.Want)
	}
	if c.WantCode != 0 && got.Code != c.WantCode {
		t.Errorf("%s (%s): got code %d, want %d (%s)", c.ID, c.Pos, got.Code, c.WantCode, got.Text)
	}
	if c.Op == speccase.OpGet && c.Written == rules.WrittenNo {
		if d := differs(before, Snapshot(dst)); d != "" {
			t.Errorf("%s (%s): the destination must be untouched: %s", c.ID, c.Pos, d)
		}
	}
	if c.AccessEnded {
		if !WaitAccess(op, Deadline) {
			t.Errorf("%s (%s): access never ended; the spec says this answer ends it", c.ID, c.Pos)
		}
	} else if op.AccessEnded() {
		t.Errorf("%s (%s): access reported ended; the spec says this answer cannot prove it", c.ID, c.Pos)
	}
}

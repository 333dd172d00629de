package conformance

import (
	"github.com/kvblob/kvblob/conformance/speccase"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
)

// Stager makes the store behind h.D answer case c for key: it plants
// objects and programs the SDK's answers. It returns an error, and the case
// is skipped with it, when the store cannot stage the case.
type Stager func(h *Harness, c speccase.Case, key string) error

// caseChecks turns s.Cases into checks: the stager makes the SDK answer the
// case's call, and the driver's operation must end with the wanted result,
// code and access state, leaving an unwritten destination untouched.
func (s Suite) caseChecks() []Check {
	out := make([]Check, len(s.Cases))
	for i, c := range s.Cases {
		out[i] = Check{Name: c.ID, Group: SpecCases, Run: func(h *Harness, _ Scenarios) { runCase(h, c, s.Stage, s.StageableOnly) }}
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
	what := c.Op.String() + " of " + h.RowName(key)
	if c.Op == speccase.OpPut {
		src := h.Row(key, 0)
		Fill(src.Spans[0], CaseSeed)
		res, op = h.Put(src)
	} else {
		h.Dest(dst)
		before = Snapshot(dst)
		var err error
		op, err = h.D.Get(h.Ctx, []driver.Row{dst}, driver.Hint{})
		if err != nil {
			t.Fatalf("%s (%s): %s: %s", c.ID, c.Pos, what, CallError("Get", err))
		}
		res = h.Wait(op, what, 1)
	}
	got := res[0]
	if got.Status != c.Want {
		t.Errorf("%s (%s): %s: got %v, want %v", c.ID, c.Pos, what, got, c.Want)
	}
	if c.WantCode != 0 && got.Code != c.WantCode {
		t.Errorf("%s (%s): %s: got code %d (%s), want %d", c.ID, c.Pos, what, got.Code, got.Text, c.WantCode)
	}
	if c.Op == speccase.OpGet && c.Written == rules.WrittenNo {
		if d := differs(before, Snapshot(dst)); d != "" {
			t.Errorf("%s (%s): %s wrote its destination (%s); the spec says this answer leaves it untouched", c.ID, c.Pos, what, d)
		}
	}
	if c.AccessEnded {
		if !WaitAccess(op, h.Deadline) {
			t.Errorf("%s (%s): %s: access never ended within %v; the spec says this answer ends it", c.ID, c.Pos, what, h.Deadline)
		}
	} else if op.AccessEnded() {
		t.Errorf("%s (%s): %s: access reported ended; the spec says this answer cannot prove it", c.ID, c.Pos, what)
	}
}

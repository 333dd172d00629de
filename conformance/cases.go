package conformance

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
)

// Stager makes the store behind h.D answer case c for key: it plants
// objects and programs the SDK's answers. It returns an error, and the case
// is skipped with it, when the store cannot stage the case.
type Stager func(h *Harness, c Case, key string) error

// caseChecks turns s.Cases into checks: the stager makes the SDK answer the
// case's call, and the driver's operation must end with the wanted result,
// code and access state, leaving an unwritten destination untouched.
func (s Suite) caseChecks() []Check {
	out := make([]Check, len(s.Cases))
	for i, c := range s.Cases {
		out[i] = Check{Name: c.ID, Group: SpecCases, Run: func(h *Harness, _ Scenarios) { runCase(h, c, s.Stage, s.StageableOnly) }, kind: KindCase, spec: c.Pos}
	}
	return out
}

func runCase(h *Harness, c Case, stage Stager, stageableOnly bool) {
	t := h.T
	if c.Key != KeyNone {
		runKeyCase(h, c)
		return
	}
	if stageableOnly && !c.Stageable {
		t.Skipf("%s: a real server cannot stage this case", c.Pos)
	}
	key := h.Key("case")
	h.hooked = ""
	if err := stage(h, c, key); err != nil {
		t.Skipf("%s: cannot stage: %v", c.Pos, err)
	}
	if c.Stageable && h.hooked != "" {
		t.Errorf("%s (%s): the spec marks this answer stageable, but the stager staged it through %s; a stageable answer is one a real server gives on cue without any hook or seam: stage it for real, or drop stageable from the spec", c.ID, c.Pos, h.hooked)
	}
	var op driver.Operation
	var res []driver.Result
	var before []byte
	dst := h.Row(key, 1)
	what := c.Op.String() + " of " + h.RowName(key)
	if c.Op == OpPut {
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
	if c.Want == driver.Declined && got.Status == driver.Declined && c.Answer.Size == SizeNone && (got.Code != c.Answer.Code || got.Text == "") {
		t.Errorf("%s (%s): %s: got %v; a DECLINED carries the store's answer that refused the row, here %s (its code, %d, and a text saying it), so that a test can tell which answer caused it", c.ID, c.Pos, what, got, c.Answer, c.Answer.Code)
	}
	if c.Op == OpGet && c.Written == rules.WrittenNo {
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

// runKeyCase runs an admission case of the spec's keys block: no call is
// staged. A key the rule refuses must be refused by both Put and Get with a
// RejectedError naming the rule; a key at the length limit must be admitted
// by Get (any row result will do: only admission is under test).
func runKeyCase(h *Harness, c Case) {
	t := h.T
	key, err := caseKey(c)
	if err != nil {
		t.Fatalf("%s (%s): %v", c.ID, c.Pos, err)
	}
	row := h.Row(key, 0)
	h.Dest(row)
	if c.Rejected == "" {
		op, err := h.D.Get(h.Ctx, []driver.Row{row}, driver.Hint{})
		if err != nil {
			t.Fatalf("%s (%s): a get of a %d-byte key %q was refused (%s); the spec admits keys of up to %d bytes", c.ID, c.Pos, len(key), key, CallError("Get", err), c.KeyBytes)
		}
		h.Wait(op, "get of key "+key, 1)
		return
	}
	for _, call := range []struct {
		name string
		run  func() (driver.Operation, error)
	}{
		{"Put", func() (driver.Operation, error) { return h.D.Put(h.Ctx, []driver.Row{row}) }},
		{"Get", func() (driver.Operation, error) { return h.D.Get(h.Ctx, []driver.Row{row}, driver.Hint{}) }},
	} {
		op, err := call.run()
		var re *driver.RejectedError
		switch {
		case err == nil:
			h.Wait(op, call.name+" of key "+key, 1)
			t.Errorf("%s (%s): %s of key %q (%s) was admitted; the spec's keys block refuses it with %q", c.ID, c.Pos, call.name, key, c.Key, c.Rejected)
		case !errors.As(err, &re):
			t.Errorf("%s (%s): %s of key %q failed with %v; want a driver.RejectedError naming %q", c.ID, c.Pos, call.name, key, err, c.Rejected)
		case re.Rule != c.Rejected:
			t.Errorf("%s (%s): %s of key %q was refused by rule %q (%s); want %q", c.ID, c.Pos, call.name, key, re.Rule, re.Reason, c.Rejected)
		}
	}
}

// caseKey builds the key of an admission case: a driver key under the
// prefix "conformance/keys" (whose hex name pads it to KeyBytes for the
// limit shapes), or a key of at most 9 bytes with the shape's one flaw in
// its prefix, short enough that no spec's max_bytes (at least 9) refuses it
// first.
func caseKey(c Case) (string, error) {
	const name = "00"
	switch c.Key {
	case KeyAtLimit, KeyOverLimit:
		prefix := "conformance/keys"
		if c.KeyBytes < 24 {
			prefix = "k"
		}
		pad := c.KeyBytes - len(prefix) - len("/v1/")
		if pad%2 == 1 { // a hex name has an even length; lengthen the prefix instead
			prefix, pad = prefix+"x", pad-1
		}
		if pad < 2 {
			return "", fmt.Errorf("a key of %d bytes is too short for the prefix %q", c.KeyBytes, prefix)
		}
		return prefix + "/v1/" + strings.Repeat("ab", pad/2), nil
	case KeyWithSpace:
		return "a b/v1/" + name, nil
	case KeyWithControl:
		return "a\tb/v1/" + name, nil
	case KeyWithNonASCII:
		return "a\u00fc/v1/" + name, nil
	case KeyDotSegment:
		return "./v1/" + name, nil
	case KeyDotDotSegment:
		return "../v1/" + name, nil
	}
	return "", fmt.Errorf("unknown key shape %v", c.Key)
}

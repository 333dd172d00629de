package rules

import (
	"fmt"

	"github.com/kvblob/kvblob/runtime/driver"
)

// The types below are what code generated from a spec declares: a spec's
// rules become data (a CallRule per SDK call, one Admission, the refused
// environment), and the logic that applies them lives here, once.

// Meaning is what one answer means for a row, as the spec states it. For a
// FAULT, Text is the spec's own words, added to the fault's text.
type Meaning struct {
	Mapping Mapping
	Text    string
}

// CallRule is what a spec says about one SDK call's answers.
type CallRule struct {
	// Call is the SDK call's name, as fault texts print it.
	Call string
	// Access says when the call stops touching the caller's memory.
	Access AccessRule
	// Sized: the call answers a byte count per row, or a negative code.
	Sized bool
	// Whole and Short are a sized call's outcomes for a count equal to the
	// row's length, and for any other count.
	Whole, Short Meaning
	// Codes holds the outcome of each code the spec maps.
	Codes map[int64]Meaning
	// Otherwise is the outcome of every other code.
	Otherwise Meaning
	// CodeName names a code in fault texts (the generated Code.String).
	CodeName func(code int64) string
}

// Map returns what the call's answer means for a row of rowBytes bytes
// (rowBytes is ignored for a call that answers codes only).
func (c *CallRule) Map(answer, rowBytes int64) Mapping {
	if c.Sized && answer >= 0 {
		if answer == rowBytes {
			return c.Whole.apply(0, nil)
		}
		return c.Short.apply(0, func() string { return fmt.Sprintf("%s answered %d bytes for a row of %d", c.Call, answer, rowBytes) })
	}
	o, ok := c.Codes[answer]
	if !ok {
		o = c.Otherwise
	}
	return o.apply(answer, func() string { return fmt.Sprintf("%s answered %s (%d)", c.Call, c.CodeName(answer), answer) })
}

// apply returns the outcome's mapping. A FAULT or DECLINED carries the
// store's answer: its code (0 for a size) and a text saying what the call
// answered (built by answered, only then: the other answers allocate
// nothing), and the spec's own words when it has some, so that a test or
// an operator can tell which answer caused it.
func (o Meaning) apply(code int64, answered func() string) Mapping {
	m := o.Mapping
	if st := m.Result.Status; st == driver.Fault || st == driver.Declined {
		text := answered()
		if o.Text != "" {
			text += ": " + o.Text
		}
		m.Result = driver.Result{Status: st, Code: code, Text: text}
	}
	return m
}

// CodeCall is a call that answers a code per row: a generated Calls
// table holds one per such call of the spec, so a driver reaches each of
// its calls by a typed field, never by name. Its rule is unexported, so no
// caller can change what another maps.
type CodeCall struct{ rule *CallRule }

// NewCodeCall wraps r, a call that answers codes (r.Sized false); generated
// code calls it.
func NewCodeCall(r *CallRule) CodeCall { return CodeCall{rule: r} }

// Map returns what the call's answer code means for a row.
func (c CodeCall) Map(answer int64) Mapping { return c.rule.Map(answer, 0) }

// Access says when the call's access to the caller's memory ends.
func (c CodeCall) Access() AccessRule { return c.rule.Access }

// Name is the call's name in the spec.
func (c CodeCall) Name() string { return c.rule.Call }

// SizeCall is a call that answers a byte count per row, or a negative
// code (answers: size), held by a generated Calls table as CodeCall is.
type SizeCall struct{ rule *CallRule }

// NewSizeCall wraps r, a call that answers sizes (r.Sized true);
// generated code calls it.
func NewSizeCall(r *CallRule) SizeCall { return SizeCall{rule: r} }

// Map returns what the call's answer means for a row of rowBytes bytes.
func (c SizeCall) Map(answer, rowBytes int64) Mapping { return c.rule.Map(answer, rowBytes) }

// Access says when the call's access to the caller's memory ends.
func (c SizeCall) Access() AccessRule { return c.rule.Access }

// Name is the call's name in the spec.
func (c SizeCall) Name() string { return c.rule.Call }

// Admission is a spec's admission rules.
type Admission struct {
	// MaxRowsPerOp bounds a call's rows (0: no bound).
	MaxRowsPerOp int
	// MultiSpan admits rows of more than one span.
	MultiSpan bool
	// MaxRowBytes: rows must be under this many bytes (0: no bound).
	MaxRowBytes int64
	// Keys is the spec's key rule (the zero KeyRule admits every key).
	Keys KeyRule
	// Hints admits a non-zero hint on a get.
	Hints bool
	// DeviceMemory admits Device regions at Register.
	DeviceMemory bool
}

// WithMaxRowBytes returns a with the row limit a driver read from its
// deployment at open (a server flag, a master's allocator), for a spec
// whose limits.max_row_bytes is {bound: N, at_open: true}: a.MaxRowBytes
// is the spec's bound. It refuses a limit of 0 or less, and one over the
// bound, since the spec's rules (and its cases) hold only under it.
func (a Admission) WithMaxRowBytes(n int64) (Admission, error) {
	if n <= 0 {
		return a, fmt.Errorf("rules: the row limit read at open is %d; want a positive byte count", n)
	}
	if a.MaxRowBytes > 0 && n > a.MaxRowBytes {
		return a, fmt.Errorf("rules: the row limit read at open is %d bytes, over the spec's bound of %d; the spec holds only under its bound: raise it in the spec if the store really allows more", n, a.MaxRowBytes)
	}
	a.MaxRowBytes = n
	return a, nil
}

// Put checks a put's rows before anything is recorded; live reports
// whether a region has a live registration. A refusal is a RejectedError
// naming the rule.
func (a Admission) Put(rows []driver.Row, live func(*driver.Region) bool) error {
	if err := AdmitRows(rows, a.MaxRowsPerOp); err != nil {
		return err
	}
	if err := AdmitKeys(rows); err != nil {
		return err
	}
	if err := AdmitKeyRule(rows, a.Keys); err != nil {
		return err
	}
	return AdmitSpans(rows, a.MultiSpan, a.MaxRowBytes, live)
}

// Get checks a get's hint, then its rows as Put does.
func (a Admission) Get(rows []driver.Row, hint driver.Hint, live func(*driver.Region) bool) error {
	if err := AdmitHint(hint, a.Hints); err != nil {
		return err
	}
	return a.Put(rows, live)
}

// Register checks a region before registration.
func (a Admission) Register(r *driver.Region) error { return AdmitRegion(r, a.DeviceMemory) }

// EnvRule is an environment variable a driver refuses unless it holds one
// of Allow.
type EnvRule struct {
	Name   string
	Allow  []string
	Reason string
}

// CheckEnvironment refuses the first variable of rules whose value getenv
// reports outside its Allow list, naming the value and the reason.
func CheckEnvironment(rules []EnvRule, getenv func(string) string) error {
	for _, r := range rules {
		v := getenv(r.Name)
		ok := false
		for _, a := range r.Allow {
			ok = ok || a == v
		}
		if !ok {
			return driver.Reject("environment", "%s=%q is refused: %s", r.Name, v, r.Reason)
		}
	}
	return nil
}

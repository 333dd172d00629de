package gen

import (
	"fmt"
	"go/token"
	"regexp"
)

var packageRE = regexp.MustCompile(`^[a-z][a-z0-9]*$`)

// validate checks what the schema alone cannot: names, references, and
// rules that must agree with each other. It runs whether or not the schema
// found errors, and checks only what the schema could read (d.ok, d.bad).
func (d *decoder) validate(s *Spec) {
	at := func(p Pos, format string, args ...any) {
		d.errs = append(d.errs, Error{Pos: p, Msg: fmt.Sprintf(format, args...)})
	}
	top := Pos{d.file, 1, 1}
	if d.ok["variant"] && !identRE.MatchString(s.Variant) {
		at(s.VariantPos, "variant %q must be lower-case letters, digits and _, starting with a letter: it becomes the Go constant Variant<Name> of the store's package", s.Variant)
	}
	switch {
	case d.ok["store"] && s.Store == "":
		at(s.StorePos, "store is empty; want the store's name, e.g. \"mooncake\"")
	case d.ok["store"] && (!packageRE.MatchString(s.Store) || token.IsKeyword(s.Store)):
		at(s.StorePos, "store %q must be lower-case letters and digits: it names the store's generated package (generated/%s)", s.Store, s.Store)
	}
	if d.ok["sdk"] && len(s.SDK.Versions) == 0 {
		at(top, "sdk.versions is empty; want the SDK version or versions this spec was read from")
	}

	// The code table: names are unique (the decoder refuses repeated keys),
	// and so must values be.
	byValue := map[int64]Code{}
	for _, c := range s.Codes {
		if d.bad[c.Pos] {
			continue
		}
		if prev, ok := byValue[c.Value]; ok {
			at(c.Pos, "code %s repeats value %d of code %s (%s)", c.Name, c.Value, prev.Name, prev.Pos)
			continue
		}
		byValue[c.Value] = c
	}

	// Each code becomes a Go constant of the store's package, beside the
	// names the package always declares: a code whose Go name is taken
	// would not compile. (Names of the store's other specs are CheckSet's.)
	taken := map[string]string{}
	for _, n := range packageNames {
		taken[n] = "the generated package's own " + n
	}
	// Each call becomes a field of the store's Calls: two calls whose Go
	// names agree would be one field.
	fields := map[string]*Call{}
	for _, c := range s.Calls {
		if prev, ok := fields[goName(c.Name)]; ok && !d.bad[c.Pos] {
			at(c.Pos, "call %s becomes the Go name %s, as call %s (%s) does; the generated Calls would have one field for both, so give the call another name", c.Name, goName(c.Name), prev.Name, prev.Pos)
			continue
		}
		fields[goName(c.Name)] = c
	}
	for _, c := range s.Codes {
		g := goName(c.Name)
		if prev, ok := taken[g]; ok && !d.bad[c.Pos] {
			at(c.Pos, "code %s becomes the Go name %s, which %s declares too; the generated package would not compile, so give the code another name", c.Name, g, prev)
			continue
		}
		taken[g] = fmt.Sprintf("code %s (%s)", c.Name, c.Pos)
	}

	// lastStep holds, per op, the last call of that op in the spec's order
	// that is a step of the operation (a cleanup call with cases: false is
	// not): only a call before it may say CONTINUE.
	lastStep := map[string]*Call{}
	for _, c := range s.Calls {
		if !d.bad[c.Pos] && !c.NoCases {
			lastStep[c.Op] = c
		}
	}
	ops := map[string]bool{}
	callsRead := d.ok["calls"]
	for _, c := range s.Calls {
		d.validateCall(s, c, at)
		d.validateContinue(c, lastStep[c.Op], at)
		if c.TouchesMemory {
			ops[c.Op] = true
		}
		callsRead = callsRead && !d.bad[c.Pos]
	}
	d.validateReadyEvidence(s, at)
	for _, op := range []string{"put", "get"} {
		if callsRead && !ops[op] {
			at(top, "no call with op %q touches memory; a store needs one to move rows", op)
		}
	}

	listed := map[string]bool{}
	for _, r := range s.Admission {
		if listed[r.Name] {
			at(r.Pos, "admission rule %q listed twice", r.Name)
		}
		listed[r.Name] = true
	}
	limitsOK, limitsGiven := d.ok["limits"]
	keysOK, keysGiven := d.ok["keys"]
	if !d.ok["admission"] || !d.ok["capabilities"] || limitsGiven && !limitsOK || keysGiven && !keysOK {
		return // what the admission list needs cannot be told
	}
	need := func(rule string, why string) {
		if !listed[rule] {
			at(s.AdmissionPos, "admission lacks %q, which %s; want it in the list", rule, why)
		}
	}
	need("empty_key", "every store needs")
	need("repeated_key", "every store needs")
	need("span_outside_registration", "every store needs")
	if !s.Capabilities.MultiSpan {
		need("multi_span", "capabilities.multi_span: false needs")
	}
	if !s.Capabilities.Hints {
		need("hint", "capabilities.hints: false needs")
	}
	if !s.Capabilities.DeviceMemory {
		need("device_region", "capabilities.device_memory: false needs")
	}
	if s.MaxRowBytes > 0 {
		need("row_too_large", "limits.max_row_bytes needs")
	} else if listed["row_too_large"] {
		at(s.AdmissionPos, "admission lists \"row_too_large\" but limits.max_row_bytes is not set")
	}
	if keysGiven && s.Keys.MaxBytes == 0 && len(s.Keys.Refuse) == 0 && !s.Keys.WellFormed {
		at(s.Keys.Pos, "keys sets no rule; want max_bytes, refuse or well_formed: true, or leave keys out")
	}
	// The key rule: each part of the keys block is enforced by the admission
	// rule that names it, and a rule listed without its part enforces nothing.
	for _, k := range []struct {
		rule, part string
		set        bool
	}{
		{"key_too_long", "keys.max_bytes", s.Keys.MaxBytes > 0},
		{"key_bytes", "keys.refuse", len(s.Keys.Refuse) > 0},
		{"key_format", "keys.well_formed: true", s.Keys.WellFormed},
	} {
		switch {
		case k.set:
			need(k.rule, k.part+" needs")
		case listed[k.rule]:
			for _, r := range s.Admission {
				if r.Name == k.rule {
					at(r.Pos, "admission lists %q but %s is not set; set it in the keys block, or remove the rule", k.rule, k.part)
				}
			}
		}
	}
}

func (d *decoder) validateCall(s *Spec, c *Call, at func(Pos, string, ...any)) {
	mapped := map[string]bool{}
	for _, r := range c.Codes {
		mapped[r.Code] = true
		if _, ok := s.CodeByName(r.Code); !ok && d.ok["codes"] {
			at(r.Pos, "call %s maps code %q, which the code table does not declare", c.Name, r.Code)
		}
	}
	if d.bad[c.Pos] {
		return // its op, memory or answers could not be read
	}
	if c.TouchesMemory && c.AccessEnd == "" {
		at(c.Pos, "call %s touches memory but has no access_end; want %s", c.Name, quoteList(accessEnds))
	}
	if !c.TouchesMemory && c.AccessEnd != "" {
		at(c.Pos, "call %s touches no memory, so it takes no access_end", c.Name)
	}
	switch c.Answers {
	case "size":
		if c.Whole == nil || c.Short == nil {
			at(c.Pos, "call %s answers sizes; it needs both \"whole\" and \"short\"", c.Name)
		}
	case "code":
		if c.Whole != nil || c.Short != nil {
			at(c.Pos, "call %s answers codes; \"whole\" and \"short\" are for size answers", c.Name)
		}
		if len(c.Codes) == 0 {
			at(c.Pos, "call %s answers codes but maps none; list its success code under codes", c.Name)
		}
	}
	if c.Otherwise == nil {
		at(c.Pos, "call %s has no \"otherwise\"; every code needs a row result", c.Name)
	}
	for _, r := range c.Codes {
		if r.Example != "" {
			at(r.Pos, "code %s of call %s has an example; only \"otherwise\" takes one", r.Code, c.Name)
		}
		// A sized call reads every answer >= 0 as a byte count (whole or
		// short), so a rule for such a code never applies.
		if code, ok := s.CodeByName(r.Code); ok && c.Answers == "size" && code.Value >= 0 && !d.bad[code.Pos] {
			at(r.Pos, "call %s answers sizes, so its answer %d reads as a byte count and the rule for code %s can never apply; a size-answering call maps only negative codes", c.Name, code.Value, r.Code)
		}
	}
	if c.Whole != nil && c.Whole.Example != "" || c.Short != nil && c.Short.Example != "" {
		at(c.Pos, "call %s: only \"otherwise\" takes an example", c.Name)
	}
	if o := c.Otherwise; o != nil && o.Example != "" {
		code, ok := s.CodeByName(o.Example)
		switch {
		case !ok:
			at(o.Pos, "otherwise of call %s has example %q, which the code table does not declare", c.Name, o.Example)
		case mapped[o.Example]:
			at(o.Pos, "otherwise of call %s has example %q, which the call maps itself; want a code it does not map", c.Name, o.Example)
		case c.Answers == "size" && code.Value >= 0:
			at(o.Pos, "otherwise of call %s has example %q (%d), which reads as a size; want a negative code", c.Name, o.Example, code.Value)
		}
	}
	check := func(o *Meaning, what string) {
		if o == nil || d.bad[o.Pos] {
			return
		}
		if c.Op == "get" && o.Written == "" {
			at(o.Pos, "%s of get call %s needs \"written\" (no, maybe or yes)", what, c.Name)
		}
		if c.Op == "put" && o.Written != "" && o.Written != "no" {
			at(o.Pos, "%s of put call %s says written %q; a put never writes its sources", what, c.Name, o.Written)
		}
		if o.Result == "MISS" && o.Written != "no" && c.Op == "get" {
			at(o.Pos, "%s of call %s is a MISS whose destination may be written; a MISS leaves it untouched", what, c.Name)
		}
		// The READY promise: a READY row holds exactly the row's bytes.
		if o.Result == "READY" {
			switch {
			case what == "short":
				at(o.Pos, "short of call %s is READY, but a size other than the row's length is never the whole row; want FAULT (or another result that is not READY)", c.Name)
			case what == "otherwise":
				at(o.Pos, "otherwise of call %s is READY, but otherwise answers every code the spec does not list, the SDK's failures included; want FAULT, and list under codes each code that means READY", c.Name)
			}
			if c.Op == "get" && o.Written != "" && o.Written != "yes" {
				at(o.Pos, "%s of get call %s is READY with written %q, but a READY get has written the whole row into its destination; want written \"yes\", or a result that is not READY", what, c.Name, o.Written)
			}
		}
		if o.Result == "NOT_READY" && o.Written == "yes" {
			at(o.Pos, "%s of call %s is NOT_READY with written \"yes\", but NOT_READY says another writer holds the key and the row was not read; want written \"no\" (or \"maybe\")", what, c.Name)
		}
		if o.KeepsAccess && c.AccessEnd != "unless_kept" {
			at(o.Pos, "%s of call %s keeps access, but the call's access_end is %q; keeps_access needs access_end \"unless_kept\"", what, c.Name, c.AccessEnd)
		}
		switch o.FollowUp {
		case "ask_existence":
			if o.IfExists == "" || o.IfAbsent == "" {
				at(o.Pos, "%s of call %s asks existence; it needs if_exists and if_absent", what, c.Name)
			}
		case "reread_once":
			if c.Op != "get" {
				at(o.Pos, "%s of call %s rereads, but only a get can reread", what, c.Name)
			}
		case "keep_open", "revoke_in_drain", "end_again":
			if c.Op != "put" {
				at(o.Pos, "%s of call %s keeps a write open, but only a put writes", what, c.Name)
			}
		case "ends_at_teardown":
			if !o.KeepsAccess {
				at(o.Pos, "%s of call %s says its kept access ends at teardown, but it keeps no access; ends_at_teardown needs keeps_access: true", what, c.Name)
			}
		}
		if o.FollowUp != "ask_existence" && (o.IfExists != "" || o.IfAbsent != "" || o.IfOther != "") {
			at(o.Pos, "%s of call %s has if_exists/if_absent/if_other without follow_up: ask_existence", what, c.Name)
		}
		if o.IfOther == "READY" {
			at(o.Pos, "%s of call %s is READY when the key holds something other than the row's whole object, but READY promises the row's bytes are stored; want FAULT, NOT_READY or DECLINED for if_other", what, c.Name)
		}
	}
	check(c.Whole, "whole")
	check(c.Short, "short")
	for i := range c.Codes {
		check(&c.Codes[i].Meaning, "code "+c.Codes[i].Code)
	}
	check(c.Otherwise, "otherwise")
}

// validateContinue checks CONTINUE: a middle step of a multi-call operation
// that says "go on to the next call", never a row's result. Only a step that
// another call of its op follows may say it, and only for an answer the
// spec names (a code, or a size-answering call's whole answer): "otherwise"
// and "short" answer failures, and a cleanup call ends no step.
func (d *decoder) validateContinue(c, last *Call, at func(Pos, string, ...any)) {
	if d.bad[c.Pos] {
		return
	}
	check := func(o *Meaning, what string) {
		if o == nil || d.bad[o.Pos] || o.Result != "CONTINUE" {
			return
		}
		switch {
		case what == "otherwise" || what == "short":
			at(o.Pos, "%s of call %s is CONTINUE, but %s answers failures; want FAULT (or another row result), and list under codes each code that means go on", what, c.Name, what)
		case c.NoCases:
			at(o.Pos, "%s of call %s is CONTINUE, but %s is a cleanup call (cases: false), not a step of its operation; want READY or FAULT", what, c.Name, c.Name)
		case c == last:
			at(o.Pos, "%s of call %s is CONTINUE, but %s is the last call of its %s operation, so nothing goes on after it; want READY (or another row result)", what, c.Name, c.Name, c.Op)
		case o.FollowUp != "none" || o.KeepsAccess:
			at(o.Pos, "%s of call %s is CONTINUE with a follow-up or kept access; CONTINUE only says go on to the next call", what, c.Name)
		}
	}
	check(c.Whole, "whole")
	check(c.Short, "short")
	for i := range c.Codes {
		check(&c.Codes[i].Meaning, "code "+c.Codes[i].Code)
	}
	check(c.Otherwise, "otherwise")
}

// notStored are the row results that say the row's bytes are not stored or
// not delivered: absent (MISS), held by another writer (NOT_READY), refused
// by a full store (DECLINED).
var notStored = map[string]string{
	"MISS":      "the key holds no object",
	"NOT_READY": "another writer holds the key",
	"DECLINED":  "the store refused the row",
}

// validateReadyEvidence refuses every rule that can promise READY for bytes
// not stored or not delivered. READY needs evidence of the row's bytes: a
// put's answer that stored them, a get's answer that delivered them. The
// spec's own rules say which answers are not that evidence:
//
//   - a code that any call maps to MISS, NOT_READY or DECLINED means the row
//     is absent, held by another writer or refused, whichever call answers
//     it: no call may map it to READY;
//   - a get that answers sizes delivers the row only by its whole answer:
//     its codes are failures (negative), and none of them may be READY.
//
// A cleanup call (cases: false) is neither: its READY says the cleanup is
// done (a revoke of an absent session, say), never that a row is stored.
func (d *decoder) validateReadyEvidence(s *Spec, at func(Pos, string, ...any)) {
	type meaning struct {
		result, call string
		pos          Pos
	}
	says := map[string]meaning{} // code -> the first rule saying it is not stored
	for _, c := range s.Calls {
		if d.bad[c.Pos] || c.NoCases {
			continue
		}
		for _, r := range c.Codes {
			if _, ok := notStored[r.Result]; ok && !d.bad[r.Meaning.Pos] {
				if _, seen := says[r.Code]; !seen {
					says[r.Code] = meaning{r.Result, c.Name, r.Meaning.Pos}
				}
			}
		}
	}
	for _, c := range s.Calls {
		if d.bad[c.Pos] || c.NoCases {
			continue
		}
		for _, r := range c.Codes {
			if r.Result != "READY" || d.bad[r.Meaning.Pos] {
				continue
			}
			if m, ok := says[r.Code]; ok {
				at(r.Meaning.Pos, "code %s of call %s is READY, but call %s maps %s to %s (%s): %s, so the code is no evidence that the row's bytes are %s; want the result that says so (%s), or FAULT",
					r.Code, c.Name, m.call, r.Code, m.result, m.pos, notStored[m.result], map[string]string{"put": "stored", "get": "delivered"}[c.Op], m.result)
				continue
			}
			// A code >= 0 of a sized call reads as a size, and validateCall
			// said so already.
			if code, ok := s.CodeByName(r.Code); ok && c.Op == "get" && c.Answers == "size" && code.Value < 0 {
				at(r.Meaning.Pos, "code %s of get call %s is READY, but %s answers sizes: a code is a failure, and only its whole answer delivers the row's bytes; want MISS, NOT_READY or FAULT", r.Code, c.Name, c.Name)
			}
		}
	}
}

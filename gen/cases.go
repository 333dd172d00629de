package gen

import (
	"strings"

	"github.com/dave/jennifer/jen"
)

// specCase is one conformance case derived from a call's rules.
type specCase struct {
	id, pos     string
	op, call    string
	code        *Code
	size        string // "", whole, short
	exists      bool
	other       bool  // the key holds something other than the row's whole object
	reread      *Code // reread answers this code
	rereadWhole bool  // reread answers the whole row
	want        string
	wantCode    int64
	written     string
	accessEnded bool
	stageable   bool
	// An admission case of the keys block: the key's shape, its length
	// for the limit shapes, and the rule that refuses it ("": admitted).
	key      string
	keyBytes int64
	rejected string
}

// Cases derives the conformance cases of a spec: one per size answer, per
// mapped code and for a representative unmapped code of each call, two for
// each follow-up (exists or absent; reread whole or expired again).
func (s *Spec) cases() []specCase {
	var out []specCase
	for _, c := range s.Calls {
		if c.NoCases {
			continue
		}
		base := func(o *Meaning, id string) specCase {
			written := o.Written
			if c.Op == "put" || written == "" {
				written = "no"
			}
			want := o.Result
			if want == "CONTINUE" {
				// The operation goes on; with every later call succeeding,
				// it ends READY. A READY get has written the whole row, so
				// the case wants "yes" whatever this step wrote: the step's
				// own written (an open or a lookup says "no") is what the
				// destination holds if the operation stops after it.
				want = "READY"
				if c.Op == "get" {
					written = "yes"
				}
			}
			return specCase{
				id: c.Name + "/" + id, pos: o.Pos.String(), op: c.Op, call: c.Name,
				want: want, written: written, stageable: o.Stageable,
				accessEnded: s.accessEnded(c, o.KeepsAccess),
			}
		}
		if c.Answers == "size" {
			w := base(c.Whole, "whole")
			w.size = "whole"
			sh := base(c.Short, "short")
			sh.size = "short"
			out = append(out, w, sh)
		}
		withCode := func(o *Meaning, code Code, id string) {
			k := base(o, id)
			k.code = &code
			if o.Result == "FAULT" {
				k.wantCode = code.Value
			}
			switch o.FollowUp {
			case "ask_existence":
				ex, ab := k, k
				ex.id, ex.exists, ex.want, ex.wantCode = k.id+"/exists", true, o.IfExists, 0
				ab.id, ab.want, ab.wantCode = k.id+"/absent", o.IfAbsent, 0
				if o.IfExists == "FAULT" {
					ex.wantCode = code.Value
				}
				if o.IfAbsent == "FAULT" {
					ab.wantCode = code.Value
				}
				out = append(out, ex, ab)
				if o.IfOther != "" {
					ot := k
					ot.id, ot.exists, ot.other, ot.want, ot.wantCode = k.id+"/other", true, true, o.IfOther, 0
					if o.IfOther == "FAULT" {
						ot.wantCode = code.Value
					}
					out = append(out, ot)
				}
			case "reread_once":
				whole, again := k, k
				whole.id, whole.rereadWhole = k.id+"/reread-whole", true
				whole.want, whole.wantCode = "READY", 0
				if c.Whole != nil {
					whole.want = c.Whole.Result
				}
				again.id, again.reread = k.id+"/reread-again", &code
				again.want, again.wantCode = "FAULT", code.Value
				out = append(out, whole, again)
			default:
				out = append(out, k)
			}
		}
		mapped := map[string]bool{}
		for i := range c.Codes {
			r := &c.Codes[i]
			mapped[r.Code] = true
			code, _ := s.CodeByName(r.Code)
			withCode(&r.Meaning, code, r.Code)
		}
		if rep, ok := s.unmapped(c, mapped); ok {
			withCode(c.Otherwise, rep, "otherwise-"+rep.Name)
		}
	}
	return append(out, s.keyCases()...)
}

// keyShapes name the conformance.KeyShape of each key case, and keyRules the
// driver rule each refusal names.
var (
	keyShapes = map[string]string{
		"at-limit": "KeyAtLimit", "over-limit": "KeyOverLimit",
		"space": "KeyWithSpace", "control": "KeyWithControl", "non_ascii": "KeyWithNonASCII",
		"dot-segment": "KeyDotSegment", "dotdot-segment": "KeyDotDotSegment",
	}
	keyRules = map[string]string{"key_too_long": "RuleKeyTooLong", "key_bytes": "RuleKeyBytes", "key_format": "RuleKeyFormat"}
)

// keyCases derives the admission cases of the keys block: a key at the
// length limit is admitted and one a byte over it refused; a key holding a
// byte of each refused class is refused; a key with a "." or ".." prefix
// segment is refused when keys must be well formed. Admission needs no
// server, so every such case is stageable.
func (s *Spec) keyCases() []specCase {
	k := s.Keys
	var out []specCase
	add := func(shape string, pos Pos, n int64, rule string) {
		id := strings.ReplaceAll(shape, "_", "-")
		out = append(out, specCase{id: "keys/" + id, pos: pos.String(), op: "put", key: shape, keyBytes: n, rejected: rule, stageable: true})
	}
	if k.MaxBytes > 0 {
		add("at-limit", k.MaxBytesPos, k.MaxBytes, "")
		add("over-limit", k.MaxBytesPos, k.MaxBytes+1, "key_too_long")
	}
	for i, c := range k.Refuse {
		add(c, k.RefusePos[i], 0, "key_bytes")
	}
	if k.WellFormed {
		add("dot-segment", k.WellFormedPos, 0, "key_format")
		add("dotdot-segment", k.WellFormedPos, 0, "key_format")
	}
	return out
}

// unmapped picks the code of the call's "otherwise" case: its example, or
// the first code of the table the call does not map (and, for a size
// answer, that cannot be read as a size).
func (s *Spec) unmapped(c *Call, mapped map[string]bool) (Code, bool) {
	if c.Otherwise != nil && c.Otherwise.Example != "" {
		return s.CodeByName(c.Otherwise.Example)
	}
	for _, code := range s.Codes {
		if mapped[code.Name] || (c.Answers == "size" && code.Value >= 0) {
			continue
		}
		return code, true
	}
	return Code{}, false
}

// accessEnded says whether an operation whose call c answered an outcome
// (keeping access or not) proves its access ended, when every other call of
// its op succeeds.
func (s *Spec) accessEnded(c *Call, kept bool) bool {
	for _, other := range s.Calls {
		if other.Op != c.Op || !other.TouchesMemory {
			continue
		}
		switch other.AccessEnd {
		case "never":
			return false
		case "unless_kept":
			if other == c && kept {
				return false
			}
		}
	}
	return true
}

func (e *emitter) cases(f *jen.File) {
	cs := e.s.cases()
	f.Commentf("%s returns the conformance cases derived from %s, a new slice each", e.s.GoName(), e.s.File)
	f.Comment("call: the SDK answers a call for one row, and the driver must report")
	f.Comment("the wanted result and access state. Package conformance runs them")
	f.Comment("through a store's stager.")
	f.Func().Id(e.s.GoName()).Params().Index().Add(qual("Case")).Block(jen.Return(jen.Index().Add(qual("Case")).ValuesFunc(func(g *jen.Group) {
		for _, k := range cs {
			if k.key != "" {
				d := []litField{
					named("ID", jen.Lit(k.id)),
					named("Pos", jen.Lit(k.pos)),
					named("Op", qual("OpPut")),
					named("Stageable", jen.True()),
					named("Key", qual(keyShapes[k.key])),
				}
				if k.keyBytes > 0 {
					d = append(d, named("KeyBytes", jen.Lit(int(k.keyBytes))))
				}
				if k.rejected != "" {
					d = append(d, named("Rejected", qual(keyRules[k.rejected])))
				}
				g.Add(values(nil, d))
				continue
			}
			// The fields in the order of conformance.Case.
			d := []litField{
				named("ID", jen.Lit(k.id)),
				named("Pos", jen.Lit(k.pos)),
				named("Op", qual(map[string]string{"put": "OpPut", "get": "OpGet"}[k.op])),
				named("Call", jen.Lit(k.call)),
				named("Answer", answer(k.code, k.size)),
			}
			if k.exists {
				d = append(d, named("Exists", jen.True()))
			}
			if k.other {
				d = append(d, named("Other", jen.True()))
			}
			if k.rereadWhole {
				d = append(d, named("Reread", jen.Op("&").Add(answer(nil, "whole"))))
			} else if k.reread != nil {
				d = append(d, named("Reread", jen.Op("&").Add(answer(k.reread, ""))))
			}
			d = append(d, named("Want", qual(statusIdents[k.want])))
			if k.wantCode != 0 {
				d = append(d, named("WantCode", jen.Lit(int(k.wantCode))))
			}
			d = append(d, named("Written", qual(writtenIdents[k.written])), named("AccessEnded", jen.Lit(k.accessEnded)))
			if k.stageable {
				d = append(d, named("Stageable", jen.True()))
			}
			g.Add(values(nil, d))
		}
	})))
}

func answer(code *Code, size string) *jen.Statement {
	switch size {
	case "whole":
		return qual("Answer").Values(jen.Dict{jen.Id("Size"): qual("SizeWhole")})
	case "short":
		return qual("Answer").Values(jen.Dict{jen.Id("Size"): qual("SizeShort")})
	}
	if code == nil {
		panic("gen: case answer has neither code nor size")
	}
	return qual("Answer").Values(jen.Id("Code").Op(":").Lit(int(code.Value)), jen.Id("CodeName").Op(":").Lit(code.Name))
}

package gen

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dave/jennifer/jen"
)

/*
spec emits, for spec/redis-7.yaml:

	// Redis7 returns what spec/redis-7.yaml says ...
	func Redis7() *Spec { return specRedis7 }

	var specRedis7 = buildRedis7()

	func buildRedis7() *Spec {
		return &Spec{
			Spec: &rules.Spec{Store: Store, Source: "spec/redis-7.yaml", SDKName: "redis-server", ...},
			Calls: callsRedis7(),
			codes: []Code{OK, Nil, ...},
		}
	}
*/
func (e *emitter) spec(f *jen.File) {
	s := e.s
	name := s.GoName()
	f.Commentf("%s returns what %s says about store %q (%s %s):", name, s.File, s.Store, s.SDK.Name, strings.Join(s.SDK.Versions, ", "))
	f.Comment("the same value each call, so a spec is known by its identity (Pick")
	f.Comment("returns one of Specs); it is read only.")
	if s.Comment != "" {
		f.Comment("")
		f.Comment("The spec says:")
		f.Comment("")
		commentLines(f.Comment, s.Comment)
	}
	f.Func().Id(name).Params().Op("*").Id("Spec").Block(jen.Return(jen.Id("spec" + name)))
	f.Line()
	f.Commentf("spec%s is %s's value.", name, name)
	f.Var().Id("spec" + name).Op("=").Id("build" + name).Call()
	f.Line()
	f.Commentf("build%s builds spec%s.", name, name)
	strs := func(l []string) *jen.Statement {
		return jen.Index().String().ValuesFunc(func(g *jen.Group) {
			for _, v := range l {
				g.Lit(v)
			}
		})
	}
	rs := []litField{
		named("Store", jen.Id("Store")),
		named("Source", jen.Lit(s.File)),
		named("SDKName", jen.Lit(s.SDK.Name)),
		named("SDKVersions", strs(s.SDK.Versions)),
	}
	if s.SDK.HasVerified {
		rs = append(rs, named("VerifiesCommits", jen.True()),
			litField{name: jen.Id("SDKVerified"), value: strs(s.SDK.Verified),
				note: "sdk.verified: a build of another commit holds, but is unverified\n(rules.Spec.Verified)."})
	}
	rs = append(rs, named("Capabilities", e.capabilities()), e.admission(), named("Environment", e.environment()))
	if s.MaxRowBytesAtOpen {
		rs = append(rs, litField{name: jen.Id("RowLimitAtOpen"), value: jen.True(),
			note: "The driver reads its row limit at open and admits through\nAdmission.WithMaxRowBytes; Admission.MaxRowBytes is the spec's bound."})
	}
	if c := s.Config; c.Workers != 0 || c.RowsPerBatch != 0 || c.BytesPerBatch != 0 {
		var d []litField
		if c.Workers != 0 {
			d = append(d, named("Workers", jen.Lit(int(c.Workers))))
		}
		if c.RowsPerBatch != 0 {
			d = append(d, named("RowsPerBatch", jen.Lit(int(c.RowsPerBatch))))
		}
		if c.BytesPerBatch != 0 {
			d = append(d, named("BytesPerBatch", jen.Lit(int(c.BytesPerBatch))))
		}
		rs = append(rs, litField{name: jen.Id("Defaults"), value: values(qual("Defaults"), d), note: "Backend defaults (0: the backend's own)."})
	}
	var codes []litField
	for _, c := range s.Codes {
		codes = append(codes, litField{name: jen.Lit(c.Name), value: jen.Int64().Call(jen.Id(goName(c.Name)))})
	}
	rs = append(rs, named("Codes", values(jen.Map(jen.String()).Int64(), codes)))
	d := []litField{
		named("Spec", jen.Op("&").Add(values(qual("Spec"), rs))),
		named("Calls", jen.Id("calls"+name).Call()),
	}
	if s.Variant != "" {
		d = append(d, named("Variant", jen.Id("Variant"+goName(s.Variant))))
	}
	d = append(d, named("codes", jen.Index().Id("Code").ValuesFunc(func(g *jen.Group) {
		for _, c := range s.Codes {
			g.Id(goName(c.Name))
		}
	})))
	f.Func().Id("build" + name).Params().Op("*").Id("Spec").Block(jen.Return(jen.Op("&").Add(values(jen.Id("Spec"), d))))
}

/*
calls emits, for spec/redis-7.yaml:

	func callsRedis7() Calls {
		return Calls{
			// spec/redis-7.yaml:63:3: claim (access: it touches no memory).
			// The call SET key <marker> NX PX <ttl>: ...
			Claim: rules.NewCodeCall(&rules.CallRule{
				Call: "claim", Access: rules.AccessNone,
				Codes: map[int64]rules.Meaning{int64(OK): {...}, ...},
				Otherwise: rules.Meaning{...},
				CodeName: codeName,
			}),
			...
		}
	}
*/
func (e *emitter) calls(f *jen.File) {
	name := e.s.GoName()
	f.Commentf("calls%s is the table of %s's calls: each call's rule (its", name, e.s.File)
	f.Comment("access rule and what each answer means for a row), applied by")
	f.Comment("rules.CallRule.Map.")
	var d []litField
	for _, c := range e.s.Calls {
		d = append(d, e.callRule(c))
	}
	f.Func().Id("calls" + name).Params().Id("Calls").Block(jen.Return(values(jen.Id("Calls"), d)))
}

// callRule returns call c's field of Calls: its rule, wrapped as the
// field's type, with the spec's position, doc and comments above it.
func (e *emitter) callRule(c *Call) litField {
	d := []litField{
		named("Call", jen.Lit(c.Name)),
		named("Access", qual(accessIdents[c.AccessEnd])),
	}
	if c.Answers == "size" {
		d = append(d, named("Sized", jen.True()),
			litField{name: jen.Id("Whole"), value: outcome(c.Whole), note: answerNote(c.Whole.Pos, c.Whole)},
			litField{name: jen.Id("Short"), value: outcome(c.Short), note: answerNote(c.Short.Pos, c.Short)})
	}
	if len(c.Codes) > 0 {
		codes := make([]litField, len(c.Codes))
		for i := range c.Codes {
			r := &c.Codes[i]
			codes[i] = litField{name: jen.Int64().Call(jen.Id(goName(r.Code))), value: meaning(nil, &r.Meaning), note: answerNote(r.Pos, &r.Meaning)}
		}
		d = append(d, named("Codes", values(jen.Map(jen.Int64()).Add(qual("Meaning")), codes)))
	}
	d = append(d, litField{name: jen.Id("Otherwise"), value: outcome(c.Otherwise), note: answerNote(c.Otherwise.Pos, c.Otherwise)},
		named("CodeName", jen.Id("codeName")))
	note := fmt.Sprintf("%s: %s (access: %s).", c.Pos, c.Name, orNone(c.AccessEnd))
	if c.Doc != "" {
		note += "\nThe call " + c.Doc + "."
	}
	if c.Comment != "" {
		note += "\n\n" + c.Comment
	}
	wrap := "NewCodeCall"
	if c.Answers == "size" {
		wrap = "NewSizeCall"
	}
	return litField{name: jen.Id(goName(c.Name)), value: qual(wrap).Call(jen.Op("&").Add(values(qual("CallRule"), d))), note: note}
}

// capabilities emits driver.Capabilities{...} as the spec declares them.
func (e *emitter) capabilities() *jen.Statement {
	caps := e.s.Capabilities
	var d []litField
	set := func(name string, v bool) {
		if v {
			d = append(d, named(name, jen.True()))
		}
	}
	set("Hints", caps.Hints)
	set("AbsentIsMiss", caps.AbsentIsMiss)
	set("DeviceMemory", caps.DeviceMemory)
	set("MultiSpan", caps.MultiSpan)
	set("Probe", caps.Probe)
	set("Evicts", caps.Evicts)
	if caps.MaxRowsPerOp > 0 {
		d = append(d, named("MaxRowsPerOp", jen.Lit(int(caps.MaxRowsPerOp))))
	}
	return values(qual("Capabilities"), d)
}

// admission returns the Admission field: the spec's admission rules as a
// rules.Admission, the rules listed above it.
func (e *emitter) admission() litField {
	s := e.s
	caps := s.Capabilities
	listed := map[string]bool{}
	var names []string
	for _, r := range s.Admission {
		listed[r.Name] = true
		names = append(names, r.Name)
	}
	var d []litField
	if caps.MaxRowsPerOp > 0 {
		d = append(d, named("MaxRowsPerOp", jen.Lit(int(caps.MaxRowsPerOp))))
	}
	if !listed["multi_span"] {
		d = append(d, named("MultiSpan", jen.True()))
	}
	if s.MaxRowBytes > 0 {
		d = append(d, named("MaxRowBytes", jen.Lit(int(s.MaxRowBytes))))
	}
	if k := s.Keys; k.MaxBytes > 0 || len(k.Refuse) > 0 || k.WellFormed {
		var kd []litField
		if k.MaxBytes > 0 {
			kd = append(kd, named("MaxBytes", jen.Lit(int(k.MaxBytes))))
		}
		if len(k.Refuse) > 0 {
			var set *jen.Statement
			for _, c := range k.Refuse {
				id := qual(keyClassIdents[c])
				if set == nil {
					set = id
				} else {
					set = set.Op("|").Add(id)
				}
			}
			kd = append(kd, named("Refuse", set))
		}
		if k.WellFormed {
			kd = append(kd, named("WellFormed", jen.True()))
		}
		d = append(d, named("Keys", values(qual("KeyRule"), kd)))
	}
	if caps.Hints {
		d = append(d, named("Hints", jen.True()))
	}
	if caps.DeviceMemory {
		d = append(d, named("DeviceMemory", jen.True()))
	}
	note := fmt.Sprintf("%s: %s.", s.AdmissionPos, strings.Join(names, ", "))
	if s.MaxRowBytesAtOpen {
		note += "\nMaxRowBytes is the bound of the row limit read at open."
	}
	return litField{name: jen.Id("Admission"), value: values(qual("Admission"), d), note: note}
}

// environment emits the settings the driver refuses, each with its
// reason, sorted by name.
func (e *emitter) environment() *jen.Statement {
	envs := append([]EnvRule(nil), e.s.Environment...)
	sort.Slice(envs, func(i, j int) bool { return envs[i].Name < envs[j].Name })
	return jen.Index().Add(qual("EnvRule")).ValuesFunc(func(g *jen.Group) {
		for _, env := range envs {
			g.Values(jen.Dict{
				jen.Id("Name"): jen.Lit(env.Name),
				jen.Id("Allow"): jen.Index().String().ValuesFunc(func(l *jen.Group) {
					for _, a := range env.Allow {
						l.Lit(a)
					}
				}),
				jen.Id("Reason"): jen.Lit(env.Reason),
			})
		}
	})
}

package gen

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// SpecDiff is what changed between two specs of one store (an SDK
// version's spec and the next one's): the facts a reviewer of a new SDK
// version must read. Field names are stable: 'drivergen diff -json'
// prints it as is.
type SpecDiff struct {
	Old string `json:"old"` // the spec files
	New string `json:"new"`
	// Identity holds changes of store, variant, SDK name and versions.
	Identity []FieldChange `json:"identity"`
	// Codes added, removed or renumbered (same name, another value).
	Codes CodeDiff `json:"codes"`
	// Calls added or removed.
	CallsAdded   []string `json:"calls_added"`
	CallsRemoved []string `json:"calls_removed"`
	// Rules: each answer of a call whose outcome, written, access or
	// follow-up changed, or that is new or gone.
	Rules []RuleChange `json:"rules"`
	// Other holds changes of capabilities, limits and admission.
	Other []FieldChange `json:"other"`
	// Generated cases added and removed (by ID), and those whose
	// expectation changed.
	Cases CaseDiff `json:"cases"`
}

// CodeDiff groups the code table's changes.
type CodeDiff struct {
	Added      []CodeEntry  `json:"added"`
	Removed    []CodeEntry  `json:"removed"`
	Renumbered []CodeChange `json:"renumbered"`
}

// CodeEntry is one code of one spec.
type CodeEntry struct {
	Name  string `json:"name"`
	Value int64  `json:"value"`
	Pos   string `json:"pos"`
}

// CodeChange is a code whose value changed.
type CodeChange struct {
	Name     string `json:"name"`
	OldValue int64  `json:"old_value"`
	NewValue int64  `json:"new_value"`
	OldPos   string `json:"old_pos"`
	NewPos   string `json:"new_pos"`
}

// FieldChange is one field that differs.
type FieldChange struct {
	Field  string `json:"field"`
	Old    string `json:"old"`
	New    string `json:"new"`
	OldPos string `json:"old_pos,omitempty"`
	NewPos string `json:"new_pos,omitempty"`
}

// RuleChange is one call rule that changed: Answer is "access_end",
// "touches_memory", "whole", "short", "otherwise" or a code name.
type RuleChange struct {
	Call    string        `json:"call"`
	Answer  string        `json:"answer"`
	Kind    string        `json:"kind"` // added, removed, changed
	Old     string        `json:"old,omitempty"`
	New     string        `json:"new,omitempty"`
	OldPos  string        `json:"old_pos,omitempty"`
	NewPos  string        `json:"new_pos,omitempty"`
	Changes []FieldChange `json:"changes,omitempty"`
}

// CaseDiff lists generated cases by ID.
type CaseDiff struct {
	Added   []CaseEntry  `json:"added"`
	Removed []CaseEntry  `json:"removed"`
	Changed []CaseChange `json:"changed"`
}

// CaseEntry is one generated case.
type CaseEntry struct {
	ID   string `json:"id"`
	Pos  string `json:"pos"`
	Want string `json:"want"`
}

// CaseChange is a case whose expectation changed.
type CaseChange struct {
	ID     string `json:"id"`
	OldPos string `json:"old_pos"`
	NewPos string `json:"new_pos"`
	Old    string `json:"old"`
	New    string `json:"new"`
}

// Empty reports whether the specs state the same facts.
func (d *SpecDiff) Empty() bool {
	return len(d.Identity)+len(d.Codes.Added)+len(d.Codes.Removed)+len(d.Codes.Renumbered)+
		len(d.CallsAdded)+len(d.CallsRemoved)+len(d.Rules)+len(d.Other)+
		len(d.Cases.Added)+len(d.Cases.Removed)+len(d.Cases.Changed) == 0
}

// verifiedText is sdk.verified as a diff prints it: "-" when the spec
// gives none (every build of its releases is verified).
func verifiedText(s SDK) string {
	if !s.HasVerified {
		return "-"
	}
	return fmt.Sprint(s.Verified)
}

// Diff compares two specs of one store (a's facts, then b's). It is pure:
// callers load the specs.
func Diff(a, b *Spec) *SpecDiff {
	d := &SpecDiff{Old: a.File, New: b.File, Identity: []FieldChange{}, Rules: []RuleChange{}, Other: []FieldChange{},
		CallsAdded: []string{}, CallsRemoved: []string{}}
	field := func(list *[]FieldChange, name, x, y string, px, py Pos) {
		if x != y {
			*list = append(*list, FieldChange{Field: name, Old: x, New: y, OldPos: posOrEmpty(px), NewPos: posOrEmpty(py)})
		}
	}
	field(&d.Identity, "store", a.Store, b.Store, a.StorePos, b.StorePos)
	field(&d.Identity, "variant", a.Variant, b.Variant, a.VariantPos, b.VariantPos)
	field(&d.Identity, "sdk.name", a.SDK.Name, b.SDK.Name, Pos{}, Pos{})
	field(&d.Identity, "sdk.versions", fmt.Sprint(a.SDK.Versions), fmt.Sprint(b.SDK.Versions), Pos{}, Pos{})
	field(&d.Identity, "sdk.verified", verifiedText(a.SDK), verifiedText(b.SDK), Pos{}, Pos{})

	d.Codes = CodeDiff{Added: []CodeEntry{}, Removed: []CodeEntry{}, Renumbered: []CodeChange{}}
	for _, c := range b.Codes {
		old, ok := a.CodeByName(c.Name)
		switch {
		case !ok:
			d.Codes.Added = append(d.Codes.Added, CodeEntry{c.Name, c.Value, c.Pos.String()})
		case old.Value != c.Value:
			d.Codes.Renumbered = append(d.Codes.Renumbered, CodeChange{Name: c.Name,
				OldValue: old.Value, NewValue: c.Value, OldPos: old.Pos.String(), NewPos: c.Pos.String()})
		}
	}
	for _, c := range a.Codes {
		if _, ok := b.CodeByName(c.Name); !ok {
			d.Codes.Removed = append(d.Codes.Removed, CodeEntry{c.Name, c.Value, c.Pos.String()})
		}
	}

	for _, nc := range b.Calls {
		oc := callByName(a, nc.Name)
		if oc == nil {
			d.CallsAdded = append(d.CallsAdded, nc.Name)
			continue
		}
		d.Rules = append(d.Rules, diffCall(oc, nc)...)
	}
	for _, oc := range a.Calls {
		if callByName(b, oc.Name) == nil {
			d.CallsRemoved = append(d.CallsRemoved, oc.Name)
		}
	}

	field(&d.Other, "capabilities", fmt.Sprintf("%+v", a.Capabilities), fmt.Sprintf("%+v", b.Capabilities), Pos{}, Pos{})
	field(&d.Other, "limits.max_row_bytes", fmt.Sprint(a.MaxRowBytes), fmt.Sprint(b.MaxRowBytes), Pos{}, Pos{})
	field(&d.Other, "limits.max_row_bytes.at_open", fmt.Sprint(a.MaxRowBytesAtOpen), fmt.Sprint(b.MaxRowBytesAtOpen), Pos{}, Pos{})
	field(&d.Other, "admission", ruleNames(a.Admission), ruleNames(b.Admission), a.AdmissionPos, b.AdmissionPos)
	field(&d.Other, "environment", fmt.Sprintf("%v", envNames(a.Environment)), fmt.Sprintf("%v", envNames(b.Environment)), Pos{}, Pos{})
	field(&d.Other, "config", fmt.Sprintf("%+v", a.Config), fmt.Sprintf("%+v", b.Config), Pos{}, Pos{})

	d.Cases = diffCases(a.cases(), b.cases())
	return d
}

func posOrEmpty(p Pos) string {
	if p.File == "" {
		return ""
	}
	return p.String()
}

func callByName(s *Spec, name string) *Call {
	for _, c := range s.Calls {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func ruleNames(rs []Rule) string {
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = r.Name
	}
	return "[" + strings.Join(names, " ") + "]"
}

func envNames(es []EnvRule) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Name+"="+strings.Join(e.Allow, "|"))
	}
	return out
}

// diffCall compares the rules of one call in two specs.
func diffCall(a, b *Call) []RuleChange {
	var out []RuleChange
	call := func(answer, x, y string) {
		if x != y {
			out = append(out, RuleChange{Call: a.Name, Answer: answer, Kind: "changed", Old: x, New: y,
				OldPos: a.Pos.String(), NewPos: b.Pos.String()})
		}
	}
	call("op", a.Op, b.Op)
	call("touches_memory", fmt.Sprint(a.TouchesMemory), fmt.Sprint(b.TouchesMemory))
	call("access_end", a.AccessEnd, b.AccessEnd)
	call("answers", a.Answers, b.Answers)
	call("cases", fmt.Sprint(!a.NoCases), fmt.Sprint(!b.NoCases))
	meaning := func(answer string, x, y *Meaning) {
		switch {
		case x == nil && y == nil:
		case x == nil:
			out = append(out, RuleChange{Call: a.Name, Answer: answer, Kind: "added", New: y.summary(), NewPos: y.Pos.String()})
		case y == nil:
			out = append(out, RuleChange{Call: a.Name, Answer: answer, Kind: "removed", Old: x.summary(), OldPos: x.Pos.String()})
		default:
			if ch := x.changes(y); len(ch) > 0 {
				out = append(out, RuleChange{Call: a.Name, Answer: answer, Kind: "changed", Old: x.summary(), New: y.summary(),
					OldPos: x.Pos.String(), NewPos: y.Pos.String(), Changes: ch})
			}
		}
	}
	meaning("whole", a.Whole, b.Whole)
	meaning("short", a.Short, b.Short)
	rule := func(c *Call, code string) *Meaning {
		for i := range c.Codes {
			if c.Codes[i].Code == code {
				return &c.Codes[i].Meaning
			}
		}
		return nil
	}
	for _, r := range b.Codes {
		meaning(r.Code, rule(a, r.Code), &r.Meaning)
	}
	for _, r := range a.Codes {
		if rule(b, r.Code) == nil {
			meaning(r.Code, &r.Meaning, nil)
		}
	}
	meaning("otherwise", a.Otherwise, b.Otherwise)
	return out
}

// summary writes m as the spec would, with only the keys that are set.
func (m *Meaning) summary() string {
	parts := []string{"result: " + m.Result}
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, k+": "+v)
		}
	}
	add("written", m.Written)
	if m.FollowUp != "none" {
		add("follow_up", m.FollowUp)
	}
	if m.KeepsAccess {
		add("keeps_access", "true")
	}
	add("if_exists", m.IfExists)
	add("if_absent", m.IfAbsent)
	add("if_other", m.IfOther)
	if m.Text != "" {
		add("text", strconv.Quote(m.Text))
	}
	if m.Stageable {
		add("stageable", "true")
	}
	add("example", m.Example)
	return "{" + strings.Join(parts, ", ") + "}"
}

// changes lists the fields of m that differ in n.
func (m *Meaning) changes(n *Meaning) []FieldChange {
	var out []FieldChange
	f := func(name, x, y string) {
		if x != y {
			out = append(out, FieldChange{Field: name, Old: x, New: y})
		}
	}
	f("result", m.Result, n.Result)
	f("written", m.Written, n.Written)
	f("follow_up", m.FollowUp, n.FollowUp)
	f("keeps_access", fmt.Sprint(m.KeepsAccess), fmt.Sprint(n.KeepsAccess))
	f("if_exists", m.IfExists, n.IfExists)
	f("if_absent", m.IfAbsent, n.IfAbsent)
	f("if_other", m.IfOther, n.IfOther)
	f("text", m.Text, n.Text)
	f("stageable", fmt.Sprint(m.Stageable), fmt.Sprint(n.Stageable))
	f("example", m.Example, n.Example)
	return out
}

// caseWant writes what a case expects, for comparing and printing.
func caseWant(k specCase) string {
	if k.key != "" {
		key := "a key (" + k.key + ")"
		if k.keyBytes > 0 {
			key = fmt.Sprintf("a key of %d bytes", k.keyBytes)
		}
		if k.rejected == "" {
			return "admission admits " + key
		}
		return "admission refuses " + key + " with " + k.rejected
	}
	ans := k.size
	if k.code != nil {
		ans = fmt.Sprintf("%s(%d)", k.code.Name, k.code.Value)
	}
	s := fmt.Sprintf("%s answers %s => %s", k.call, ans, k.want)
	if k.wantCode != 0 {
		s += fmt.Sprintf(" code %d", k.wantCode)
	}
	s += ", written " + k.written
	if !k.accessEnded {
		s += ", access unproven"
	}
	if k.stageable {
		s += ", stageable"
	}
	return s
}

func diffCases(a, b []specCase) CaseDiff {
	d := CaseDiff{Added: []CaseEntry{}, Removed: []CaseEntry{}, Changed: []CaseChange{}}
	idx := func(cs []specCase, id string) int {
		return slices.IndexFunc(cs, func(k specCase) bool { return k.id == id })
	}
	for _, k := range b {
		i := idx(a, k.id)
		if i < 0 {
			d.Added = append(d.Added, CaseEntry{k.id, k.pos, caseWant(k)})
			continue
		}
		if x, y := caseWant(a[i]), caseWant(k); x != y {
			d.Changed = append(d.Changed, CaseChange{ID: k.id, OldPos: a[i].pos, NewPos: k.pos, Old: x, New: y})
		}
	}
	for _, k := range a {
		if idx(b, k.id) < 0 {
			d.Removed = append(d.Removed, CaseEntry{k.id, k.pos, caseWant(k)})
		}
	}
	return d
}

// Text renders d for a reviewer: one section per kind of change, each
// line with the positions it comes from.
func (d *SpecDiff) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", d.Old, d.New)
	if d.Empty() {
		b.WriteString("no differences in codes, rules, cases or identity\n")
		return b.String()
	}
	section := func(title string, n int) {
		if n > 0 {
			fmt.Fprintf(&b, "\n%s:\n", title)
		}
	}
	at := func(old, new string) string {
		switch {
		case old != "" && new != "":
			return "  (" + old + " -> " + new + ")"
		case old != "":
			return "  (" + old + ")"
		case new != "":
			return "  (" + new + ")"
		}
		return ""
	}
	section("identity", len(d.Identity))
	for _, f := range d.Identity {
		fmt.Fprintf(&b, "  ~ %s: %s -> %s%s\n", f.Field, f.Old, f.New, at(f.OldPos, f.NewPos))
	}
	section("codes", len(d.Codes.Added)+len(d.Codes.Removed)+len(d.Codes.Renumbered))
	for _, c := range d.Codes.Added {
		fmt.Fprintf(&b, "  + %s = %d%s\n", c.Name, c.Value, at("", c.Pos))
	}
	for _, c := range d.Codes.Removed {
		fmt.Fprintf(&b, "  - %s = %d%s\n", c.Name, c.Value, at(c.Pos, ""))
	}
	for _, c := range d.Codes.Renumbered {
		fmt.Fprintf(&b, "  ~ %s: %d -> %d (renumbered)%s\n", c.Name, c.OldValue, c.NewValue, at(c.OldPos, c.NewPos))
	}
	section("calls", len(d.CallsAdded)+len(d.CallsRemoved))
	for _, c := range d.CallsAdded {
		fmt.Fprintf(&b, "  + %s\n", c)
	}
	for _, c := range d.CallsRemoved {
		fmt.Fprintf(&b, "  - %s\n", c)
	}
	section("rules", len(d.Rules))
	for _, r := range d.Rules {
		switch r.Kind {
		case "added":
			fmt.Fprintf(&b, "  + %s %s: %s%s\n", r.Call, r.Answer, r.New, at("", r.NewPos))
		case "removed":
			fmt.Fprintf(&b, "  - %s %s: %s%s\n", r.Call, r.Answer, r.Old, at(r.OldPos, ""))
		default:
			if len(r.Changes) == 0 {
				fmt.Fprintf(&b, "  ~ %s %s: %s -> %s%s\n", r.Call, r.Answer, r.Old, r.New, at(r.OldPos, r.NewPos))
				continue
			}
			var parts []string
			for _, c := range r.Changes {
				parts = append(parts, fmt.Sprintf("%s %s -> %s", c.Field, quotedIfEmpty(c.Old), quotedIfEmpty(c.New)))
			}
			fmt.Fprintf(&b, "  ~ %s %s: %s%s\n", r.Call, r.Answer, strings.Join(parts, "; "), at(r.OldPos, r.NewPos))
		}
	}
	section("other", len(d.Other))
	for _, f := range d.Other {
		fmt.Fprintf(&b, "  ~ %s: %s -> %s%s\n", f.Field, f.Old, f.New, at(f.OldPos, f.NewPos))
	}
	section("generated cases", len(d.Cases.Added)+len(d.Cases.Removed)+len(d.Cases.Changed))
	for _, c := range d.Cases.Added {
		fmt.Fprintf(&b, "  + %s: %s%s\n", c.ID, c.Want, at("", c.Pos))
	}
	for _, c := range d.Cases.Removed {
		fmt.Fprintf(&b, "  - %s: %s%s\n", c.ID, c.Want, at(c.Pos, ""))
	}
	for _, c := range d.Cases.Changed {
		fmt.Fprintf(&b, "  ~ %s: %s -> %s%s\n", c.ID, c.Old, c.New, at(c.OldPos, c.NewPos))
	}
	return b.String()
}

func quotedIfEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

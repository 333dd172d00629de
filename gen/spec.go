// Package gen loads store specs (spec/*.yaml), validates them strictly and
// emits Go for them with jennifer.
//
// Load and Generate are pure: they read bytes and return bytes, so the same
// code drives cmd/drivergen's generate and check, the drift test and the
// golden tests. The schema is documented in spec/README.md.
package gen

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strings"
)

// Pos is a place in a spec file.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col) }

// Error is one spec error at a position.
type Error struct {
	Pos Pos
	Msg string
}

func (e Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// ErrorList is every error found in one or more spec files, sorted by
// position. Its Error method prints one "file:line:col: message" a line.
type ErrorList []Error

func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (l ErrorList) sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i].Pos, l[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
}

// Spec is one store at one SDK version.
type Spec struct {
	File string // as given to Load, e.g. spec/mooncake-0.3.13.yaml
	// Comment is the YAML comment at the head of the file (the lines above
	// its first key), "#" stripped: the generated package's doc carries it.
	Comment string
	Store   string
	// Variant names the driver's code path the spec's SDK build needs,
	// when one store's builds differ in the commands its driver sends
	// (Redis's WATCH/MULTI/EXEC and Valkey's SET IFEQ); "" when its
	// builds do not. Every spec of a store names one, or none does.
	Variant string
	SDK     SDK

	StorePos, VariantPos Pos // where store and variant are given

	Capabilities Capabilities
	MaxRowBytes  int64 // rows must be under this many bytes; 0: no bound
	// MaxRowBytesAtOpen: the deployment sets the row limit (a server flag,
	// the master's allocator), the driver reads it at open, and
	// MaxRowBytes is its bound: the value read may not exceed it.
	MaxRowBytesAtOpen bool
	Keys              Keys // the keys block; zero when the spec gives none

	Codes        []Code
	Calls        []*Call
	Admission    []Rule
	AdmissionPos Pos // where the admission list is given
	Environment  []EnvRule
	Config       Config
}

// Keys is a spec's key rule: what keys the store refuses before anything
// is recorded.
type Keys struct {
	Pos Pos // where the keys block is given
	// MaxBytes: keys must be at most this many bytes (0: no bound).
	MaxBytes    int64
	MaxBytesPos Pos
	// Refuse names the byte classes no key may hold (space, control,
	// non_ascii), in the spec's order.
	Refuse    []string
	RefusePos []Pos
	// WellFormed: a key must be prefix/v1/hex(name) as driver.ParseKey
	// reads it (no "." or ".." prefix segment).
	WellFormed    bool
	WellFormedPos Pos
}

// SDK names the SDK a spec was read from, the releases it holds for and,
// when given (sdk.verified), the commits it was verified on.
type SDK struct {
	Name     string
	Versions []string
	// HasVerified: the spec gives sdk.verified (even empty), so only a
	// build of one of Verified is verified (rules.Spec.Verified).
	HasVerified bool
	Verified    []string
}

// Capabilities mirror driver.Capabilities.
type Capabilities struct {
	Hints, AbsentIsMiss, DeviceMemory, MultiSpan, Probe, Evicts bool
	MaxRowsPerOp                                                int64
}

// Code is one entry of the SDK's code table.
type Code struct {
	Name  string
	Value int64
	Doc   string
	// Comment is the entry's YAML comments (entryComment): generated code
	// carries it into the code constant's doc.
	Comment string
	Pos     Pos
}

// Call is one SDK call and what its answers mean.
type Call struct {
	Name string
	Pos  Pos
	Op   string // put or get
	Doc  string
	// Comment is the call's YAML comments, its answers' left out
	// (entryComment): generated code carries it above the call's field of Calls.
	Comment       string
	TouchesMemory bool
	AccessEnd     string // none, on_return, unless_kept, never
	Answers       string // code or size
	// NoCases: the call runs only as a follow-up of another call's answer
	// (a cleanup), so it gets no standalone conformance case.
	NoCases bool

	Whole, Short *Meaning   // size answers
	Codes        []CodeRule // code answers
	Otherwise    *Meaning   // any code not listed
}

// CodeRule is what one code means for a row when a call answers it.
type CodeRule struct {
	Code string
	Pos  Pos
	Meaning
}

// Meaning is what one answer means for a row, as the spec states it.
type Meaning struct {
	Pos         Pos
	Result      string // READY, MISS, NOT_READY, DECLINED, FAULT, CONTINUE
	Written     string // no, maybe, yes
	FollowUp    string // none, reread_once, ask_existence, keep_open, revoke_in_drain, end_again, ends_at_teardown
	KeepsAccess bool
	Text        string
	IfExists    string // for ask_existence
	// IfOther is the result when the key holds something other than the
	// row's whole object (another length, or bytes that fail the check);
	// "" when the store's existence answer cannot tell.
	IfOther   string
	IfAbsent  string
	Stageable bool
	// Example names the code the generated "otherwise" case answers with
	// (default: the first code of the table the call does not map).
	Example string
	// Comment is the answer's YAML comments (entryComment): generated
	// code carries it beside the answer's rule.
	Comment string
}

// Rule is one admission rule.
type Rule struct {
	Name string
	Pos  Pos
}

// EnvRule is an environment variable the driver refuses unless it holds
// one of Allow.
type EnvRule struct {
	Name   string
	Allow  []string
	Reason string
	Pos    Pos
}

// Config holds a store's blob defaults.
type Config struct {
	Workers, RowsPerBatch, BytesPerBatch int64
}

// Stem is the spec file's name without ".yaml" ("redis-valkey-8.1"): the
// name of the spec's version in the gate's table when it is not its
// store's first (VersionName).
func (s *Spec) Stem() string { return strings.TrimSuffix(path.Base(s.File), ".yaml") }

// FileStem is what the names of the spec's generated files start with:
// Stem with every "-", "." and "+" turned "_" ("redis_valkey_8_1"), so
// redis_valkey_8_1_spec.go, redis_valkey_8_1_calls.go and
// redis_valkey_8_1_cases.go.
func (s *Spec) FileStem() string {
	return stemParts.Replace(s.Stem())
}

// GoName is the Go name of the spec's value in its store's package: Stem
// in CamelCase, each part of it between "-", ".", "_" and "+" capitalized
// ("RedisValkey81", "Mooncake0313", "FsPosix"). Validate holds a stem to
// stemRE, so it is an identifier.
func (s *Spec) GoName() string { return GoIdent(s.Stem()) }

// GoIdent is the Go name of a spec file whose name (without .yaml) is
// stem: "redis-valkey-8.1" gives RedisValkey81.
func GoIdent(stem string) string {
	return goName(stemParts.Replace(stem))
}

// stemRE is what a spec file's name (without .yaml) must be: letters and
// digits in parts joined by "-", ".", "_" or "+", starting with a letter,
// so its GoName is an identifier and FileStem a file name (a version such
// as "0.3.12.post1+b1" may name it).
var stemRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*([-._+][A-Za-z0-9]+)*$`)

// stemParts turns every part separator of a stem into "_".
var stemParts = strings.NewReplacer("-", "_", ".", "_", "+", "_")

// StorePackage is the Go package of store (and its folder under
// generated/): named after the store.
func StorePackage(store string) string { return store }

// CasesPackage is the Go package holding the conformance cases of every
// spec of store, in a folder of its own inside StorePackage's
// ("rediscases" in generated/redis/rediscases), so a driver does not
// compile the cases in.
func CasesPackage(store string) string { return store + "cases" }

// relabel names the spec file in s and in every position it holds.
func (s *Spec) relabel(file string) {
	s.File = file
	for _, p := range s.positions() {
		p.File = file
	}
}

// positions returns every position s holds.
func (s *Spec) positions() []*Pos {
	ps := []*Pos{&s.StorePos, &s.VariantPos, &s.AdmissionPos, &s.Keys.Pos, &s.Keys.MaxBytesPos, &s.Keys.WellFormedPos}
	for i := range s.Keys.RefusePos {
		ps = append(ps, &s.Keys.RefusePos[i])
	}
	for i := range s.Codes {
		ps = append(ps, &s.Codes[i].Pos)
	}
	for _, c := range s.Calls {
		ps = append(ps, &c.Pos)
		for _, o := range []*Meaning{c.Whole, c.Short, c.Otherwise} {
			if o != nil {
				ps = append(ps, &o.Pos)
			}
		}
		for i := range c.Codes {
			ps = append(ps, &c.Codes[i].Pos, &c.Codes[i].Meaning.Pos)
		}
	}
	for i := range s.Admission {
		ps = append(ps, &s.Admission[i].Pos)
	}
	for i := range s.Environment {
		ps = append(ps, &s.Environment[i].Pos)
	}
	return ps
}

// CodeByName returns the code named name.
func (s *Spec) CodeByName(name string) (Code, bool) {
	for _, c := range s.Codes {
		if c.Name == name {
			return c, true
		}
	}
	return Code{}, false
}

// The closed vocabularies of the schema.
var (
	results = []string{"READY", "MISS", "NOT_READY", "DECLINED", "FAULT"}
	// stepResults are what an outcome's result may say: a row result, or
	// CONTINUE, a middle step of a multi-call operation that says "go on".
	stepResults    = append(append([]string(nil), results...), "CONTINUE")
	writtenValues  = []string{"no", "maybe", "yes"}
	followUps      = []string{"none", "reread_once", "ask_existence", "keep_open", "revoke_in_drain", "end_again", "ends_at_teardown"}
	accessEnds     = []string{"on_return", "unless_kept", "never"}
	answerKinds    = []string{"code", "size"}
	ops            = []string{"put", "get"}
	admissionRules = []string{"empty_key", "repeated_key", "multi_span", "row_too_large", "span_outside_registration", "hint", "device_region", "key_too_long", "key_bytes", "key_format"}
	keyClasses     = []string{"space", "control", "non_ascii"}
)

func oneOf(v string, allowed []string) bool {
	for _, a := range allowed {
		if a == v {
			return true
		}
	}
	return false
}

func quoteList(allowed []string) string {
	q := make([]string, len(allowed))
	for i, a := range allowed {
		q[i] = fmt.Sprintf("%q", a)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

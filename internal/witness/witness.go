// Package witness holds a spec's rules to what a real server, client
// library or kernel did to the caller's memory.
//
// The generated cases prove a driver against its spec by staging SDK
// answers at a seam; they cannot tell a spec that is wrong about the store.
// A witness runs the real driver over the real medium with a fault that
// makes one rule apply (a connection cut inside a reply, an object planted
// under the key, ENOSPC from a write), and checks the rule's claims against
// what happened: the row's result (and, for a code rule, that its code is
// the one the driver reported), `written` by a canary pattern in the
// destination checked when the call returned and again after every
// connection was released (a late write counts), and the call's access end
// (the operation says its access ended; a put's source, overwritten after
// the return, never reaches the store). A claim that is contradicted fails
// at the rule's file:line:col.
//
// A store's witness test names each subtest Name(rule, how) under a test
// named TestWitness, so the gate counts the rules a run witnessed; the
// rules it cannot reach are listed with the reason (Unreached), and
// Covered fails when a rule is neither.
//
// # Wire faults
//
// Proxy (StartProxy) is the fault the Redis and S3 witnesses make: a TCP
// proxy on loopback that faults the connections between a real client
// library and a real server at a chosen byte: it stalls, cuts (FIN),
// resets (RST), truncates (one direction ends) or slices (one small write
// at a time) a request or a reply.
//
// A Fault is armed on the proxy and fires on the first connection whose
// stream in its direction reaches its byte: At bytes past the arming (each
// connection counted alone), or At bytes past the end of the Skip+1-th
// occurrence of After seen since the arming (so "the store step's SET" is
// After "\r\nSET\r\n", Skip 1, when the claim's SET comes first). The
// bytes before that byte are forwarded; what happens to the rest is the
// fault's Action.
//
// Why not Shopify's toxiproxy: the module proxy serves v2.5.0, whose
// toxics act on time (reset_peer and timeout fire a delay after the next
// chunk), not at a byte; only limit_data is positioned. Stalling or
// resetting at a chosen byte of a chosen command needs toxics of our own
// either way, and toxiproxy would bring its HTTP API server, gorilla/mux,
// tomb.v1 and a second prometheus registry along for them. Proxy is the
// part the witnesses need: a byte-exact fault per direction, armed and
// released by the test, every goroutine ended by Close.
package witness

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/gen"
	"github.com/kvblob/kvblob/runtime/driver"
)

// TestName is the top-level test every store's witnesses run under.
const TestName = "TestWitness"

// Rule is one answer of one call of a spec: the unit a witness holds.
type Rule struct {
	Spec   string // the spec's file, spec/redis-7.yaml
	Call   *gen.Call
	Answer string // whole, short, otherwise, or a code's name
	Code   int64  // the code's value, for a code rule
	gen.Meaning

	values map[string]int64 // the spec's code table
}

// ID is call.answer (get.otherwise, claim.NIL).
func (r Rule) ID() string { return r.Call.Name + "." + r.Answer }

// Name is the subtest path of a witness of r by how, below TestWitness:
// the spec's file stem, the rule's ID, how (redis-7/get.otherwise/cut
// reply).
func Name(r Rule, how string) string { return Stem(r.Spec) + "/" + r.ID() + "/" + how }

// Stem is a spec file's name without folder and extension.
func Stem(file string) string { return strings.TrimSuffix(filepath.Base(file), ".yaml") }

// Rules is every rule of s, in the spec's order.
func Rules(s *gen.Spec) []Rule {
	codes := map[string]int64{}
	for _, c := range s.Codes {
		codes[c.Name] = c.Value
	}
	var out []Rule
	for _, c := range s.Calls {
		add := func(answer string, m *gen.Meaning) {
			if m != nil {
				out = append(out, Rule{Spec: s.File, Call: c, Answer: answer, Code: codes[answer], Meaning: *m, values: codes})
			}
		}
		add("whole", c.Whole)
		add("short", c.Short)
		for _, cr := range c.Codes {
			add(cr.Code, &cr.Meaning)
		}
		add("otherwise", c.Otherwise)
	}
	return out
}

// Specs loads every spec of the repository (the spec folder at the root
// of the module the working directory is in).
func Specs() ([]*gen.Spec, error) {
	dir, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return gen.LoadDir(filepath.Join(dir, "spec"))
		}
		up := filepath.Dir(dir)
		if up == dir {
			return nil, errors.New("witness: no go.mod at or above the working directory; run from inside the module")
		}
		dir = up
	}
}

// Find is the rule id (call.answer) of the spec whose file stem is stem.
func Find(specs []*gen.Spec, stem, id string) (Rule, error) {
	for _, s := range specs {
		if Stem(s.File) != stem {
			continue
		}
		for _, r := range Rules(s) {
			if r.ID() == id {
				return r, nil
			}
		}
		return Rule{}, fmt.Errorf("witness: %s has no rule %s", s.File, id)
	}
	return Rule{}, fmt.Errorf("witness: no spec spec/%s.yaml", stem)
}

// Branch is, for a rule with follow_up ask_existence, what the key held
// when the existence was asked.
type Branch int

const (
	NoBranch Branch = iota
	Exists          // this row's whole object
	Absent          // nothing, or another writer's marker
	Other           // something else
)

// Observed is what really happened in a witnessed run of one row.
type Observed struct {
	Result driver.Result
	// AccessEnded: the operation said its access ended when the call
	// returned.
	AccessEnded bool
	// Written: a get's destination differed from its canary when the call
	// returned; Whole: it held the row's bytes exactly.
	Written, Whole bool
	// LateWritten: it differed after every connection was released,
	// though not at the return.
	LateWritten bool
	// SourceWritten: a put's source differed from what the caller put
	// there (a put never writes its sources).
	SourceWritten bool
	// LateRead: the store holds bytes the caller wrote into a put's
	// source after the call returned.
	LateRead bool
	// Branch: for ask_existence, what the key held.
	Branch Branch
}

// Want is the status r says the row ends with: a CONTINUE step's is
// READY (the operation's end when every later call succeeds), an
// ask_existence rule's the branch's.
func (r Rule) Want(b Branch) (driver.Status, error) {
	name := r.Result
	switch {
	case name == "CONTINUE":
		name = "READY"
	case r.FollowUp == "ask_existence":
		switch b {
		case Exists:
			name = r.IfExists
		case Absent:
			name = r.IfAbsent
		case Other:
			name = r.IfOther
		default:
			return 0, fmt.Errorf("%s: %s asks existence; the witness must say what the key held", r.Pos, r.ID())
		}
	}
	s, ok := driver.ParseStatus(name)
	if !ok {
		return 0, fmt.Errorf("%s: %s: unknown result %q", r.Pos, r.ID(), name)
	}
	return s, nil
}

// Check returns an error at r's position for each of r's claims o
// contradicts (nil when none is).
func (r Rule) Check(o Observed) error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s: %s", r.Pos, r.ID(), fmt.Sprintf(format, args...)))
	}
	want, err := r.Want(o.Branch)
	if err != nil {
		return err
	}
	if o.Result.Status != want {
		bad("the spec says %v, the real run answered %v", want, o.Result)
	}
	// A code rule that ends the row as a FAULT must be the one applied:
	// the driver reports the code it mapped. (A listed rule's code;
	// otherwise's is any code the call does not list.)
	if o.Result.Status == driver.Fault && want == driver.Fault {
		switch {
		case r.Answer == "whole" || r.Answer == "short" || r.FollowUp == "ask_existence":
		case r.Answer == "otherwise":
			if name, ok := r.listed(o.Result.Code); ok {
				bad("the run answered %s (%d), which the call lists: the witness did not reach otherwise", name, o.Result.Code)
			}
		case o.Result.Code != r.Code && r.FollowUp != "reread_once":
			bad("the run faulted with code %d, not %s (%d): the witness did not reach this rule", o.Result.Code, r.Answer, r.Code)
		}
	}
	// A CONTINUE step's written is what that step left; the run shows
	// only the operation's end, which READY's check holds.
	get := r.Call.Op == "get"
	if get && r.Result != "CONTINUE" {
		switch {
		case r.Written == "no" && o.Written:
			bad("written: no, but the destination was written before the call returned")
		case r.Written == "no" && o.LateWritten:
			bad("written: no, but the destination was written after the call returned")
		}
	}
	if get {
		if want == driver.Ready && !o.Whole {
			bad("READY, but the destination does not hold the row's bytes")
		}
	} else if o.SourceWritten {
		bad("a put never writes its sources, but the source changed")
	}
	if r.Call.TouchesMemory && (r.Call.AccessEnd == "on_return" || r.Call.AccessEnd == "unless_kept" && !r.KeepsAccess) {
		switch {
		case !o.AccessEnded:
			bad("access_end %s: the operation did not say its access ended when the call returned", r.Call.AccessEnd)
		case o.LateWritten:
			bad("access_end %s: the destination was written after the call returned", r.Call.AccessEnd)
		case o.LateRead:
			bad("access_end %s: the store holds bytes written into the source after the call returned", r.Call.AccessEnd)
		}
	}
	return errors.Join(errs...)
}

// listed is the name of code when r's call lists it.
func (r Rule) listed(code int64) (string, bool) {
	for _, cr := range r.Call.Codes {
		if v, ok := r.values[cr.Code]; ok && v == code {
			return cr.Code, true
		}
	}
	return "", false
}

// Covered checks a store's plan for the spec whose file stem is stem:
// every rule is witnessed (its id in witnessed, once or more) or listed in
// unreached with the reason, never both, and neither names a rule the
// spec lacks (an id listed for several specs of a store may be absent
// from some: a code one build's table lacks).
func Covered(specs []*gen.Spec, stem string, witnessed []string, unreached map[string]string) error {
	var s *gen.Spec
	for _, sp := range specs {
		if Stem(sp.File) == stem {
			s = sp
		}
	}
	if s == nil {
		return fmt.Errorf("witness: no spec spec/%s.yaml", stem)
	}
	w := map[string]bool{}
	for _, id := range witnessed {
		w[id] = true
	}
	var errs []error
	for _, r := range Rules(s) {
		_, listed := unreached[r.ID()]
		switch {
		case w[r.ID()] && listed:
			errs = append(errs, fmt.Errorf("%s: %s is witnessed and listed as unreached", r.Pos, r.ID()))
		case !w[r.ID()] && !listed:
			errs = append(errs, fmt.Errorf("%s: %s is neither witnessed nor listed as unreached with the reason", r.Pos, r.ID()))
		}
		delete(w, r.ID())
	}
	for id := range w {
		errs = append(errs, fmt.Errorf("witness: %s has no rule %s, yet a witness names it", s.File, id))
	}
	return errors.Join(errs...)
}

// Announce logs r's spec position as the gate reads it (conformance.FactSpec), so a
// witness run's check carries the rule it holds.
func (r Rule) Announce(t interface{ Log(...any) }) {
	t.Log(conformance.FactLine(conformance.FactSpec, r.Pos.String()))
}

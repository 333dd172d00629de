package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Equivalent is one entry of the list of mutants argued equivalent (no
// test could tell them from the source): the report takes a listed
// survivor out of the score's denominator and prints it with its reason,
// apart from the unexplained survivors.
//
// An entry names its mutant by what an unrelated edit does not move: the
// file (relative to the module's root), the change and the changed source
// line (trimmed), not the line number. When more than one mutant of the
// file has that change on that same text (one line holding two 1s, or two
// lines alike), Nth picks one of them, counting in source order; an entry
// without it must match exactly one.
//
// The list's format, one entry after another:
//
//	# a comment; blank lines are ignored
//	stores/fs/beneath.go: 1 -> 2: return -1, t.pathErr(nil, err)
//		the reason, on one or more lines indented by a tab or spaces
//	stores/fs/beneath.go: 1 -> 2@1: return -1, t.pathErr(rel[:i+1], err)
//		...
type Equivalent struct {
	At     string // the list's file:line where the entry begins
	File   string // slash-separated, relative to the module's root
	Change string // as -list and the report print it ("1 -> 2", "drop statement")
	Nth    int    // 1-based among the file's mutants of Change on Line; 0: the only one
	Line   string // the source line, trimmed
	Reason string
}

// Key is the entry's heading, as the list writes it.
func (e *Equivalent) Key() string {
	change := e.Change
	if e.Nth > 0 {
		change += "@" + strconv.Itoa(e.Nth)
	}
	return e.File + ": " + change + ": " + e.Line
}

// changeRE is what a mutant's change reads as (mutate's descriptions),
// with an optional @N.
var changeRE = regexp.MustCompile(`^(negate if condition|drop statement|[^\s@]+ -> [^\s@]+)(@([1-9][0-9]*))?$`)

// ReadEquivalents reads the list at path.
func ReadEquivalents(path string) ([]*Equivalent, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseEquivalents(path, string(data))
}

// parseEquivalents reads a list (name is the file's, for errors). An
// error names name:line and what was expected there.
func parseEquivalents(name, data string) ([]*Equivalent, error) {
	var out []*Equivalent
	seen := map[string]string{}
	var cur *Equivalent
	end := func() error {
		if cur != nil && cur.Reason == "" {
			return fmt.Errorf("%s: the entry %q has no reason; want it on the next lines, indented", cur.At, cur.Key())
		}
		return nil
	}
	for i, raw := range strings.Split(data, "\n") {
		at := fmt.Sprintf("%s:%d", name, i+1)
		line := strings.TrimRight(raw, " \t\r")
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case line[0] == ' ' || line[0] == '\t':
			if cur == nil {
				return nil, fmt.Errorf("%s: an indented reason before any entry; want an entry \"file.go: change: source line\" first", at)
			}
			cur.Reason = strings.TrimSpace(cur.Reason + " " + strings.TrimSpace(line))
			continue
		}
		if err := end(); err != nil {
			return nil, err
		}
		parts := strings.SplitN(line, ": ", 3)
		if len(parts) != 3 || strings.TrimSpace(parts[2]) == "" {
			return nil, fmt.Errorf("%s: %q is not an entry; want \"file.go: change: source line\" (or an indented reason, a # comment or a blank line)", at, line)
		}
		file, change, src := parts[0], parts[1], strings.TrimSpace(parts[2])
		if !strings.HasSuffix(file, ".go") || strings.HasSuffix(file, "_test.go") || filepath.IsAbs(file) || strings.Contains(file, "\\") || strings.HasPrefix(file, "./") {
			return nil, fmt.Errorf("%s: %q is not a file to mutate; want a non-test .go file, slash-separated and relative to the module's root", at, file)
		}
		m := changeRE.FindStringSubmatch(change)
		if m == nil {
			return nil, fmt.Errorf("%s: %q is not a change; want one as -list prints it (\"< -> <=\", \"1 -> 2\", \"negate if condition\", \"drop statement\"), with @N to pick the N-th of several alike", at, change)
		}
		cur = &Equivalent{At: at, File: file, Change: m[1], Line: src}
		if m[3] != "" {
			cur.Nth, _ = strconv.Atoi(m[3])
		}
		if first, dup := seen[cur.Key()]; dup {
			return nil, fmt.Errorf("%s: %q is listed already at %s; want each mutant once", at, cur.Key(), first)
		}
		seen[cur.Key()] = at
		out = append(out, cur)
	}
	if err := end(); err != nil {
		return nil, err
	}
	return out, nil
}

// equivalents is a run's list matched against the mutants of its units.
type equivalents struct {
	of map[string]*Equivalent // a mutant's id -> its entry
}

// id tells m from every other mutant of the run: two changes at one
// position (< to >= and < to <=) share a Pos.
func id(m Mutant) string { return m.Pos + " " + m.Desc }

// entry is m's entry in the list, or nil.
func (q *equivalents) entry(m Mutant) *Equivalent { return q.of[id(m)] }

// match finds each entry's mutant among ms, every mutant of the unit whose
// files are in scope (file-relative paths under root). An entry for a
// file out of scope is not judged; one in scope that matches no mutant is
// stale, one that matches several and says no @N is ambiguous: each is
// returned as a line for the unit's report, and listed nothing.
func (q *equivalents) match(list []*Equivalent, ms []Mutant, root string, inScope func(file string) bool) (problems []string) {
	if q.of == nil {
		q.of = map[string]*Equivalent{}
	}
	type key struct{ file, change, line string }
	alike := map[key][]Mutant{}
	for _, m := range ms {
		k := key{relFile(root, m.File), m.Desc, m.Line}
		alike[k] = append(alike[k], m)
	}
	for _, ms := range alike {
		sort.SliceStable(ms, func(i, j int) bool {
			return ms[i].At[0] < ms[j].At[0] || ms[i].At[0] == ms[j].At[0] && ms[i].At[1] < ms[j].At[1]
		})
	}
	for _, e := range list {
		if !inScope(e.File) {
			continue
		}
		found := alike[key{e.File, e.Change, e.Line}]
		switch {
		case e.Nth == 0 && len(found) == 1:
			q.of[id(found[0])] = e
		case e.Nth == 0 && len(found) > 1:
			var at []string
			for _, m := range found {
				at = append(at, fmt.Sprintf("%d:%d", m.At[0], m.At[1]))
			}
			problems = append(problems, fmt.Sprintf("%s: %s [ambiguous: %d mutants match (at %s); add @N to the change to pick the N-th]", e.At, e.Key(), len(found), strings.Join(at, ", ")))
		case e.Nth > 0 && e.Nth <= len(found):
			q.of[id(found[e.Nth-1])] = e
		default:
			problems = append(problems, fmt.Sprintf("%s: %s [stale: no mutant matches; the line changed or went: remove the entry, or write it anew]", e.At, e.Key()))
		}
	}
	return problems
}

// relFile is file relative to root, slash-separated.
func relFile(root, file string) string {
	if rel, err := filepath.Rel(root, file); err == nil {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(file)
}

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kvblob/kvblob/conformance"
)

// event is one line of go test -json (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// The test every store's package runs; its subtests are the stores, and
// theirs the checks: TestConformance/<store>/<check>.
const conformanceTest = "TestConformance"

// collector turns go test -json's events into the stores' rows, and
// prints progress on stderr as checks finish.
type collector struct {
	stderr       io.Writer
	verbose, tty bool

	// stores and checks are keyed by package and test name: two packages
	// may run a store of one name (stores/mooncake over the fake SDK,
	// stores/mooncake/cgosdk over the real one), and each is its own row.
	stores map[testKey]*storeRow // TestConformance/<store>
	order  []*storeRow
	checks map[testKey]*checkRow
	// names are every store a package's TestConformance announced, run
	// or filtered out by -run.
	names map[string]bool
	pkgs  map[string]*pkgRun
	// witnesses are TestWitness's runs, by spec file stem (witness.go).
	witnesses map[string]*witnessRun
}

// storeRow is a store's row as it is read, with what the table does not
// print but the gate needs.
type storeRow struct {
	storeResult
	pkg              string
	codeEnum, spec   string // conformance.FactCodeEnum and FactSpecFile
	setup            string // why set-up failed
	total            int
	finished, failed bool
	output           []string // the store's own lines that are no fact
}

type checkRow struct {
	store  *storeRow
	result checkResult
	lines  []string // what the check logged, fact lines left out
}

// pkgRun is what a package printed outside any store, for a package that
// failed before or beside its stores (a build, a TestMain's set-up).
type pkgRun struct {
	output []string
	failed bool
}

// testKey names one test of one package.
type testKey struct{ pkg, test string }

func newCollector(stderr io.Writer, verbose bool) *collector {
	return &collector{stderr: stderr, verbose: verbose, tty: isTerminal(stderr),
		stores: map[testKey]*storeRow{}, checks: map[testKey]*checkRow{}, names: map[string]bool{}, pkgs: map[string]*pkgRun{},
		witnesses: map[string]*witnessRun{}}
}

// read consumes a go test -json stream to its end. A line that is not an
// event (go's own messages, when a package does not build) is kept as the
// output of the package "", which the gate reports as a set-up error;
// go's download progress, which a first run on a fresh machine prints, is
// passed on to stderr instead.
func (c *collector) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			if isGoProgress(sc.Text()) {
				fmt.Fprintln(c.stderr, sc.Text())
				continue
			}
			c.pkg("").output = append(c.pkg("").output, sc.Text())
			continue
		}
		c.add(e)
	}
	return sc.Err()
}

// isGoProgress reports whether line is the go command saying what it
// fetches ("go: downloading example.com/m v1.2.3"), which is not an error.
func isGoProgress(line string) bool {
	return strings.HasPrefix(line, "go: downloading ") || strings.HasPrefix(line, "go: extracting ") || strings.HasPrefix(line, "go: finding ")
}

func (c *collector) pkg(name string) *pkgRun {
	p := c.pkgs[name]
	if p == nil {
		p = &pkgRun{}
		c.pkgs[name] = p
	}
	return p
}

// add takes one event.
func (c *collector) add(e event) {
	top, rest, _ := strings.Cut(e.Test, "/")
	storeName, checkName, isCheck := strings.Cut(rest, "/")
	switch {
	case e.Test == "":
		c.addPackage(e)
	case top == witnessTest:
		c.addWitness(e, rest)
	case top != conformanceTest:
		// Another test the -run pattern let through: not the gate's.
	case rest == "":
		if k, v, ok := conformance.ParseFact(e.Output); ok && k == conformance.FactStore {
			c.names[v] = true
		} else if e.Action == "output" && !isFrame(e.Output) {
			c.pkg(e.Package).output = append(c.pkg(e.Package).output, strings.TrimRight(e.Output, "\n"))
		}
	case !isCheck:
		c.addStore(e, storeName)
	default:
		c.addCheck(e, checkName)
	}
}

func (c *collector) addPackage(e event) {
	p := c.pkg(e.Package)
	switch e.Action {
	case "output", "build-output":
		p.output = append(p.output, strings.TrimRight(e.Output, "\n"))
	case "fail", "build-fail":
		p.failed = true
	}
}

func (c *collector) addStore(e event, name string) {
	s := c.stores[testKey{e.Package, e.Test}]
	if s == nil {
		s = &storeRow{storeResult: storeResult{Store: name}, pkg: e.Package}
		c.stores[testKey{e.Package, e.Test}] = s
		c.order = append(c.order, s)
	}
	switch e.Action {
	case "output":
		switch k, v := fact(e, &s.output); k {
		case conformance.FactSDK:
			s.SDK = v
		case conformance.FactChecks:
			s.total, _ = strconv.Atoi(v)
		case conformance.FactCodeEnum:
			s.codeEnum = v
		case conformance.FactSpecFile:
			s.spec, s.SpecFile = v, v
		case conformance.FactSetup:
			s.setup = v
		case conformance.FactSkip:
			s.SkipReason = v
		}
	case "pass", "fail", "skip":
		s.finished, s.failed = true, e.Action == "fail"
		s.Seconds = e.Elapsed
		c.finishStore(s)
	}
}

// finishStore closes a store's row: a failure that is no check's is a
// set-up error (the suite's Setup, or a Suite the suite refused), and a
// store skipped for want of its server names why.
func (c *collector) finishStore(s *storeRow) {
	if s.failed && s.Failed == 0 && s.Errors == 0 {
		msg := s.setup
		if msg == "" {
			msg = strings.Join(messages(s.output, true), "\n")
		}
		s.add(checkResult{Name: "setup", Kind: kindSetup, Status: statusError, Message: msg})
		if s.SkipReason == "" {
			s.SkipReason = "set-up failed: " + firstLine(msg)
		}
	}
	if c.tty && !c.verbose {
		fmt.Fprintln(c.stderr)
	}
	if s.SkipReason != "" && s.setup == "" && s.Errors == 0 {
		fmt.Fprintf(c.stderr, "gate: %s skipped: %s\n", s.Store, s.SkipReason)
	}
	took := time.Duration(s.Seconds * float64(time.Second)).Round(time.Millisecond)
	fmt.Fprintf(c.stderr, "gate: %s done in %v: %d passed, %d failed, %d skipped\n", s.Store, took, s.Passed, s.Failed+s.Errors, s.Skipped)
}

func (c *collector) addCheck(e event, name string) {
	s := c.stores[testKey{e.Package, conformanceTest + "/" + strings.SplitN(e.Test, "/", 3)[1]}]
	if s == nil {
		return // a check of a store that never started: not the suite's
	}
	key := testKey{e.Package, e.Test}
	k := c.checks[key]
	if k == nil {
		k = &checkRow{store: s, result: checkResult{Name: name, Kind: kindCheck}}
		c.checks[key] = k
	}
	switch e.Action {
	case "output":
		switch key, v := fact(e, &k.lines); key {
		case conformance.FactKind:
			k.result.Kind = v
		case conformance.FactSpec:
			k.result.Spec = v
		case conformance.FactRoundTrip:
			s.RoundTrip = v
		}
	case "pass", "fail", "skip":
		k.end(e)
		s.add(k.result)
		c.progress(s, k.result)
	}
}

func (c *collector) progress(s *storeRow, r checkResult) {
	n := len(s.Checks)
	switch {
	case c.verbose || r.Status == statusFailed || r.Status == statusError:
		if c.tty && !c.verbose {
			fmt.Fprintln(c.stderr)
		}
		fmt.Fprintf(c.stderr, "gate: %-8s %4d/%d %-4s %s\n", s.Store, n, s.total, strings.ToUpper(r.Status), r.Name)
	case c.tty:
		fmt.Fprintf(c.stderr, "\rgate: %-8s %4d/%d", s.Store, n, s.total)
	}
}

// rows returns the stores' rows sorted by name, and the packages that
// failed outside any check: one that did not build, or whose TestMain
// failed before its stores ran.
func (c *collector) rows() (rows []*storeRow, broken map[string][]string) {
	rows = append(rows, c.order...)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Store < rows[j].Store })
	broken = map[string][]string{}
	for name, p := range c.pkgs {
		storeFailed := false
		for _, s := range c.order {
			storeFailed = storeFailed || s.pkg == name && s.failed
		}
		if p.failed && !storeFailed || name == "" && len(p.output) > 0 {
			broken[name] = p.output
		}
	}
	return rows, broken
}

// fact returns the fact an output event holds (conformance.ParseFact), or "" after
// keeping its line in lines, unless it is go test's own framing.
func fact(e event, lines *[]string) (key, value string) {
	key, value, ok := conformance.ParseFact(e.Output)
	if !ok && !isFrame(e.Output) {
		*lines = append(*lines, strings.TrimRight(e.Output, "\n"))
	}
	return key, value
}

// logged is the start of a t.Log line in go test's output: the file and
// line of the call.
var logged = regexp.MustCompile(`^ *[\w.-]+\.go:\d+: `)

// messages returns what a test logged, one entry per Log, Error, Fatal or
// Skip call (their continuation lines joined to them), without go test's
// file:line prefixes; with foreign, also the process's own output.
//
// go test prints a Log line indented, after its file:line, and each
// continuation line indented deeper. A line at the margin without a
// file:line is none of the test's: it is what the process wrote straight
// to its stdout or stderr (a C++ SDK's log, a crash), which go test hands
// to whichever test runs at the time. It is no part of the message before
// it, nor of a check that passed or was skipped (the real Mooncake SDK
// logs a dozen lines per client it opens and closes); for a failure it
// may be the cause, so foreign keeps it, after the test's own messages
// (the first line of a failure's text is its message).
func messages(lines []string, foreign bool) []string {
	var out, theirs []string
	for _, l := range lines {
		atMargin := !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "\t")
		switch loc := logged.FindStringIndex(l); {
		case loc != nil:
			out = append(out, l[loc[1]:])
		case atMargin:
			if t := strings.TrimSpace(l); t != "" {
				theirs = append(theirs, t)
			}
		case len(out) > 0:
			out[len(out)-1] += "\n" + strings.TrimLeft(l, " ")
		default:
			if t := strings.TrimSpace(l); t != "" {
				out = append(out, t)
			}
		}
	}
	if foreign && len(theirs) > 0 {
		out = append(out, strings.Join(theirs, "\n"))
	}
	return out
}

// end settles k's result from e, the pass, fail or skip that ends the
// check (a conformance check or a witness run alike): its time, its
// status and its message.
func (k *checkRow) end(e event) {
	k.result.Seconds = e.Elapsed
	k.result.Status = map[string]string{"pass": statusPassed, "fail": statusFailed, "skip": statusSkipped}[e.Action]
	k.result.Message = message(k.lines, k.result.Status)
}

// message is a check's message as its result carries it, from what the
// check logged: every message of a failure (with the process's own
// output, see messages), of a skip only the last, the skip's reason (what
// the check logged before it is no part of it), of a pass all it logged.
// A conformance check and a witness run are read alike.
func message(lines []string, status string) string {
	msgs := messages(lines, status == statusFailed)
	if status == statusSkipped {
		msgs = msgs[max(0, len(msgs)-1):]
	}
	return strings.Join(msgs, "\n")
}

// isFrame reports whether an output line is go test's own framing of a
// test (=== RUN, --- PASS, a package's closing ok or FAIL line).
func isFrame(line string) bool {
	t := strings.TrimLeft(line, " ")
	for _, p := range []string{"=== ", "--- PASS", "--- FAIL", "--- SKIP", "PASS\n", "FAIL\n", "ok  \t", "FAIL\t"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return t == "PASS" || t == "FAIL"
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kvblob/kvblob/conformance"
)

// The kinds of check a report holds.
const (
	kindGenerated = "generated"           // generated/ is what spec/ generates
	kindCheck     = conformance.KindCheck // a hand-written conformance check (or the round trip)
	kindSDK       = conformance.KindSDK   // the SDK itself checked against the spec (headers, a live server)
	kindSetup     = "setup"               // the store's set-up
)

// The statuses of a check.
const (
	statusPassed  = "passed"
	statusFailed  = "failed"
	statusSkipped = "skipped"
	statusError   = "error" // the gate could not run it (set-up, an unreadable header): exit 2
)

// checkResult is how one check went: a row of the JSON report and a
// testcase of the JUnit report.
type checkResult struct {
	Name    string  `json:"name"`
	Kind    string  `json:"kind"`
	Spec    string  `json:"spec,omitempty"`
	Status  string  `json:"status"`
	Message string  `json:"message,omitempty"`
	Seconds float64 `json:"seconds"`
}

// storeResult is one store's run: a row of the table.
type storeResult struct {
	Store      string  `json:"store"`
	SDK        string  `json:"sdk"`
	Passed     int     `json:"passed"`
	Failed     int     `json:"failed"`
	Errors     int     `json:"errors"`
	Skipped    int     `json:"skipped"`
	Seconds    float64 `json:"seconds"`
	RoundTrip  string  `json:"round_trip,omitempty"`
	SkipReason string  `json:"skip_reason,omitempty"`
	// SpecFile is the spec of the store's version ("spec/redis-7.yaml").
	SpecFile string `json:"spec_file,omitempty"`
	// Rules is how many rules the spec holds; Witnessed are those a run
	// on the real medium witnessed (call.answer), Unwitnessed the rest,
	// when the store's package has witnesses (HasWitnesses).
	Rules        int           `json:"rules,omitempty"`
	Witnessed    []string      `json:"witnessed,omitempty"`
	Unwitnessed  []string      `json:"unwitnessed,omitempty"`
	HasWitnesses bool          `json:"has_witnesses,omitempty"`
	Checks       []checkResult `json:"checks"`
}

// witnessedCell is the table's WITNESSED cell: witnessed/rules, or "-"
// for a store with no witnesses.
func (r storeResult) witnessedCell() string {
	if !r.HasWitnesses {
		return "-"
	}
	return strconv.Itoa(len(r.Witnessed)) + "/" + strconv.Itoa(r.Rules)
}

func (r *storeResult) add(c checkResult) {
	r.Checks = append(r.Checks, c)
	switch c.Status {
	case statusPassed:
		r.Passed++
	case statusFailed:
		r.Failed++
	case statusSkipped:
		r.Skipped++
	case statusError:
		r.Errors++
	}
}

// report is everything one gate run found; --json writes it as is.
type report struct {
	// Generated is the check that generated/ is what spec/ generates.
	Generated checkResult   `json:"generated"`
	Stores    []storeResult `json:"stores"`
	Passed    int           `json:"passed"`
	Failed    int           `json:"failed"`
	Errors    int           `json:"errors"`
	Skipped   int           `json:"skipped"`
	ExitCode  int           `json:"exit_code"`
}

// finish sums the stores and sets the exit code: 2 when anything could
// not run, else 1 when anything failed, else 0.
func (r *report) finish() {
	r.Passed, r.Failed, r.Errors, r.Skipped = 0, 0, 0, 0
	for _, s := range r.Stores {
		r.Passed += s.Passed
		r.Failed += s.Failed
		r.Errors += s.Errors
		r.Skipped += s.Skipped
	}
	switch {
	case r.Errors > 0 || r.Generated.Status == statusError:
		r.ExitCode = 2
	case r.Failed > 0 || r.Generated.Status == statusFailed:
		r.ExitCode = 1
	default:
		r.ExitCode = 0
	}
}

func printTable(w io.Writer, rows []storeResult) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STORE\tSDK\tPASSED\tFAILED\tSKIPPED\tWITNESSED\tTIME\tBACKEND ROUND TRIP")
	for _, r := range rows {
		trip := r.RoundTrip
		switch {
		case r.SkipReason != "":
			trip = "-"
		case trip == "":
			trip = "failed"
		}
		took := time.Duration(r.Seconds * float64(time.Second)).Round(time.Millisecond)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%v\t%s\n", r.Store, r.SDK, r.Passed, r.Failed+r.Errors, r.Skipped, r.witnessedCell(), took, trip)
	}
	tw.Flush()
	for _, r := range rows {
		if r.SkipReason != "" {
			fmt.Fprintf(w, "  %s skipped: %s\n", r.Store, r.SkipReason)
		}
		if len(r.Unwitnessed) > 0 {
			fmt.Fprintf(w, "  %s unwitnessed %d: %s\n", r.Store, len(r.Unwitnessed), strings.Join(r.Unwitnessed, ", "))
		}
		reasons := map[string]int{}
		for _, c := range r.Checks {
			if c.Status == statusSkipped && r.SkipReason == "" {
				reasons[c.Message]++
			}
		}
		for _, reason := range sortedKeys(reasons) {
			fmt.Fprintf(w, "  %s skipped %d: %s\n", r.Store, reasons[reason], reason)
		}
		for _, c := range r.Checks {
			if c.Status == statusFailed || c.Status == statusError {
				fmt.Fprintf(w, "  %s %s %s: %s\n", r.Store, strings.ToUpper(c.Status), c.Name, c.Message)
			}
		}
	}
}

// JUnit XML, as Jenkins, GitLab and GitHub's test reporters read it, and
// valid against the strictest common schema, the Jenkins xUnit plugin's
// junit-10.xsd (cmd/gate/testdata/junit/junit-10.xsd; junit_test.go
// validates every report the tests write): the root <testsuites> carries
// name, tests, failures, errors and time only; a <testsuite> carries its
// counts (skipped among them), the spec file of its store's version (the
// file attribute annotators read) and <properties>; a <testcase> carries
// classname, name and time, and its extras (kind, spec position) go in
// its <system-out>, since the schema gives a testcase no properties and
// no file or line.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Time       string           `xml:"time,attr"`
	File       string           `xml:"file,attr,omitempty"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitProperties struct {
	Property []junitProperty `xml:"property"`
}

func props(ps ...junitProperty) *junitProperties {
	if len(ps) == 0 {
		return nil
	}
	return &junitProperties{ps}
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func seconds(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }

// junitCaseOf is check c as a testcase of suite classname. Its system-out
// holds "kind: K" and, for a check that pins a spec rule, "spec: P"; a
// failure's text ends with that "spec: P" line too, so an annotator that
// finds a line by the suite's file in the failure text (action-junit-report
// does) finds the rule's.
func junitCaseOf(classname string, c checkResult) junitCase {
	jc := junitCase{Classname: classname, Name: c.Name, Time: seconds(c.Seconds), SystemOut: "kind: " + c.Kind + "\n"}
	text := c.Message
	if c.Spec != "" {
		jc.SystemOut += "spec: " + c.Spec + "\n"
		text += "\nspec: " + c.Spec
	}
	first, _, _ := strings.Cut(c.Message, "\n")
	msg := &junitMessage{Message: first, Type: c.Kind, Text: text}
	switch c.Status {
	case statusFailed:
		jc.Failure = msg
	case statusError:
		jc.Error = msg
	case statusSkipped:
		jc.Skipped = &junitMessage{Message: c.Message}
	}
	return jc
}

// junit renders r as JUnit XML: a testsuite per store (and one for the
// generated/ check), a testcase per check and generated case.
func junit(r *report) ([]byte, error) {
	all := junitSuites{Name: "kvblob gate"}
	addSuite := func(name, file string, ps []junitProperty, secs float64, checks []checkResult) {
		s := junitSuite{Name: name, File: file, Time: seconds(secs), Properties: props(ps...)}
		for _, c := range checks {
			s.Cases = append(s.Cases, junitCaseOf(name, c))
			s.Tests++
			switch c.Status {
			case statusFailed:
				s.Failures++
			case statusError:
				s.Errors++
			case statusSkipped:
				s.Skipped++
			}
		}
		all.Suites = append(all.Suites, s)
		all.Tests += s.Tests
		all.Failures += s.Failures
		all.Errors += s.Errors
	}
	total := r.Generated.Seconds
	addSuite("generated", "", nil, r.Generated.Seconds, []checkResult{r.Generated})
	for _, s := range r.Stores {
		ps := []junitProperty{{"sdk", s.SDK}}
		if s.SpecFile != "" {
			ps = append(ps, junitProperty{"spec_file", s.SpecFile})
		}
		if s.SkipReason != "" {
			ps = append(ps, junitProperty{"skip_reason", s.SkipReason})
		}
		if s.RoundTrip != "" {
			ps = append(ps, junitProperty{"round_trip", s.RoundTrip})
		}
		if s.HasWitnesses {
			ps = append(ps, junitProperty{"witnessed", s.witnessedCell()},
				junitProperty{"unwitnessed", strings.Join(s.Unwitnessed, " ")})
		}
		addSuite(s.Store, s.SpecFile, ps, s.Seconds, s.Checks)
		total += s.Seconds
	}
	all.Time = seconds(total)
	b, err := xml.MarshalIndent(all, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// writeReports writes r to the files --junit and --json name ("" for
// none).
func writeReports(r *report, junitFile, jsonFile string) error {
	if junitFile != "" {
		b, err := junit(r)
		if err != nil {
			return err
		}
		if err := writeFile(junitFile, b); err != nil {
			return err
		}
	}
	if jsonFile != "" {
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		if err := writeFile(jsonFile, append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes b to a temporary file beside name and renames it into
// place, so a reader never sees half a report.
func writeFile(name string, b []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

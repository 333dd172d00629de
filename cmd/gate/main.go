// Command gate is the conformance gate: it checks that generated/ is what
// spec/ generates, then runs, for every store registered with
// conformance/gate, the conformance suite, every case generated from the
// store's spec, a backend round trip and the store's SDK checks, and prints
// a table. --junit and --json write the same results for a CI system, and
// --sdk-include checks the spec's code table against the SDK's headers.
//
// Exit codes: 0 when every check passed (or was skipped), 1 when a check
// failed or generated/ is stale, 2 on bad usage or when the gate could not
// set up or read what it needs (a store's server, a header, a report file).
// 'make run' runs it; docs/sdk-ci.md shows it in an SDK's CI.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kvblob/kvblob/conformance/gate"
	"github.com/kvblob/kvblob/gen"
)

type storeList []string

func (s *storeList) String() string     { return strings.Join(*s, ",") }
func (s *storeList) Set(v string) error { *s = append(*s, v); return nil }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the gate's flags.
type options struct {
	stores              storeList
	sdk                 string
	specDir, outDir     string
	verbose             bool
	junit, json         string
	sdkInclude, sdkEnum string
}

// run is the gate; it returns the exit code (see the package doc).
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gate [--store NAME]... [--sdk fake|real] [-spec DIR] [-out DIR] [-v]")
		fmt.Fprintln(stderr, "            [--junit FILE] [--json FILE] [--sdk-include DIR [--sdk-enum NAME]]")
		fmt.Fprintln(stderr, "\nChecks generated/ against spec/, then runs the conformance suite, every case")
		fmt.Fprintln(stderr, "generated from the store's spec, a backend round trip and the store's SDK checks")
		fmt.Fprintln(stderr, "for each registered store.")
		fmt.Fprintln(stderr, "\nExit codes: 0 every check passed or was skipped; 1 a check failed or generated/")
		fmt.Fprintln(stderr, "is stale; 2 bad usage, or a set-up, header or report file the gate could not use.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	var o options
	fs.Var(&o.stores, "store", "run only this store (repeatable); default: every store")
	fs.StringVar(&o.sdk, "sdk", "fake", "fake: Mooncake over the fake SDK; real: the cgo SDK (needs -tags mooncake)")
	fs.StringVar(&o.specDir, "spec", "spec", "folder of spec files")
	fs.StringVar(&o.outDir, "out", "generated", "folder of generated packages")
	fs.BoolVar(&o.verbose, "v", false, "print every check as it finishes")
	fs.StringVar(&o.junit, "junit", "", "write the results as JUnit XML to `FILE`")
	fs.StringVar(&o.json, "json", "", "write the results as JSON to `FILE` (fields: docs/sdk-ci.md)")
	fs.StringVar(&o.sdkInclude, "sdk-include", "", "check each store's code table against the enum its SDK's headers under `DIR` declare")
	fs.StringVar(&o.sdkEnum, "sdk-enum", "", "the enum --sdk-include reads (default: the one the store registers, e.g. ErrorCode)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "gate: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if o.sdk != "fake" && o.sdk != "real" {
		fmt.Fprintf(stderr, "gate: --sdk %q; want fake or real\n", o.sdk)
		return 2
	}
	registered, ok := bySDK(gate.Stores(), o.sdk == "real")
	if !ok {
		fmt.Fprintln(stderr, "gate: --sdk real needs a gate built with -tags mooncake (go build -tags mooncake ./cmd/gate) against an installed SDK; this one has only the fake SDK")
		return 2
	}
	known := map[string]bool{}
	for _, s := range registered {
		known[s.Name] = true
	}
	for _, s := range o.stores {
		if !known[s] {
			fmt.Fprintf(stderr, "gate: unknown store %q; want one of %s\n", s, strings.Join(sortedKeys(known), ", "))
			return 2
		}
	}
	var selected []gate.Store
	for _, s := range registered {
		if len(o.stores) == 0 || slices.Contains(o.stores, s.Name) {
			selected = append(selected, s)
		}
	}
	if o.sdkEnum != "" && o.sdkInclude == "" {
		fmt.Fprintln(stderr, "gate: --sdk-enum needs --sdk-include DIR")
		return 2
	}
	if o.sdkEnum != "" && len(selected) != 1 {
		fmt.Fprintln(stderr, "gate: --sdk-enum names one store's enum; select that store with --store NAME")
		return 2
	}
	if o.sdkInclude != "" && o.sdkEnum == "" && !slices.ContainsFunc(selected, func(s gate.Store) bool { return s.CodeEnum != "" }) {
		fmt.Fprintln(stderr, "gate: --sdk-include: no selected store registers the enum of its codes; name it with --sdk-enum NAME")
		return 2
	}

	rep := &report{}
	// 1. generated/ must be what spec/ generates.
	fmt.Fprintf(stderr, "gate: checking %s against %s\n", o.outDir, o.specDir)
	specs := upToDate(o.specDir, o.outDir, &rep.Generated, stderr)
	// 2. Each store's suite, generated cases and SDK checks.
	if rep.Generated.Status == statusPassed {
		for _, s := range selected {
			var extra []gateCheck
			if o.sdkInclude != "" {
				if c, ok := headerCheck(s, specs, o.sdkInclude, o.sdkEnum); ok {
					extra = append(extra, c)
				}
			}
			rep.Stores = append(rep.Stores, runGateStore(s, extra, stderr, o.verbose))
		}
		printTable(stdout, rep.Stores)
	}
	rep.finish()
	if err := writeReports(rep, o.junit, o.json); err != nil {
		fmt.Fprintf(stderr, "gate: writing the report: %v\n", err)
		return 2
	}
	switch rep.ExitCode {
	case 0:
		fmt.Fprintln(stdout, "gate: ok")
	case 1:
		fmt.Fprintln(stdout, "gate: FAILED")
	default:
		fmt.Fprintln(stdout, "gate: ERROR: a store, header or spec could not be set up or read")
	}
	return rep.ExitCode
}

// bySDK picks, for each store name, the registration --sdk selects: with
// real, the real SDK's where one is registered (false when none is), else
// the default; without, never a real SDK's.
func bySDK(all []gate.Store, real bool) ([]gate.Store, bool) {
	hasReal := map[string]bool{}
	for _, s := range all {
		if s.Real {
			hasReal[s.Name] = true
		}
	}
	if real && len(hasReal) == 0 {
		return nil, false
	}
	var out []gate.Store
	for _, s := range all {
		if s.Real == (real && hasReal[s.Name]) {
			out = append(out, s)
		}
	}
	return out, true
}

// upToDate checks that outDir holds what specDir generates, naming each
// file that differs, and records the check in *res. It returns the specs.
func upToDate(specDir, outDir string, res *checkResult, stderr io.Writer) []*gen.Spec {
	start := time.Now()
	*res = checkResult{Name: "up_to_date", Kind: kindGenerated, Status: statusPassed}
	defer func() { res.Seconds = time.Since(start).Seconds() }()
	fail := func(msg string) []*gen.Spec {
		fmt.Fprintln(stderr, msg)
		res.Status, res.Message = statusFailed, msg
		return nil
	}
	specs, err := gen.LoadDir(specDir)
	if err != nil {
		return fail(err.Error())
	}
	files, err := gen.Generate(specs, gen.DefaultOptions)
	if err != nil {
		return fail(err.Error())
	}
	differ, stale, err := gen.Drift(outDir, files)
	if err != nil {
		res.Status, res.Message = statusError, err.Error()
		fmt.Fprintln(stderr, err)
		return nil
	}
	if len(differ)+len(stale) > 0 {
		var lines []string
		for _, name := range append(differ, stale...) {
			lines = append(lines, fmt.Sprintf("gate: %s differs from what %s generates", filepath.Join(outDir, name), specDir))
		}
		lines = append(lines, "gate: generated/ is stale; run 'make generate' ('drivergen check' shows the diff)")
		return fail(strings.Join(lines, "\n"))
	}
	return specs
}

// runGateStore runs every check of s, then extra (checks that need no
// set-up), and returns its row.
func runGateStore(s gate.Store, extra []gateCheck, stderr io.Writer, verbose bool) (row storeResult) {
	row = storeResult{Store: s.Name, SDK: s.SDK}
	start := time.Now()
	defer func() { row.Seconds = time.Since(start).Seconds() }()
	checks := append(storeChecks(s, &row.RoundTrip), extra...)
	if s.Setup != nil {
		skip, teardown, err := s.Setup()
		switch {
		case err != nil:
			row.add(checkResult{Name: "setup", Kind: kindSetup, Status: statusError, Message: err.Error()})
			row.SkipReason = "set-up failed: " + err.Error()
		case skip != "":
			row.SkipReason = skip
			fmt.Fprintf(stderr, "gate: %s skipped: %s\n", s.Name, skip)
		}
		if teardown != nil {
			defer teardown()
		}
	}
	tty := isTerminal(stderr)
	for i, c := range checks {
		res := checkResult{Name: c.name, Kind: c.kind, Spec: c.spec}
		if c.needsSetup && row.SkipReason != "" {
			res.Status, res.Message = statusSkipped, row.SkipReason
			row.add(res)
			continue
		}
		t0 := time.Now()
		v := c.run()
		res.Seconds = time.Since(t0).Seconds()
		res.Message = v.reason
		switch {
		case v.skipped:
			res.Status = statusSkipped
		case v.passed:
			res.Status = statusPassed
		case v.errored:
			res.Status = statusError
		default:
			res.Status = statusFailed
		}
		row.add(res)
		switch {
		case verbose || res.Status == statusFailed || res.Status == statusError:
			fmt.Fprintf(stderr, "gate: %-8s %4d/%d %-4s %s\n", s.Name, i+1, len(checks), strings.ToUpper(res.Status), c.name)
		case tty:
			fmt.Fprintf(stderr, "\rgate: %-8s %4d/%d", s.Name, i+1, len(checks))
		}
	}
	if tty && !verbose {
		fmt.Fprintln(stderr)
	}
	fmt.Fprintf(stderr, "gate: %s done in %v: %d passed, %d failed, %d skipped\n", s.Name, time.Since(start).Round(time.Millisecond), row.Passed, row.Failed+row.Errors, row.Skipped)
	return row
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

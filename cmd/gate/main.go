// Command gate is the conformance gate: it checks that generated/ is what
// spec/ generates, then runs, for every store registered with
// conformance/gate, the conformance suite, every case generated from the
// store's spec and a backend round trip, and prints a table. It exits 0
// when every store passed, 1 when a check failed or generated/ is stale,
// and 2 on bad usage. 'make run' runs it.
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
	"text/tabwriter"
	"time"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/gate"
	"github.com/kvblob/kvblob/gen"
)

type storeList []string

func (s *storeList) String() string     { return strings.Join(*s, ",") }
func (s *storeList) Set(v string) error { *s = append(*s, v); return nil }

type gateRow struct {
	store, sdk              string
	passed, failed, skipped int
	reasons                 map[string]int // skip reasons, counted
	roundTrip               string         // the demonstration round trip
	failures                []string
	skippedStore            string
	took                    time.Duration
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// run is the gate: exit 0 when every store passed, 1 when a check failed or
// generated/ is stale, 2 on bad usage.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gate [--store NAME]... [--sdk fake|real] [-spec DIR] [-out DIR] [-v]")
		fmt.Fprintln(stderr, "\nChecks generated/ against spec/, then runs the conformance suite, every case")
		fmt.Fprintln(stderr, "generated from the store's spec and a backend round trip for each registered store.")
		fs.PrintDefaults()
	}
	var stores storeList
	fs.Var(&stores, "store", "run only this store (repeatable); default: every store")
	sdk := fs.String("sdk", "fake", "fake: Mooncake over the fake SDK; real: the cgo SDK (needs -tags mooncake)")
	specDir := fs.String("spec", "spec", "folder of spec files")
	outDir := fs.String("out", "generated", "folder of generated packages")
	verbose := fs.Bool("v", false, "print every check as it finishes")
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
	switch *sdk {
	case "fake":
	case "real":
		fmt.Fprintln(stderr, "gate: --sdk real needs a gate built with -tags mooncake and MOONCAKE_REAL=1; this one has only the fake SDK")
		return 2
	default:
		fmt.Fprintf(stderr, "gate: --sdk %q; want fake or real\n", *sdk)
		return 2
	}
	registered := gate.Stores()
	known := map[string]bool{}
	for _, s := range registered {
		known[s.Name] = true
	}
	for _, s := range stores {
		if !known[s] {
			fmt.Fprintf(stderr, "gate: unknown store %q; want one of %s\n", s, strings.Join(sortedKeys(known), ", "))
			return 2
		}
	}

	// 1. generated/ must be what spec/ generates.
	fmt.Fprintf(stderr, "gate: checking %s against %s\n", *outDir, *specDir)
	if !upToDate(*specDir, *outDir, stderr) {
		return 1
	}

	// 2. Each store's suite and generated cases.
	var rows []gateRow
	failed := false
	for _, s := range registered {
		if len(stores) > 0 && !slices.Contains(stores, s.Name) {
			continue
		}
		row := runGateStore(s, stderr, *verbose)
		failed = failed || row.failed > 0
		rows = append(rows, row)
	}
	printGateTable(stdout, rows)
	if failed {
		fmt.Fprintln(stdout, "gate: FAILED")
		return 1
	}
	fmt.Fprintln(stdout, "gate: ok")
	return 0
}

// upToDate reports whether outDir holds what specDir generates, naming
// each file that differs.
func upToDate(specDir, outDir string, stderr io.Writer) bool {
	specs, err := gen.LoadDir(specDir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return false
	}
	files, err := gen.Generate(specs, gen.DefaultOptions)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return false
	}
	differ, stale, err := gen.Drift(outDir, files)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return false
	}
	for _, name := range append(differ, stale...) {
		fmt.Fprintf(stderr, "gate: %s differs from what %s generates\n", filepath.Join(outDir, name), specDir)
	}
	if len(differ)+len(stale) > 0 {
		fmt.Fprintln(stderr, "gate: generated/ is stale; run 'make generate' ('drivergen check' shows the diff)")
		return false
	}
	return true
}

func runGateStore(s gate.Store, stderr io.Writer, verbose bool) gateRow {
	row := gateRow{store: s.Name, sdk: s.SDK, reasons: map[string]int{}}
	start := time.Now()
	if s.Setup != nil {
		skip, teardown, err := s.Setup()
		if err != nil {
			row.failed++
			row.failures = append(row.failures, "setup: "+err.Error())
			return row
		}
		if skip != "" {
			row.skippedStore = skip
			fmt.Fprintf(stderr, "gate: %s skipped: %s\n", s.Name, skip)
			return row
		}
		if teardown != nil {
			defer teardown()
		}
	}
	suite := conformance.Suite{Scenarios: s.Scenarios, Cases: s.Cases, Stage: s.Stage, KnownFailures: s.KnownFailures}
	checks := append(suite.Checks(), roundTripCheck(&row.roundTrip))
	tty := isTerminal(stderr)
	for i, c := range checks {
		o := conformance.RunRecorded(c, s.Factory, suite)
		status := "ok"
		switch {
		case o.Skipped:
			row.skipped++
			row.reasons[o.Reason]++
			status = "skip"
		case o.Passed:
			row.passed++
		default:
			row.failed++
			row.failures = append(row.failures, c.Name+": "+o.Reason)
			status = "FAIL"
		}
		switch {
		case verbose || status == "FAIL":
			fmt.Fprintf(stderr, "gate: %-8s %4d/%d %-4s %s\n", s.Name, i+1, len(checks), status, c.Name)
		case tty:
			fmt.Fprintf(stderr, "\rgate: %-8s %4d/%d", s.Name, i+1, len(checks))
		}
	}
	row.took = time.Since(start)
	if tty && !verbose {
		fmt.Fprintln(stderr)
	}
	fmt.Fprintf(stderr, "gate: %s done in %v: %d passed, %d failed, %d skipped\n", s.Name, row.took.Round(time.Millisecond), row.passed, row.failed, row.skipped)
	return row
}

func printGateTable(w io.Writer, rows []gateRow) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STORE\tSDK\tPASSED\tFAILED\tSKIPPED\tTIME\tBACKEND ROUND TRIP")
	for _, r := range rows {
		if r.skippedStore != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\tall\t-\t-\n", r.store, r.sdk)
			continue
		}
		trip := r.roundTrip
		if trip == "" {
			trip = "failed"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%v\t%s\n", r.store, r.sdk, r.passed, r.failed, r.skipped, r.took.Round(time.Millisecond), trip)
	}
	tw.Flush()
	for _, r := range rows {
		if r.skippedStore != "" {
			fmt.Fprintf(w, "  %s skipped: %s\n", r.store, r.skippedStore)
		}
		for _, reason := range sortedKeys(r.reasons) {
			fmt.Fprintf(w, "  %s skipped %d: %s\n", r.store, r.reasons[reason], reason)
		}
		for _, f := range r.failures {
			fmt.Fprintf(w, "  %s FAILED %s\n", r.store, f)
		}
	}
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

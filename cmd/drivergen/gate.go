package main

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/speccase"
)

// gateStore is one store the gate can run: its embedded default driver,
// the scenarios it stages and its generated cases.
type gateStore struct {
	name      string
	sdk       string // SDK name and version
	factory   conformance.Factory
	scenarios conformance.Scenarios
	cases     []speccase.Case
	stage     conformance.Stager
	// setup readies the store (a server to start); it returns a reason to
	// skip the store, and a teardown.
	setup func() (skip string, teardown func(), err error)
}

// gateStores is filled by gate_stores.go.
var gateStores []gateStore

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

func runGate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("gate", "gate [--store NAME]... [--sdk fake|real] [-v]", stderr)
	var stores storeList
	fs.Var(&stores, "store", "run only this store (repeatable); default: every store")
	sdk := fs.String("sdk", "fake", "fake: Mooncake over the fake 0.3.13 SDK; real: the cgo SDK (needs -tags mooncake)")
	specDir := fs.String("spec", "spec", "folder of spec files")
	outDir := fs.String("out", "generated", "folder of generated packages")
	verbose := fs.Bool("v", false, "print every check as it finishes")
	if code := parse(fs, args); code >= 0 {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "drivergen gate: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	switch *sdk {
	case "fake":
	case "real":
		fmt.Fprintln(stderr, "drivergen gate: --sdk real needs a drivergen built with -tags mooncake and MOONCAKE_REAL=1; this one has only the fake SDK")
		return 2
	default:
		fmt.Fprintf(stderr, "drivergen gate: --sdk %q; want fake or real\n", *sdk)
		return 2
	}
	known := map[string]bool{}
	for _, s := range gateStores {
		known[s.name] = true
	}
	for _, s := range stores {
		if !known[s] {
			fmt.Fprintf(stderr, "drivergen gate: unknown store %q; want one of %s\n", s, strings.Join(sortedKeys(known), ", "))
			return 2
		}
	}

	// 1. generated/ must be what spec/ generates.
	fmt.Fprintf(stderr, "gate: checking %s against %s\n", *outDir, *specDir)
	if code := runCheck([]string{"-spec", *specDir, "-out", *outDir}, io.Discard, stderr); code != 0 {
		return code
	}

	// 2. Each store's suite and generated cases.
	var rows []gateRow
	failed := false
	for _, s := range gateStores {
		if len(stores) > 0 && !contains(stores, s.name) {
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

func runGateStore(s gateStore, stderr io.Writer, verbose bool) gateRow {
	row := gateRow{store: s.name, sdk: s.sdk, reasons: map[string]int{}}
	start := time.Now()
	if s.setup != nil {
		skip, teardown, err := s.setup()
		if err != nil {
			row.failed++
			row.failures = append(row.failures, "setup: "+err.Error())
			return row
		}
		if skip != "" {
			row.skippedStore = skip
			fmt.Fprintf(stderr, "gate: %s skipped: %s\n", s.name, skip)
			return row
		}
		if teardown != nil {
			defer teardown()
		}
	}
	checks := append(append([]conformance.Check(nil), conformance.Checks...), conformance.CaseChecks(s.cases, s.stage, false)...)
	checks = append(checks, roundTripCheck(&row.roundTrip))
	tty := isTerminal(stderr)
	for i, c := range checks {
		o := conformance.RunRecorded(c, s.factory, s.scenarios)
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
			fmt.Fprintf(stderr, "gate: %-8s %4d/%d %-4s %s\n", s.name, i+1, len(checks), status, c.Name)
		case tty:
			fmt.Fprintf(stderr, "\rgate: %-8s %4d/%d", s.name, i+1, len(checks))
		}
	}
	row.took = time.Since(start)
	if tty && !verbose {
		fmt.Fprintln(stderr)
	}
	fmt.Fprintf(stderr, "gate: %s done in %v: %d passed, %d failed, %d skipped\n", s.name, row.took.Round(time.Millisecond), row.passed, row.failed, row.skipped)
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

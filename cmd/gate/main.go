// Command gate is the conformance gate: it checks that generated/ is what
// spec/ generates, then runs every store's TestConformance and TestWitness
// through go test (go test -json -run '^(TestConformance|TestWitness)$'
// over each package under ./stores/... that declares TestConformance) and
// turns its events into a table: per store, the conformance suite, every
// case generated from the store's spec, the backend round trip, the
// store's SDK checks, and how many of its spec's rules a run on the real
// medium witnessed, the others listed (witness.go; docs/witnesses.md). --junit and
// --json write the same results for a CI system, and --sdk-include checks
// the spec's code table against the SDK's headers.
//
// What the table needs beyond pass and fail (a store's SDK, a check's spec
// position, the round trip's figure) the suite logs as lines of the form
// "conformance: KEY: VALUE" (conformance.ParseFact).
//
// Exit codes: 0 when every check passed (or was skipped), 1 when a check
// failed or generated/ is stale, 2 on bad usage or when the gate could not
// set up or read what it needs. Set-up problems it can see before it runs
// anything it checks first (flags, a -C folder that is not there, a run
// outside a kvblob checkout, -spec or -out not a folder, a report file it
// cannot write); the run finds the rest (a --store no package runs, a
// store's server, a package that does not build, a header). Each report
// asked for is written whatever the outcome, a set-up problem as an error
// entry.
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

	"github.com/kvblob/kvblob/gen"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// options are the gate's flags.
type options struct {
	dir                 string
	stores, packages    stringList
	sdk                 string
	specDir, outDir     string
	verbose             bool
	junit, json         string
	sdkInclude, sdkEnum string
	timeout             time.Duration
}

// run is the gate; it returns the exit code (see the package doc).
func run(args []string, stdout, stderr io.Writer) int {
	return gate{goTest: execGoTest}.run(args, stdout, stderr)
}

// gate is the gate with the go test it runs, which its tests replace,
// and what generates the code generated/ is checked against (nil:
// gen.Generate with gen.DefaultOptions; its tests, which run the gate on
// the same spec/ dozens of times, keep one answer per spec folder's
// bytes, since rendering and formatting every file was most of their CPU
// under -race).
type gate struct {
	goTest   goTester
	generate generator
}

// generator returns every file specs generate, from the specs loaded
// from specDir.
type generator func(specDir string, specs []*gen.Spec) (map[string][]byte, error)

func (g gate) run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "cgoflags" {
		return runCgoflags(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gate [-C DIR] [--store NAME]... [--sdk fake|real] [-spec DIR] [-out DIR] [-v]")
		fmt.Fprintln(stderr, "            [--junit FILE] [--json FILE] [--sdk-include DIR [--sdk-enum NAME]] [--packages PKG]...")
		fmt.Fprintln(stderr, "       gate cgoflags [-format sh|github] BUILD_DIR   (the cgo flags of a Mooncake build tree)")
		fmt.Fprintln(stderr, "\nChecks generated/ against spec/, then runs every store's TestConformance through")
		fmt.Fprintln(stderr, "go test: the conformance suite, every case generated from the store's spec, a backend")
		fmt.Fprintln(stderr, "round trip and the store's SDK checks.")
		fmt.Fprintln(stderr, "\nExit codes: 0 every check passed or was skipped; 1 a check failed or generated/")
		fmt.Fprintln(stderr, "is stale; 2 bad usage, or a set-up, package, header or report file the gate could not use.")
		fmt.Fprintln(stderr)
		fs.PrintDefaults()
	}
	var o options
	fs.StringVar(&o.dir, "C", "", "run in `DIR`, a kvblob checkout, as if started there (as go -C does); report paths are taken from there too")
	fs.Var(&o.stores, "store", "run only this store, a row of the table (repeatable); default: every store")
	fs.StringVar(&o.sdk, "sdk", "fake", "fake: Mooncake over the fake SDK; real: the cgo SDK (-tags mooncake, MOONCAKE_REAL=1; needs an installed SDK)")
	fs.StringVar(&o.specDir, "spec", "spec", "folder of spec files")
	fs.StringVar(&o.outDir, "out", "generated", "folder of generated packages")
	fs.BoolVar(&o.verbose, "v", false, "print every check as it finishes")
	fs.StringVar(&o.junit, "junit", "", "write the results as JUnit XML to `FILE`")
	fs.StringVar(&o.json, "json", "", "write the results as JSON to `FILE` (fields: docs/sdk-ci.md)")
	fs.StringVar(&o.sdkInclude, "sdk-include", "", "check each store's code table against the enum its SDK's headers under `DIR` declare")
	fs.StringVar(&o.sdkEnum, "sdk-enum", "", "the enum --sdk-include reads (default: the one the store's suite names, e.g. ErrorCode)")
	// go test's own default, 10m, stopped a real Mooncake run on a busy
	// machine: each check opens and tears down a real client (~2 s), and
	// a check whose client cannot reach the master retries for ~90 s.
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "go test's -timeout: the whole run's bound (a real SDK's suite takes minutes)")
	fs.Var(&o.packages, "packages", "run the TestConformance of this `package` (a path from the module root; repeatable) instead of every one under "+storesPattern)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	// usage reports a problem found before or instead of the run: it
	// exits 2, and still writes the reports asked for (a CI step that
	// uploads them "if: always()" then finds an error entry, not nothing).
	usage := func(format string, args ...any) int {
		msg := fmt.Sprintf(format, args...)
		fmt.Fprintln(stderr, "gate: "+msg)
		setupReport(o, msg, stderr)
		return 2
	}
	if o.dir != "" {
		if err := os.Chdir(o.dir); err != nil {
			return usage("-C %s: %v", o.dir, err)
		}
	}
	switch {
	case fs.NArg() > 0:
		return usage("unexpected argument %q", fs.Arg(0))
	case o.sdk != "fake" && o.sdk != "real":
		return usage("--sdk %q; want fake or real", o.sdk)
	case o.sdkEnum != "" && o.sdkInclude == "":
		return usage("--sdk-enum needs --sdk-include DIR")
	case o.sdkEnum != "" && len(o.stores) != 1:
		return usage("--sdk-enum names one store's enum; select that store with --store NAME")
	}
	// Every set-up problem is found here, before anything runs, and exits
	// 2: a report file the gate could not write, a checkout it is not run
	// from, a store no spec names.
	for _, f := range []string{o.junit, o.json} {
		if f == "" {
			continue
		}
		if err := writable(f); err != nil {
			return usage("writing the report: cannot write %s: %v", f, err)
		}
	}
	root, err := moduleRoot()
	if err != nil {
		return usage("%v", err)
	}
	for _, d := range []struct{ flag, dir string }{{"-spec", o.specDir}, {"-out", o.outDir}} {
		if fi, err := os.Stat(d.dir); err != nil || !fi.IsDir() {
			return usage("%s %s is no folder; run the gate from the root of a kvblob checkout (%s), or pass %s DIR", d.flag, d.dir, root, d.flag)
		}
	}
	// A --store names a row of the table: a spec's (gen.VersionName) or
	// one a store's package adds (s3-large), so an unknown one is found
	// by the run, which hears every row each package announces.

	rep := &report{}
	// 1. generated/ must be what spec/ generates.
	fmt.Fprintf(stderr, "gate: checking %s against %s\n", o.outDir, o.specDir)
	specs := upToDate(o.specDir, o.outDir, g.generate, &rep.Generated, stderr)
	// 2. Each store's TestConformance, through go test.
	if rep.Generated.Status == statusPassed {
		if msg := g.runStores(o, root, specs, rep, stdout, stderr); msg != "" {
			return usage("%s", msg)
		}
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
		fmt.Fprintln(stdout, "gate: ERROR: a store, package, header or spec could not be set up, built or read")
	}
	return rep.ExitCode
}

// runStores runs the stores' tests and puts their rows in rep, printing
// the table. It returns what went wrong when the run revealed a set-up
// problem that no row can carry (a store no package runs, headers no
// store names the enum of), else "".
func (g gate) runStores(o options, root string, specs []*gen.Spec, rep *report, stdout, stderr io.Writer) string {
	real := o.sdk == "real"
	pkgs, realPkgs := []string(o.packages), map[string]bool{}
	for i, p := range pkgs {
		// A path from the module root ("stores/mooncake"), which go test
		// would take for a standard library package.
		if !strings.HasPrefix(p, ".") && !filepath.IsAbs(p) && !strings.HasPrefix(p, kvblobModule) {
			pkgs[i] = "./" + p
		}
	}
	if len(pkgs) == 0 {
		var err error
		if pkgs, err = storePackages(root, ""); err != nil {
			return err.Error()
		}
		if real {
			tagged, err := storePackages(root, realSDKTag)
			if err != nil {
				return err.Error()
			}
			for _, p := range tagged {
				if !slices.Contains(pkgs, p) {
					realPkgs[p] = true
					pkgs = append(pkgs, p)
				}
			}
			if len(realPkgs) == 0 {
				return fmt.Sprintf("--sdk real: no package under %s declares its TestConformance behind -tags %s", storesPattern, realSDKTag)
			}
		}
	}
	var env []string
	if real {
		env = append(env, "MOONCAKE_REAL=1")
	}
	c := newCollector(stderr, o.verbose)
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- c.read(pr) }()
	err := g.goTest(root, testArgs(pkgs, o.stores, witnessStems(specs, o.stores), real, o.timeout), env, pw)
	pw.Close()
	if rerr := <-done; err == nil {
		err = rerr
	}
	if err != nil {
		return fmt.Sprintf("running go test: %v", err)
	}
	for _, s := range o.stores {
		if !c.names[s] {
			return fmt.Sprintf("unknown store %q; want one of %s", s, strings.Join(sortedKeys(c.names), ", "))
		}
	}

	rows, broken := c.rows()
	rows = onlyNamed(realReplacesFake(rows, realPkgs), o.stores)
	c.witnessRows(rows, specs)
	if o.sdkInclude != "" {
		named := false
		for _, r := range rows {
			enum := r.codeEnum
			if o.sdkEnum != "" {
				enum = o.sdkEnum
			}
			if enum != "" && r.Errors == 0 {
				named = true
				r.add(headerCheck(r.spec, specs, o.sdkInclude, enum))
			}
		}
		if !named {
			return "--sdk-include: no selected store names the enum of its codes (conformance.Suite.CodeEnum); name it with --sdk-enum NAME"
		}
	}
	for _, r := range rows {
		rep.Stores = append(rep.Stores, r.storeResult)
	}
	for _, p := range sortedKeys(broken) {
		name := strings.TrimPrefix(p, "github.com/kvblob/kvblob/")
		if name == "" {
			name = "go test"
		}
		msg := strings.Join(broken[p], "\n")
		fmt.Fprintf(stderr, "gate: %s did not run: %s\n", name, msg)
		row := storeResult{Store: name, SkipReason: "did not run: " + firstLine(msg)}
		row.add(checkResult{Name: "setup", Kind: kindSetup, Status: statusError, Message: msg})
		rep.Stores = append(rep.Stores, row)
	}
	printTable(stdout, rep.Stores)
	return ""
}

// setupReport writes the reports o asks for, each holding one error
// entry: the set-up problem msg that kept the gate from running (or from
// finishing) its checks. A report file it cannot write is said on stderr
// and skipped.
func setupReport(o options, msg string, stderr io.Writer) {
	if o.junit == "" && o.json == "" {
		return
	}
	rep := &report{Generated: checkResult{Name: "up_to_date", Kind: kindGenerated, Status: statusSkipped, Message: "not checked: the gate could not set up"}}
	row := storeResult{Store: "gate", SkipReason: "set-up failed: " + firstLine(msg)}
	row.add(checkResult{Name: "setup", Kind: kindSetup, Status: statusError, Message: msg})
	rep.Stores = append(rep.Stores, row)
	rep.finish()
	for _, f := range []struct{ junit, json string }{{o.junit, ""}, {"", o.json}} {
		name := f.junit + f.json
		if name == "" || writable(name) != nil {
			continue
		}
		if err := writeReports(rep, f.junit, f.json); err != nil {
			fmt.Fprintf(stderr, "gate: writing the report: %v\n", err)
		}
	}
}

// writable says why the gate could not write a report to f, or nil: f
// must not be a folder, and its folder must exist and take a new file
// (the report is written beside it and renamed into place).
func writable(f string) error {
	dir := filepath.Dir(f)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("no folder %s", dir)
	}
	if fi, err := os.Stat(f); err == nil && fi.IsDir() {
		return errors.New("it is a folder")
	}
	probe, err := os.CreateTemp(dir, "."+filepath.Base(f)+".probe-*")
	if err != nil {
		return fmt.Errorf("folder %s takes no new file: %w", dir, err)
	}
	probe.Close()
	return os.Remove(probe.Name())
}

// realReplacesFake drops, for each store a package built with the real SDK
// runs, the row of the same name that a default build's package runs (the
// fake SDK's).
func realReplacesFake(rows []*storeRow, realPkgs map[string]bool) []*storeRow {
	real := map[string]bool{}
	for _, r := range rows {
		if realPkgs[r.pkg] {
			real[r.Store] = true
		}
	}
	var out []*storeRow
	for _, r := range rows {
		if realPkgs[r.pkg] || !real[r.Store] {
			out = append(out, r)
		}
	}
	return out
}

// onlyNamed keeps the rows of the stores --store named (all when none
// was): a package can run several rows (Redis runs one per spec), and a
// spec's witnesses are selected by the store the spec names, so the run
// can hold rows nobody asked for; reporting them would answer a question
// not asked, under a selection that did not ask it.
func onlyNamed(rows []*storeRow, stores []string) []*storeRow {
	if len(stores) == 0 {
		return rows
	}
	var out []*storeRow
	for _, r := range rows {
		if slices.Contains(stores, r.Store) {
			out = append(out, r)
		}
	}
	return out
}

// upToDate checks that outDir holds what specDir generates (by generate,
// nil for gen.Generate), naming each file that differs, and records the
// check in *res. It returns the specs.
func upToDate(specDir, outDir string, generate generator, res *checkResult, stderr io.Writer) []*gen.Spec {
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
	if generate == nil {
		generate = func(_ string, specs []*gen.Spec) (map[string][]byte, error) {
			return gen.Generate(specs, gen.DefaultOptions)
		}
	}
	files, err := generate(specDir, specs)
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

// Command drivergen turns store specs (spec/*.yaml) into Go (generated/).
//
// Usage:
//
//	drivergen generate [-spec DIR] [-out DIR]   write generated/ from spec/
//	drivergen check    [-spec DIR] [-out DIR]   exit 1 if generated/ is stale
//	drivergen validate [-header F -enum E] FILE...  check spec files (and their codes against an SDK header)
//	drivergen new      [-root DIR] STORE        scaffold a spec, driver and test
//	drivergen new      --from SPEC --version V  start a new SDK version's spec as a copy
//	drivergen diff     [-json] OLD NEW          what changed between two specs of one store
//
// Spec errors print as "file:line:col: message", one a line.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/kvblob/kvblob/gen"
)

var log = newLog(os.Stderr)

// newLog is drivergen's log, written to w: what generate did, a line per
// file it wrote or removed.
func newLog(w io.Writer) zerolog.Logger {
	return zerolog.New(zerolog.ConsoleWriter{Out: w, NoColor: true, PartsExclude: []string{zerolog.TimestampFieldName}}).
		With().Str("tool", "drivergen").Logger()
}

type command struct {
	name, usage, summary string
	run                  func(args []string, stdout, stderr io.Writer) int
}

var commands []command

func init() {
	commands = []command{
		{"generate", "generate [-spec DIR] [-out DIR]", "write every store's package into generated/", runGenerate},
		{"check", "check [-spec DIR] [-out DIR]", "exit 1 naming each file of generated/ that differs from what the specs generate", runCheck},
		{"validate", "validate [-header F -enum E] FILE...", "load and validate spec files; print every error as file:line:col", runValidateCmd},
		{"new", "new [-root DIR] STORE", "scaffold spec/STORE.yaml, stores/STORE/driver.go and its conformance test", runNewCmd},
		{"new", "new --from SPEC --version V", "start a new SDK version's spec as a copy of SPEC", runNewCmd},
		{"diff", "diff [-json] OLD NEW", "codes, rules and generated cases that differ between two specs of one store", runDiff},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "drivergen turns store specs (spec/*.yaml) into Go (generated/).")
	fmt.Fprintln(w, "\nUsage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  drivergen %-42s %s\n", c.usage, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'drivergen COMMAND -help' for a command's flags.")
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "drivergen: unknown command %q\n", args[0])
	usage(stderr)
	return 2
}

func newFlags(name, usageLine string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: drivergen %s\n", usageLine)
		fs.PrintDefaults()
	}
	return fs
}

// flagExit is a command's exit code when fs.Parse failed, having printed
// why: 0 when -help asked for the usage, 2 for a flag it does not take.
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

// loadAndGenerate loads specDir and renders every package.
func loadAndGenerate(specDir string, stderr io.Writer) (map[string][]byte, bool) {
	specs, err := gen.LoadDir(specDir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, false
	}
	files, err := gen.Generate(specs, gen.DefaultOptions)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, false
	}
	return files, true
}

// extraArgs reports, having said so, that a command taking flags only was
// given positional arguments (a usage error: exit 2).
func extraArgs(fs *flag.FlagSet, stderr io.Writer) bool {
	if fs.NArg() == 0 {
		return false
	}
	fmt.Fprintf(stderr, "drivergen %s: unexpected argument %q; the command takes flags only\n", fs.Name(), fs.Arg(0))
	fs.Usage()
	return true
}

func runGenerate(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("generate", "generate [-spec DIR] [-out DIR]", stderr)
	specDir := fs.String("spec", "spec", "folder of spec files")
	outDir := fs.String("out", "generated", "folder to write packages into (per store, <store>/ and <store>/<store>cases/)")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if extraArgs(fs, stderr) {
		return 2
	}
	start := time.Now()
	files, ok := loadAndGenerate(*specDir, stderr)
	if !ok {
		return 1
	}
	if err := gen.CheckOut(*outDir, files); err != nil {
		fmt.Fprintf(stderr, "drivergen generate: %v\n", err)
		return 1
	}
	if err := insideModule(*specDir, *outDir); err != nil {
		fmt.Fprintf(stderr, "drivergen generate: %v\n", err)
		return 1
	}
	differ, stale, err := gen.Drift(*outDir, files)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	// Everything rendered: only now touch the disk, only what changed, and
	// remove stale files only once every new one is in place.
	if err := writeFiles(*outDir, differ, files); err != nil {
		fmt.Fprintf(stderr, "drivergen generate: %v\n", err)
		return 1
	}
	for _, name := range differ {
		log.Info().Str("file", filepath.Join(*outDir, name)).Msg("wrote")
	}
	for _, name := range stale {
		p := filepath.Join(*outDir, name)
		if err := os.Remove(p); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		log.Info().Str("file", p).Msg("removed stale generated file")
	}
	// A package folder no spec owns any more goes with its files; one
	// still holding anything (a hand-written test) stays.
	for _, dir := range gen.EmptiedFolders(stale) {
		p := filepath.Join(*outDir, filepath.FromSlash(dir))
		if entries, err := os.ReadDir(p); err == nil && len(entries) == 0 {
			if err := os.Remove(p); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
			log.Info().Str("folder", p).Msg("removed stale package folder")
		}
	}
	log.Info().Int("files", len(files)).Int("written", len(differ)).Int("removed", len(stale)).
		Str("took", time.Since(start).Round(time.Microsecond).String()).Msg("generate done")
	return 0
}

// createTemp is os.CreateTemp; tests replace it to fail a write part way.
var createTemp = os.CreateTemp

// writeFiles writes files[name] for each of names under outDir as one step
// as far as a file system allows: every file first goes to a temporary file
// beside its target, and only when all of them are written are they renamed
// into place. A failure before the renames leaves the tree as it was.
func writeFiles(outDir string, names []string, files map[string][]byte) error {
	temps := make([]string, 0, len(names))
	defer func() {
		for _, t := range temps {
			os.Remove(t) // a temporary file renamed into place is gone already
		}
	}()
	for _, name := range names {
		p := filepath.Join(outDir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		f, err := createTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
		if err != nil {
			return err
		}
		temps = append(temps, f.Name())
		_, err = f.Write(files[name])
		if err == nil {
			err = f.Chmod(0o644)
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	for i, name := range names {
		p := filepath.Join(outDir, filepath.FromSlash(name))
		if err := os.Rename(temps[i], p); err != nil {
			return fmt.Errorf("%w (files before %s were replaced)", err, name)
		}
	}
	return nil
}

func runCheck(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("check", "check [-spec DIR] [-out DIR]", stderr)
	specDir := fs.String("spec", "spec", "folder of spec files")
	outDir := fs.String("out", "generated", "folder of generated packages")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if extraArgs(fs, stderr) {
		return 2
	}
	files, ok := loadAndGenerate(*specDir, stderr)
	if !ok {
		return 1
	}
	differ, stale, err := gen.Drift(*outDir, files)
	if err != nil {
		fmt.Fprintf(stderr, "drivergen check: %v\n", err)
		return 1
	}
	if len(differ) == 0 && len(stale) == 0 {
		fmt.Fprintf(stdout, "generated/ is up to date (%d files)\n", len(files))
		return 0
	}
	for _, name := range differ {
		p := filepath.Join(*outDir, name)
		got, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintf(stderr, "%s: missing\n", p)
			continue
		}
		fmt.Fprintf(stderr, "%s: differs from what %s generates\n", p, *specDir)
		fmt.Fprint(stderr, gen.LineDiff(p+" (committed)", p+" (generated)", got, files[name]))
	}
	for _, name := range stale {
		fmt.Fprintf(stderr, "%s: generated file that no spec produces any more\n", filepath.Join(*outDir, name))
	}
	fmt.Fprintln(stderr, "generated/ is stale; run 'make generate'")
	return 1
}

// validateFiles loads each spec file, then checks each that loaded with
// check (nil: none) and the set together (CheckSet). Every error goes to
// stderr first; "FILE: ok" (with check's note) goes to stdout only for a
// spec that passed everything, and only once the whole set did, so no
// "ok" ever comes before a mismatch. It returns the exit code: 1 when
// anything failed.
func validateFiles(names []string, stdout, stderr io.Writer, check func(*gen.Spec) (note string, errs gen.ErrorList)) int {
	bad := 0
	var specs []*gen.Spec
	var oks []string
	for _, name := range names {
		data, err := gen.ReadSpec(name)
		if err != nil {
			fmt.Fprintln(stderr, err)
			bad++
			continue
		}
		s, err := gen.Load(name, data)
		if err != nil {
			fmt.Fprintln(stderr, err)
			bad++
			continue
		}
		specs = append(specs, s)
		note := ""
		if check != nil {
			var errs gen.ErrorList
			if note, errs = check(s); len(errs) > 0 {
				fmt.Fprintln(stderr, errs)
				bad++
				continue
			}
		}
		oks = append(oks, name+": ok"+note)
	}
	if errs := gen.CheckSet(specs); len(errs) > 0 {
		fmt.Fprintln(stderr, errs)
		bad++
	}
	for _, ok := range oks {
		fmt.Fprintln(stdout, ok)
	}
	if bad > 0 {
		return 1
	}
	return 0
}

func runNew(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("new", "new [-root DIR] STORE", stderr)
	root := fs.String("root", ".", "repository root")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	store := fs.Arg(0)
	if !isPackageName(store) {
		fmt.Fprintf(stderr, "drivergen new: store name %q must be lower-case letters and digits (it names a Go package)\n", store)
		return 2
	}
	files := scaffold(store)
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(*root, f.path)); err == nil {
			fmt.Fprintf(stderr, "drivergen new: %s exists; refusing to overwrite it\n", f.path)
			return 1
		}
	}
	for _, f := range files {
		p := filepath.Join(*root, f.path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		if err := os.WriteFile(p, []byte(f.body), 0o644); err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	fmt.Fprint(stdout, strings.NewReplacer("STORE", store, "SPECGO", gen.GoIdent(store)).Replace(nextSteps))
	return 0
}

// nextSteps is what 'drivergen new' tells the author to do, in order;
// docs/writing-a-store.md walks through the same steps
// (TestNextStepsAgreeWithTheGuideAndTheTree holds the two, and the tree,
// to each other).
const nextSteps = `next:
  1. fill in spec/STORE.yaml: the SDK's code table and what each call's answers mean (spec/README.md)
  2. make generate              # writes generated/STORE/ and generated/STORE/STOREcases/
  3. go test ./stores/STORE/     # the lifecycle checks pass already
  4. write the SDK calls where stores/STORE/driver.go says TODO: answers map through the picked spec's Calls, raised errors through classify
  5. in stores/STORE/conformance_test.go, run the whole suite with the kit's scenarios, one suite per STOREcases.All()
  6. stage on the real store what it can (the kit, stores/STORE/kit_test.go; conformance/storekit starts a server on loopback)
  7. the gate (make run) runs TestConformance of stores/STORE/conformance_test.go through go test: nothing to register
  8. a server the tests need: a step in stores/STORE/deps.sh (scripts/deps.sh's apt_step, go_step, fetch_step) and its row in README.md's first-run table
docs/writing-a-store.md walks through each step, following stores/fs.
`

func isPackageName(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z') {
		return false
	}
	return strings.Trim(s, "abcdefghijklmnopqrstuvwxyz0123456789") == ""
}

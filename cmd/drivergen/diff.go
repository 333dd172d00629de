package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/kvblob/kvblob/gen"
)

// loadSpecFile reads and loads one spec file, printing its errors; it
// returns the spec and the file's bytes.
func loadSpecFile(name string, stderr io.Writer) (*gen.Spec, []byte, bool) {
	data, err := gen.ReadSpec(name)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, nil, false
	}
	s, err := gen.Load(name, data)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return nil, nil, false
	}
	return s, data, true
}

// runDiff is 'drivergen diff [-json] OLD NEW': what a reviewer of a new SDK
// version's spec must read. It exits 0 when the specs state the same
// facts, 1 when they differ and 2 on trouble, as diff(1) does.
func runDiff(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("diff", "diff [-json] OLD NEW", stderr)
	asJSON := fs.Bool("json", false, "print the differences as JSON (field names: docs/sdk-ci.md)")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	if fs.NArg() != 2 {
		fmt.Fprintln(stderr, "drivergen diff: want two spec files, OLD and NEW")
		fs.Usage()
		return 2
	}
	a, _, ok := loadSpecFile(fs.Arg(0), stderr)
	if !ok {
		return 2
	}
	b, _, ok := loadSpecFile(fs.Arg(1), stderr)
	if !ok {
		return 2
	}
	if a.Store != b.Store {
		fmt.Fprintf(stderr, "drivergen diff: %s describes store %q and %s store %q; diff compares two specs of one store\n", a.File, a.Store, b.File, b.Store)
		return 2
	}
	d := gen.Diff(a, b)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			fmt.Fprintf(stderr, "drivergen diff: writing the JSON: %v\n", err)
			return 2
		}
	} else {
		fmt.Fprint(stdout, d.Text())
	}
	if d.Empty() {
		return 0
	}
	return 1
}

package main

import (
	"fmt"
	"io"

	"github.com/kvblob/kvblob/gen"
)

// runValidateCmd is 'drivergen validate': runValidate, and with -header,
// each spec's code table checked against the enum an SDK header declares.
func runValidateCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", "validate [-header FILE|DIR -enum NAME] FILE...", stderr)
	header := fs.String("header", "", "check each spec's codes against the enum the header `FILE` (or the headers under a folder) declares")
	enum := fs.String("enum", "", "the enum -header reads (Mooncake: ErrorCode)")
	if code := parse(fs, args); code >= 0 {
		return code
	}
	if *header == "" {
		if *enum != "" {
			fmt.Fprintln(stderr, "drivergen validate: -enum needs -header")
			return 2
		}
		return runValidate(fs.Args(), stdout, stderr)
	}
	if *enum == "" {
		fmt.Fprintln(stderr, "drivergen validate: -header needs -enum NAME, the enum that declares the SDK's codes")
		return 2
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return 2
	}
	codes, err := gen.FindEnum(*header, *enum)
	if err != nil {
		fmt.Fprintf(stderr, "drivergen validate: %v\n", err)
		return 2
	}
	code := runValidate(fs.Args(), stdout, stderr)
	for _, name := range fs.Args() {
		data, err := gen.ReadSpec(name)
		if err != nil {
			continue // runValidate named it
		}
		s, err := gen.Load(name, data)
		if err != nil {
			continue
		}
		if errs := gen.CheckHeader(s, codes, *enum); len(errs) > 0 {
			fmt.Fprintln(stderr, errs)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "%s: codes match %s in %s (%d codes)\n", name, *enum, codes[0].File, len(codes))
	}
	return code
}

package main

import (
	"fmt"
	"io"

	"github.com/kvblob/kvblob/gen"
)

// runValidateCmd is 'drivergen validate': each spec loaded and validated
// (validateFiles), and with -header, each spec's code table checked
// against the enum an SDK header declares.
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
		if fs.NArg() == 0 {
			fs.Usage()
			return 2
		}
		return validateFiles(fs.Args(), stdout, stderr, nil)
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
	return validateFiles(fs.Args(), stdout, stderr, func(s *gen.Spec) (string, gen.ErrorList) {
		return fmt.Sprintf(", codes match %s in %s (%d codes)", *enum, codes[0].File, len(codes)), gen.CheckHeader(s, codes, *enum)
	})
}

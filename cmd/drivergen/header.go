package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/kvblob/kvblob/gen"
	"github.com/kvblob/kvblob/runtime/rules"
)

// runValidateCmd is 'drivergen validate': each spec loaded and validated
// (validateFiles), and with -header, each spec's code table checked
// against the enum an SDK header declares.
func runValidateCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("validate", "validate [-header FILE|DIR -enum NAME] [-sdk-version V] FILE...", stderr)
	header := fs.String("header", "", "check each spec's codes against the enum the header `FILE` (or the headers under a folder) declares")
	enum := fs.String("enum", "", "the enum -header reads (Mooncake: ErrorCode)")
	sdkVersion := fs.String("sdk-version", "", "validate only the spec, among FILEs, that holds for this SDK build (as it reports itself: \"0.3.12.post1 (git: 3b5a59413)\")")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	files := fs.Args()
	if *sdkVersion != "" {
		var ok bool
		if files, ok = holdingFor(files, *sdkVersion, stdout, stderr); !ok {
			return 1
		}
	}
	if *header == "" {
		if *enum != "" {
			fmt.Fprintln(stderr, "drivergen validate: -enum needs -header")
			return 2
		}
		if len(files) == 0 {
			fs.Usage()
			return 2
		}
		return validateFiles(files, stdout, stderr, nil)
	}
	if *enum == "" {
		fmt.Fprintln(stderr, "drivergen validate: -header needs -enum NAME, the enum that declares the SDK's codes")
		return 2
	}
	if len(files) == 0 {
		fs.Usage()
		return 2
	}
	codes, err := gen.FindEnum(*header, *enum)
	if err != nil {
		fmt.Fprintf(stderr, "drivergen validate: %v\n", err)
		return 2
	}
	return validateFiles(files, stdout, stderr, func(s *gen.Spec) (string, gen.ErrorList) {
		return fmt.Sprintf(", codes match %s in %s (%d codes)", *enum, codes[0].File, len(codes)), gen.CheckHeader(s, codes, *enum)
	})
}

// holdingFor returns the files, among names, whose spec holds for the SDK
// build v (rules.VersionHolds over its release), so that a CI job can pass
// a glob of every version's spec and check only the one its build is. It
// says on stdout which it leaves out, and why. A file that does not load
// is kept (validation names its errors). When no spec holds for v, it
// prints what a driver's open would (the specs it has, and the command
// that starts one for v) and reports false.
func holdingFor(names []string, v string, stdout, stderr io.Writer) (files []string, ok bool) {
	var held []*rules.Spec
	for _, name := range names {
		data, err := gen.ReadSpec(name)
		if err != nil {
			files = append(files, name)
			continue
		}
		s, err := gen.Load(name, data)
		if err != nil {
			files = append(files, name)
			continue
		}
		if rules.VersionHolds(s.SDK.Versions, v) {
			files = append(files, name)
			continue
		}
		held = append(held, &rules.Spec{Store: s.Store, Source: name, SDKName: s.SDK.Name, SDKVersions: s.SDK.Versions})
		fmt.Fprintf(stdout, "%s: left out: it holds for %s %s, not %q\n", name, s.SDK.Name, strings.Join(s.SDK.Versions, ", "), v)
	}
	if len(files) == 0 {
		_, err := rules.Pick("drivergen validate", "the SDK", v, held...)
		fmt.Fprintln(stderr, err)
		return nil, false
	}
	return files, true
}

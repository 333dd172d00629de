package main

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/kvblob/kvblob/gen"
)

// headerCheck checks the code table of the spec a store's cases come from
// (specFile, as the suite logged it) against the enum the SDK's headers
// under include declare. A spec or header the gate cannot find or read is
// an error (exit 2), not a failed check; what CheckHeader finds are
// failures.
func headerCheck(specFile string, specs []*gen.Spec, include, enum string) checkResult {
	start := time.Now()
	c := checkResult{Name: "codes_match_sdk_headers", Kind: kindSDK}
	defer func() { c.Seconds = time.Since(start).Seconds() }()
	spec, err := specNamed(specFile, specs)
	if err != nil {
		c.Status, c.Message = statusError, err.Error()
		return c
	}
	c.Spec = spec.Codes[0].Pos.String()
	codes, err := gen.FindEnum(include, enum)
	if err != nil {
		c.Status, c.Message = statusError, err.Error()
		return c
	}
	if errs := gen.CheckHeader(spec, codes, enum); len(errs) > 0 {
		c.Status, c.Message = statusFailed, errs.Error()
		return c
	}
	c.Status = statusPassed
	return c
}

// specNamed returns the spec of specs whose file is specFile.
func specNamed(specFile string, specs []*gen.Spec) (*gen.Spec, error) {
	if specFile == "" {
		return nil, fmt.Errorf("the store runs no generated cases, so the gate cannot tell which spec's codes to check")
	}
	for _, sp := range specs {
		if filepath.Base(sp.File) == filepath.Base(specFile) {
			if len(sp.Codes) == 0 {
				return nil, fmt.Errorf("%s lists no codes", sp.File)
			}
			return sp, nil
		}
	}
	return nil, fmt.Errorf("the store's cases come from %s, which the spec folder does not hold", specFile)
}

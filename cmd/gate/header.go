package main

import (
	"fmt"
	"path/filepath"

	"github.com/kvblob/kvblob/conformance/gate"
	"github.com/kvblob/kvblob/gen"
)

// headerCheck returns the check of s's code table against the enum the
// SDK's headers under include declare (enum, or the one s registers), and
// false when s registers none and enum is empty. It needs no set-up: a
// store skipped for want of its server still has its headers checked.
func headerCheck(s gate.Store, specs []*gen.Spec, include, enum string) (gateCheck, bool) {
	if enum == "" {
		enum = s.CodeEnum
	}
	if enum == "" {
		return gateCheck{}, false
	}
	c := gateCheck{name: "codes_match_sdk_headers", kind: kindSDK}
	spec, err := storeSpec(s, specs)
	if err == nil {
		c.spec = spec.Codes[0].Pos.String()
	}
	c.run = func() verdict {
		// A spec or header the gate cannot find or read is an error (exit
		// 2), not a failed check; what CheckHeader finds are failures.
		if err != nil {
			return verdict{errored: true, reason: err.Error()}
		}
		codes, ferr := gen.FindEnum(include, enum)
		if ferr != nil {
			return verdict{errored: true, reason: ferr.Error()}
		}
		if errs := gen.CheckHeader(spec, codes, enum); len(errs) > 0 {
			return verdict{reason: errs.Error()}
		}
		return verdict{passed: true}
	}
	return c, true
}

// storeSpec returns the spec s's generated package comes from: the one
// named s.Spec, or the only spec of store s.Name.
func storeSpec(s gate.Store, specs []*gen.Spec) (*gen.Spec, error) {
	var mine []*gen.Spec
	for _, sp := range specs {
		if s.Spec != "" && filepath.Base(sp.File) == s.Spec || s.Spec == "" && sp.Store == s.Name {
			mine = append(mine, sp)
		}
	}
	switch {
	case len(mine) == 0 && s.Spec != "":
		return nil, fmt.Errorf("store %s registers spec %s, which the spec folder does not hold", s.Name, s.Spec)
	case len(mine) == 0:
		return nil, fmt.Errorf("no spec describes store %s", s.Name)
	case len(mine) > 1:
		return nil, fmt.Errorf("%d specs describe store %s; its registration must name one (gate.Store.Spec)", len(mine), s.Name)
	case len(mine[0].Codes) == 0:
		return nil, fmt.Errorf("%s lists no codes", mine[0].File)
	}
	return mine[0], nil
}

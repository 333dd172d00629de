package conformance

import (
	"errors"
	"fmt"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
)

// SeamOf finds the driverkit.Seam an adapter routes its store calls
// through (nil when the driver has none).
type SeamOf func(d driver.Driver) *driverkit.Seam

// SeamScenarios stages, through an adapter's seam, the scenarios every
// store can stage that way: a get held inside the call named getCall, and a
// raise of the calls named putCall and getCall. Call names are the spec's.
func SeamScenarios(seam SeamOf, putCall, getCall string) Scenarios {
	return Scenarios{
		HoldGet: func(d driver.Driver, key string) (<-chan struct{}, func()) {
			return seam(d).Hold(getCall, key)
		},
		FailPut:  func(d driver.Driver, key string) { seam(d).Raise(putCall, key, nil) },
		FailRead: func(d driver.Driver, key string) { seam(d).Raise(getCall, key, nil) },
	}
}

// SeamStager stages each generated case through the adapter's seam: the
// case's call answers the case's code (or, for a call that answers sizes,
// the row's length or half of it), and a reread answers the case's reread.
// A case that needs an existence answer is refused with the reason: which
// call answers existence is the store's to stage. Every case it stages is
// staged through the seam (Harness.StagedThrough), so a case the spec
// marks stageable fails: stage those for real.
func SeamStager(seam SeamOf) Stager {
	return func(h *Harness, c Case, key string) error {
		s := seam(h.D)
		if s == nil {
			return errors.New("the driver routes no call through a driverkit.Seam")
		}
		if c.Exists || c.Other {
			return fmt.Errorf("the case needs the existence answer of %s's follow-up, which the seam does not stage", c.Call)
		}
		s.Answer(c.Call, key, seamAnswer(c.Answer))
		h.StagedThrough("the seam's answer to " + c.Call)
		if c.Reread != nil {
			s.Answer(c.Call, key, seamAnswer(*c.Reread))
		}
		return nil
	}
}

// seamAnswer is the value a call answers for a harness row.
func seamAnswer(a Answer) int64 {
	switch a.Size {
	case SizeWhole:
		return RowBytes
	case SizeShort:
		return RowBytes / 2
	}
	return a.Code
}

// SeamRaise stages case c for key by raising err in c's call through
// seam, for an answer no real store gives on cue, and reports it staged so
// (Harness.StagedThrough). It refuses a case the spec marks stageable
// (stage those for real) and a nil err (no error the kit raises classifies
// as the case's answer).
func SeamRaise(h *Harness, seam *driverkit.Seam, c Case, key string, err error) error {
	if c.Stageable {
		return fmt.Errorf("the kit stages no %s answer to %s for real", c.Answer, c.Call)
	}
	if err == nil {
		return fmt.Errorf("%s never answers %s: no error the kit raises classifies as it", c.Call, c.Answer)
	}
	seam.Raise(c.Call, key, err)
	h.StagedThrough("the seam raising " + err.Error() + " in " + c.Call)
	return nil
}

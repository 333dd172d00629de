package storekit

import (
	"bytes"
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/trailer"
)

// SpecPos returns the spec position (file:line:col) of the generated case
// id among cases, for an SDK check or a failure to name the rule it pins.
// It panics, as CaseOf does, when no case has that id.
func SpecPos(cases []conformance.Case, id string) string { return CaseOf(cases, id).Pos }

// CaseOf returns the generated case id among cases, for a kit's test that
// stages one case. It panics when no case has that id: the spec no longer
// holds the rule the caller names, which only an edit of the caller mends.
func CaseOf(cases []conformance.Case, id string) conformance.Case {
	for _, c := range cases {
		if c.ID == id {
			return c
		}
	}
	panic(fmt.Sprintf("storekit: no generated case %q; the spec no longer holds the rule its caller names", id))
}

// PlantCase is every stager's first step for case c of key: for a get, it
// plants the row's whole object (a payload of conformance.RowBytes in the
// stores' trailer) with plant, and for an answer that is a size it plants
// the object that gives it (whole, or short: half the payload). It returns
// the payload, for the stager's own objects, and done when the case needs
// nothing more.
func PlantCase(c conformance.Case, key string, plant func(key string, obj []byte) error) (payload []byte, done bool, err error) {
	payload = conformance.Filled(conformance.RowBytes, 5) // not the case row's bytes (CaseSeed)
	if c.Op == conformance.OpGet {
		if err := plant(key, trailer.Encode(key, payload)); err != nil {
			return nil, true, err
		}
	}
	switch c.Answer.Size {
	case conformance.SizeWhole:
		return payload, true, nil
	case conformance.SizeShort:
		return payload, true, plant(key, trailer.Encode(key, payload[:len(payload)/2]))
	}
	return payload, false, nil
}

// Unwrap returns the T that d is or wraps (driver.As): the kit's own
// driver type behind a driver its factory made, to reach its seam, its
// client or its store. It panics when d holds no T, since a driver the
// kit's factory did not make is a bug in the kit or the test.
func Unwrap[T any](d driver.Driver) T {
	var v T
	if !driver.As(d, &v) {
		panic(fmt.Sprintf("storekit: %T is not and does not wrap a %T; it is no driver of this kit's factory", d, v))
	}
	return v
}

// RowKey is a row key for drivers with a keyed integrity check on
// (conformance.Suite.Integrity): every test's the same, which is all a
// test needs.
func RowKey() *trailer.Integrity {
	in, err := trailer.NewIntegrity(bytes.Repeat([]byte{0x42}, 32), nil)
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	return in
}

// Main is a store package's TestMain: it calls setup (nil: nothing to set
// up), runs the tests, calls the teardown setup returned, and then fails
// the run when a goroutine outlived the tests (goleak). A setup error ends
// the run with exit code 1 before any test; a store's server missing from
// the machine is no error: setup records why, and the tests that need it
// skip saying so.
func Main(m *testing.M, setup func() (teardown func(), err error)) {
	os.Exit(run(m, setup))
}

// run is Main but for the exit: it returns the code Main exits with. m
// runs the tests (Main's *testing.M).
func run(m interface{ Run() int }, setup func() (teardown func(), err error)) int {
	code := func() int {
		if setup != nil {
			teardown, err := setup()
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			if teardown != nil {
				defer teardown()
			}
		}
		return m.Run()
	}()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	return code
}

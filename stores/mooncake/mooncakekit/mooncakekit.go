package mooncakekit

import (
	"errors"
	"strings"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

// Version is the SDK build the fake reports (a verified build of
// spec/mooncake-0.3.13.yaml).
const Version = fakesdk.Version

// Factory returns drivers over fresh fake clients of master (nil: a fresh
// master per driver), reporting Version.
func Factory(master *fakesdk.Master) conformance.Factory { return FactoryOf(master, Version) }

// FactoryOf is Factory with fake clients reporting build version (see
// BuildOf). The driver picks its spec by it, as over a real client, and
// opens it verified or not (Options.AllowUnverified: the gate runs an
// unverified build and reports it).
func FactoryOf(master *fakesdk.Master, version string) conformance.Factory {
	return func(t conformance.T) driver.Driver {
		m := master
		if m == nil {
			m = fakesdk.NewMaster(0)
		}
		d, err := mooncake.NewWith(fakesdk.NewClient(m, version), mooncake.Options{AllowUnverified: true})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

// BuildOf is the build a fake client reports to stand for spec: its first
// release (a line's first release, "7.x" as "7.0") at the first commit it
// was verified on, as a real build reports itself ("0.3.12.post1 (git:
// 3b5a59413)"); a spec that lists no commit, or none yet, gets its
// release alone.
func BuildOf(spec *rules.Spec) string {
	v := spec.SDKVersions[0]
	if p, ok := strings.CutSuffix(v, ".x"); ok {
		v = p + ".0"
	}
	if len(spec.SDKVerified) > 0 {
		v += " (git: " + spec.SDKVerified[0] + ")"
	}
	return v
}

// Describe names the SDK a suite over spec's build runs on, and says when
// the build is one spec was not verified on: "mooncake-store
// 0.3.12.post1 (git: 3b5a59413) (fake)".
func Describe(spec *rules.Spec, build, how string) string {
	s := spec.SDKName + " " + build + " (" + how + ")"
	if ok, why := spec.Verified(build); !ok {
		s += "; UNVERIFIED: " + why
	}
	return s
}

// Master returns the fake master behind d.
func Master(d driver.Driver) *fakesdk.Master {
	return storekit.Unwrap[*mooncake.Driver](d).SDK().(*fakesdk.Client).Master()
}

// Scenarios are every scenario the fake SDK stages. HoldAccess is not one:
// Put and Get return only after every SDK call returned, so no operation
// publishes results while its access is still open.
func Scenarios() conformance.Scenarios {
	return conformance.Scenarios{
		HoldGet: func(d driver.Driver, key string) (<-chan struct{}, func()) {
			h := Master(d).Hold(fakesdk.CallGet, key)
			return h.Entered, h.Release
		},
		Writing: func(d driver.Driver, key string) func() {
			m := Master(d)
			m.BeginForeign(key, conformance.RowBytes)
			return func() { m.DropForeign(key) }
		},
		Full: func(d driver.Driver, key string) {
			Master(d).Answer(fakesdk.CallStart, key, mooncakegen.NoAvailableHandle)
		},
		FailPut:  func(d driver.Driver, key string) { Master(d).Raise(fakesdk.CallStart, key) },
		FailRead: func(d driver.Driver, key string) { Master(d).Answer(fakesdk.CallGet, key, mooncakegen.InternalError) },
		// A scatter that raises leaves its access unproven for good.
		Unprovable: func(d driver.Driver, key string) { Master(d).Raise(fakesdk.CallScatter, key) },
	}
}

// KnownFailures are the conformance checks the Mooncake driver is known to
// fail, each with why, with its object trailer on (Options.Trailer or
// Integrity) or off; the suite still runs each and reports it skipped
// while it fails (see conformance.Suite.KnownFailures). With the trailer
// it fails none: a put that finds the key's object complete reads it back
// and calls it READY only if it is the row's own.
func KnownFailures(trailer bool) map[string]string {
	if trailer {
		return nil
	}
	return map[string]string{
		"a_READY_put_over_another_length_stored_the_new_bytes": "without the object trailer, batch_is_exist answers presence only, so the driver cannot tell a complete object of another length from the row's own, and its spec leaves if_other out; the 0.3.13 SDK has no size or digest query. With Options.Trailer the put reads the object back and checks it",
	}
}

// Stage makes the fake SDK answer case c for key.
func Stage(h *conformance.Harness, c conformance.Case, key string) error {
	m := Master(h.D)
	row := make([]byte, conformance.RowBytes)
	for i := range row {
		row[i] = byte(i * 3)
	}
	code := mooncakegen.Code(c.Answer.Code)
	if c.Op == conformance.OpGet {
		m.Plant(key, row)
	}
	switch {
	case c.Call == fakesdk.CallScatter && c.Answer.Size == conformance.SizeShort:
		m.Short(key)
	case c.Call == fakesdk.CallGet && c.Answer.Size == conformance.SizeShort:
		m.Plant(key, row[:len(row)/2])
	case c.Answer.Size == conformance.SizeWhole, c.Answer.Size == conformance.SizeNone && code == mooncakegen.OK:
	case c.Call == fakesdk.CallStart && code == mooncakegen.ObjectAlreadyExists:
		if c.Exists {
			m.Plant(key, row) // a complete object
		} else {
			m.BeginForeign(key, conformance.RowBytes) // another client's unfinished put
		}
	case c.Call == fakesdk.CallGet && code == mooncakegen.ObjectNotFound:
		m.Delete(key)
	case c.Call == fakesdk.CallGet && code == mooncakegen.ReplicaIsNotReady:
		m.Delete(key)
		m.BeginForeign(key, conformance.RowBytes)
	case c.Call == fakesdk.CallGet && code == mooncakegen.InvalidParams:
		m.Plant(key, append(row, 1, 2, 3)) // longer than its row: refused before any transfer
	case c.Call == fakesdk.CallGet && (code == mooncakegen.LeaseExpired || code == mooncakegen.TransferFail):
		m.AnswerAfterWriting(fakesdk.CallGet, key, code) // the bytes landed anyway
	case c.Answer.Size == conformance.SizeNone:
		m.Answer(c.Call, key, code)
	default:
		return errors.New("no staging for this answer")
	}
	if c.Reread != nil && c.Reread.Size == conformance.SizeNone {
		m.AnswerAfterWriting(fakesdk.CallGet, key, mooncakegen.Code(c.Reread.Code))
	}
	return nil
}

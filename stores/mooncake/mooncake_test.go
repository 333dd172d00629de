package mooncake_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/conformance"
	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const slot = 4096

type fx struct {
	m   *fakesdk.Master
	d   *mooncake.Driver
	r   *hostmem.Mapping
	reg driver.Registration
}

func newFx(t *testing.T) *fx {
	t.Helper()
	m := fakesdk.NewMaster(0)
	d, err := mooncake.New(fakesdk.NewClient(m, mooncakekit.Version))
	require.NoError(t, err)
	r, err := hostmem.Map("slots", driver.Layout{SlotBytes: slot, Slots: 8})
	require.NoError(t, err)
	reg, err := d.Register(r.Region)
	require.NoError(t, err)
	f := &fx{m: m, d: d, r: r, reg: reg}
	t.Cleanup(func() {
		if d.Drain(conformance.Within(5*time.Second)) && d.Unregister(f.reg) == nil {
			_ = r.Close()
		}
	})
	return f
}

func (f *fx) row(key string, i int) driver.Row {
	return driver.Row{Key: key, Spans: []driver.Span{f.r.Slot(i)}}
}

func (f *fx) put(t *testing.T, rows ...driver.Row) (driver.Operation, []driver.Result) {
	t.Helper()
	op, err := f.d.Put(context.Background(), rows)
	require.NoError(t, err)
	res, done := op.Poll()
	require.True(t, done, "put returns a finished operation")
	return op, res
}

func (f *fx) get(t *testing.T, rows ...driver.Row) (driver.Operation, []driver.Result) {
	t.Helper()
	op, err := f.d.Get(context.Background(), rows, driver.Hint{})
	require.NoError(t, err)
	res, done := op.Poll()
	require.True(t, done)
	return op, res
}

// TestOnlyVerifiedBuildsOfASpecsReleaseAreOpened: the driver opens a build
// of a release a spec holds for when the spec was verified on its commit;
// another build of that release only with Options.AllowUnverified, and
// then it logs a warning saying so; a release no spec holds for never,
// and the error gives the command that starts its spec.
func TestOnlyVerifiedBuildsOfASpecsReleaseAreOpened(t *testing.T) {
	open := func(v string, opt mooncake.Options) (*mooncake.Driver, error) {
		d, err := mooncake.NewWith(fakesdk.NewClient(fakesdk.NewMaster(0), v), opt)
		if err == nil {
			t.Cleanup(func() { _ = d.Close() })
		}
		return d, err
	}
	for _, c := range []struct {
		v       string
		allow   bool
		wantErr string
		warns   bool
	}{
		{v: "0.3.12.post1 (git: 3b5a59413)"},
		{v: "0.3.12.post1 (git: 3b5a594)"},
		{v: "0.3.12.post1 (git: 6c1b1e0fa)", wantErr: `build "0.3.12.post1 (git: 6c1b1e0fa)" is commit 6c1b1e0fa; spec/mooncake-0.3.13.yaml was verified on commits 3b5a59413, 488534c4b only; refusing an unverified build`},
		{v: "0.3.12.post1 (git: 6c1b1e0fa)", allow: true, warns: true},
		{v: "0.3.13", wantErr: `build "0.3.13" reports no commit`},
		{v: "0.3.13", allow: true, warns: true},
		{v: "0.3.12", wantErr: `mooncake: mooncake-store 0.3.12 has no spec; kvblob holds specs for mooncake-store 0.3.12.post1, 0.3.13 (spec/mooncake-0.3.13.yaml). Run a release one of them holds for, or start a spec for this one: 'drivergen new --from spec/mooncake-0.3.13.yaml --version 0.3.12'`},
		{v: "0.3.14 (git: 0123abcd)", allow: true, wantErr: `'drivergen new --from spec/mooncake-0.3.13.yaml --version 0.3.14'`},
	} {
		var log bytes.Buffer
		d, err := open(c.v, mooncake.Options{AllowUnverified: c.allow, Logger: zerolog.New(&log)})
		if c.wantErr != "" {
			require.Error(t, err, c.v)
			assert.Contains(t, err.Error(), c.wantErr, c.v)
			continue
		}
		require.NoError(t, err, c.v)
		assert.Equal(t, "spec/mooncake-0.3.13.yaml", d.Spec().Source)
		assert.Equal(t, !c.warns, d.Verified(), c.v)
		if c.warns {
			assert.Contains(t, log.String(), `"level":"warn"`, c.v)
			assert.Contains(t, log.String(), "running an unverified SDK build because Options.AllowUnverified is set", c.v)
		} else {
			assert.Empty(t, log.String(), c.v)
		}
	}
}

func TestRoundTripIsZeroCopyAndWhole(t *testing.T) {
	f := newFx(t)
	src := f.r.Slot(0).Bytes()
	for i := range src {
		src[i] = byte(i)
	}
	_, res := f.put(t, f.row("k", 0))
	assert.Equal(t, driver.Ready, res[0].Status)
	obj, ok := f.m.Object("k")
	require.True(t, ok)
	assert.Equal(t, src, obj)
	op, res := f.get(t, f.row("k", 1))
	assert.Equal(t, driver.Ready, res[0].Status)
	assert.True(t, op.AccessEnded())
	assert.Equal(t, src, f.r.Slot(1).Bytes())
}

func TestNeverStartsASessionForAKeyThisDriverHolds(t *testing.T) {
	f := newFx(t)
	held := f.m.Hold(fakesdk.CallScatter, "k")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.put(t, f.row("k", 0)) }()
	<-held.Entered
	starts := f.m.Calls(fakesdk.CallStart)
	_, res := f.put(t, f.row("k", 1))
	assert.Equal(t, driver.NotReady, res[0].Status)
	assert.Equal(t, starts, f.m.Calls(fakesdk.CallStart), "the second put must not ask the SDK")
	held.Release()
	wg.Wait()
}

func TestAPutStuckPastTheDiscardTimeoutKeepsItsKeys(t *testing.T) {
	f := newFx(t)
	held := f.m.Hold(fakesdk.CallScatter, "k")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.put(t, f.row("k", 0)) }()
	<-held.Entered
	f.m.Advance(fakesdk.DefaultDiscard + time.Second)
	_, res := f.put(t, f.row("k", 1))
	assert.Equal(t, driver.NotReady, res[0].Status, "the same client's second put is skipped")
	exist, err := f.d.SDK().BatchIsExist([]string{"k"})
	require.NoError(t, err)
	assert.Equal(t, []int64{0}, exist, "batch_is_exist stays 0 until the first put ends")
	held.Release()
	wg.Wait()
	exist, _ = f.d.SDK().BatchIsExist([]string{"k"})
	assert.Equal(t, []int64{1}, exist)
}

func TestSessionBookkeeping(t *testing.T) {
	cases := []struct {
		name       string
		stage      func(m *fakesdk.Master)
		want       driver.Status
		held       string // why the driver holds the key after the put
		openAfter  bool   // a session is still open after drain
		unprovable bool
	}{
		{"a scatter that answers TRANSFER_FAIL is never revoked", func(m *fakesdk.Master) { m.Answer(fakesdk.CallScatter, "k", mooncakegen.TransferFail) }, driver.Fault, "keep", true, false},
		{"an unanswered end is left open and revoked in drain", func(m *fakesdk.Master) { m.Answer(fakesdk.CallEnd, "k", mooncakegen.RPCTimeout) }, driver.Fault, "open", false, false},
		{"a refused end is revoked at once", func(m *fakesdk.Master) { m.Answer(fakesdk.CallEnd, "k", mooncakegen.InternalError) }, driver.Fault, "", false, false},
		{"a raise in session start is revoked at once, leaving the key writable", func(m *fakesdk.Master) { m.Raise(fakesdk.CallStart, "k") }, driver.Fault, "", false, false},
		{"a short scatter is revoked", func(m *fakesdk.Master) { m.Short("k") }, driver.Fault, "", false, false},
		// Tried: err != nil || a count mismatch -> &&, which reads the missing answer.
		{"a revoke that answers a wrong count is left open for drain", func(m *fakesdk.Master) {
			m.Answer(fakesdk.CallEnd, "k", mooncakegen.InternalError)
			m.Miscount(fakesdk.CallRevoke, "k")
		}, driver.Fault, "open", false, false},
		// Tried: the end's err != nil || a count mismatch -> &&, which reads the missing answer.
		{"an end that answers a wrong count is left open for drain", func(m *fakesdk.Master) { m.Miscount(fakesdk.CallEnd, "k") }, driver.Fault, "open", false, false},
		{"a raise in the scatter leaves access unproven", func(m *fakesdk.Master) { m.Raise(fakesdk.CallScatter, "k") }, driver.Fault, "keep", true, true},
		{"a wrong count from the scatter leaves access unproven", func(m *fakesdk.Master) { m.Miscount(fakesdk.CallScatter, "k") }, driver.Fault, "keep", true, true},
		{"a full pool declines", func(m *fakesdk.Master) { m.SetCapacity(1) }, driver.Declined, "", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t)
			c.stage(f.m)
			op, res := f.put(t, f.row("k", 0))
			assert.Equal(t, c.want, res[0].Status, res[0].Text)
			assert.Equal(t, c.held, f.d.Held("k"))
			assert.Equal(t, c.unprovable, op.AccessUnprovable())
			assert.Equal(t, !c.unprovable, op.AccessEnded())
			drained := f.d.Drain(conformance.Within(time.Second))
			assert.Equal(t, !c.unprovable, drained)
			assert.Equal(t, c.openAfter, f.m.SessionOpen("k"))
		})
	}
}

// TestAKeptKeyIsRefusedWithTheAnswerThatKeptIt: a key whose session the
// client keeps for good (nothing may end or revoke it) can never be written
// by this client again, so a later put of it, with no object stored, is a
// FAULT naming why, never NOT_READY ("another writer has not finished"),
// which a caller would retry for ever.
func TestAKeptKeyIsRefusedWithTheAnswerThatKeptIt(t *testing.T) {
	cases := []struct {
		name  string
		stage func(m *fakesdk.Master)
		code  int64
		text  string
	}{
		{"a scatter that answered TRANSFER_FAIL", func(m *fakesdk.Master) { m.Answer(fakesdk.CallScatter, "k", mooncakegen.TransferFail) }, int64(mooncakegen.TransferFail), "TRANSFER_FAIL"},
		{"a scatter that raised", func(m *fakesdk.Master) { m.Raise(fakesdk.CallScatter, "k") }, 0, "raised"},
		{"a session taken over (end and revoke -601)", func(m *fakesdk.Master) {
			m.Answer(fakesdk.CallEnd, "k", mooncakegen.IllegalClient)
			m.Answer(fakesdk.CallRevoke, "k", mooncakegen.IllegalClient)
		}, int64(mooncakegen.IllegalClient), "ILLEGAL_CLIENT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t)
			c.stage(f.m)
			f.put(t, f.row("k", 0))
			require.Equal(t, "keep", f.d.Held("k"))
			starts := f.m.Calls(fakesdk.CallStart)
			_, res := f.put(t, f.row("k", 1))
			assert.Equal(t, driver.Fault, res[0].Status)
			assert.Equal(t, c.code, res[0].Code)
			assert.Contains(t, res[0].Text, c.text)
			assert.Contains(t, res[0].Text, "reopen the driver")
			assert.Equal(t, starts, f.m.Calls(fakesdk.CallStart), "no start: the client would refuse it")
			f.m.Plant("k", make([]byte, slot)) // another writer's object
			_, res = f.put(t, f.row("k", 1))
			assert.Equal(t, driver.Ready, res[0].Status)
		})
	}
}

func TestAKeyWhoseSessionWasLeftOpenIsReadyOnlyOnceItExists(t *testing.T) {
	f := newFx(t)
	f.m.Answer(fakesdk.CallEnd, "k", mooncakegen.RPCFail) // the end may still land
	_, res := f.put(t, f.row("k", 0))
	require.Equal(t, driver.Fault, res[0].Status)
	_, res = f.put(t, f.row("k", 1))
	assert.Equal(t, driver.NotReady, res[0].Status, "no object yet")
	f.m.Plant("k", make([]byte, slot)) // the late end completed it
	_, res = f.put(t, f.row("k", 1))
	assert.Equal(t, driver.Ready, res[0].Status)

	// When the existence question itself fails, the row is a FAULT with
	// no SDK code (0) that says which question failed (tried: code 1).
	f.m.Answer(fakesdk.CallEnd, "j", mooncakegen.RPCFail)
	_, res = f.put(t, f.row("j", 0))
	require.Equal(t, driver.Fault, res[0].Status)
	f.m.Raise(fakesdk.CallExist, "j")
	_, res = f.put(t, f.row("j", 1))
	assert.Equal(t, driver.Fault, res[0].Status, "%v", res[0])
	assert.Zero(t, res[0].Code, "%v", res[0])
	assert.Contains(t, res[0].Text, "batch_is_exist", "%v", res[0])
}

func TestGetAnswers(t *testing.T) {
	obj := bytes.Repeat([]byte{9}, slot)
	cases := []struct {
		name       string
		stage      func(m *fakesdk.Master)
		want       driver.Status
		code       mooncakegen.Code
		untouched  bool
		unprovable bool
		gets       int
	}{
		{"absent is MISS", func(m *fakesdk.Master) {}, driver.Miss, 0, true, false, 1},
		{"being written is NOT_READY", func(m *fakesdk.Master) { m.BeginForeign("k", slot) }, driver.NotReady, 0, true, false, 1},
		{"an expired lease is read once more", func(m *fakesdk.Master) {
			m.Plant("k", obj)
			m.AnswerAfterWriting(fakesdk.CallGet, "k", mooncakegen.LeaseExpired)
		}, driver.Ready, 0, false, false, 2},
		{"a second expiry is a fault", func(m *fakesdk.Master) {
			m.Plant("k", obj)
			m.AnswerAfterWriting(fakesdk.CallGet, "k", mooncakegen.LeaseExpired)
			m.AnswerAfterWriting(fakesdk.CallGet, "k", mooncakegen.LeaseExpired)
		}, driver.Fault, mooncakegen.LeaseExpired, false, false, 2},
		{"a reread that finds nothing is a fault, never a MISS", func(m *fakesdk.Master) {
			m.Plant("k", obj)
			m.AnswerAfterWriting(fakesdk.CallGet, "k", mooncakegen.LeaseExpired)
			m.Answer(fakesdk.CallGet, "k", mooncakegen.ObjectNotFound)
		}, driver.Fault, 0, false, false, 2},

		{"a longer object is refused without a transfer", func(m *fakesdk.Master) { m.Plant("k", append(obj, 1)) }, driver.Fault, mooncakegen.InvalidParams, true, false, 1},
		{"a shorter object lands in the head and is a fault", func(m *fakesdk.Master) { m.Plant("k", obj[:10]) }, driver.Fault, 0, false, false, 1},
		{"a raise leaves access unproven", func(m *fakesdk.Master) { m.Raise(fakesdk.CallGet, "k") }, driver.Fault, 0, true, true, 1},
		{"a wrong answer count leaves access unproven", func(m *fakesdk.Master) {
			m.Plant("k", obj)
			m.Miscount(fakesdk.CallGet, "k")
		}, driver.Fault, 0, false, true, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t)
			c.stage(f.m)
			dst := f.r.Slot(0).Bytes()
			for i := range dst {
				dst[i] = 0xEE
			}
			op, res := f.get(t, f.row("k", 0))
			assert.Equal(t, c.want, res[0].Status, res[0].Text)
			assert.Equal(t, int64(c.code), res[0].Code)
			assert.Equal(t, c.unprovable, op.AccessUnprovable())
			assert.Equal(t, c.gets, f.m.Calls(fakesdk.CallGet))
			if c.untouched {
				assert.Equal(t, bytes.Repeat([]byte{0xEE}, slot), dst)
			}
			if c.unprovable {
				assert.True(t, driver.IsRejected(f.d.Unregister(f.reg)), "unregister under an unprovable get")
				assert.False(t, f.d.Drain(conformance.Within(time.Hour)), "drain answers false at once")
			}
		})
	}
}

// frozenPeer is a driver over client A of a pool whose every replica lives
// on client B's segment, B frozen: a get waits for the fixed 60 s transfer
// wait (the status timeout set past it), answers TRANSFER_FAIL, and its
// bytes land when B thaws, after the call returned (real: s3).
func frozenPeer(t *testing.T) (*fx, *fakesdk.Client) {
	f := newFx(t)
	b := fakesdk.NewClient(f.m, mooncakekit.Version)
	f.m.SetOwner(b)
	k := fakesdk.DefaultKnobs()
	k.StatusTimeout = 120 * time.Second
	f.m.SetKnobs(k)
	f.m.Plant("k", bytes.Repeat([]byte{9}, slot))
	f.m.FreezePeer()
	return f, b
}

// getFrozen gets "k" into slot 0 through the frozen peer, on the fake's
// clock.
func (f *fx) getFrozen(t *testing.T) (driver.Operation, []driver.Result) {
	t.Helper()
	var op driver.Operation
	var res []driver.Result
	require.NoError(t, f.m.Await(f.m.Go(func() { op, res = f.get(t, f.row("k", 0)) })))
	return op, res
}

// TestAGetWhoseTransferFailedEndsAtTeardown: a get whose transfer wait gave
// up keeps access (its bytes may land later), but not for ever: tearing the
// client down ends it (the spec's ends_at_teardown), so a drain whose only
// leftovers are such gets closes the client, ends their access, and the
// driver unregisters and closes; nothing lands after that.
func TestAGetWhoseTransferFailedEndsAtTeardown(t *testing.T) {
	f, b := frozenPeer(t)
	defer func() { _ = b.Close() }()
	dst := f.r.Slot(0).Bytes()
	for i := range dst {
		dst[i] = 0xEE
	}
	op, res := f.getFrozen(t)
	require.Equal(t, driver.Fault, res[0].Status)
	require.Equal(t, int64(mooncakegen.TransferFail), res[0].Code)
	assert.False(t, op.AccessEnded(), "the transfer goes on")
	assert.False(t, op.AccessUnprovable(), "a teardown ends it")
	assert.True(t, driver.IsRejected(f.d.Unregister(f.reg)), "unregister while the transfer may land")

	assert.True(t, f.d.Drain(conformance.Within(time.Second)), "the drain tears the client down")
	assert.True(t, op.AccessEnded(), "the teardown ended the get's access")
	_, err := f.d.Get(context.Background(), []driver.Row{f.row("k", 1)}, driver.Hint{})
	assert.True(t, driver.IsRejected(err), "no call after the teardown")
	require.NoError(t, f.d.Unregister(f.reg), "the registration went with the client")
	require.NoError(t, f.d.Close())
	f.m.ThawPeer()
	assert.Equal(t, bytes.Repeat([]byte{0xEE}, slot), dst, "nothing landed after the teardown")
}

// TestAGetWaitingForTeardownSaysSoAndSignalsItsEnd: such a get tells its
// observer that only a teardown ends its access (driver.TeardownEnder), so
// a backend pinned by another call counts it as pinned too and no other,
// and it is a driver.Notifier whose teardown signals the end: its observer
// waits on that instead of polling it until the teardown comes.
func TestAGetWaitingForTeardownSaysSoAndSignalsItsEnd(t *testing.T) {
	f, b := frozenPeer(t)
	defer func() { _ = b.Close() }()
	op, res := f.getFrozen(t)
	require.Equal(t, int64(mooncakegen.TransferFail), res[0].Code)
	te, ok := op.(driver.TeardownEnder)
	require.True(t, ok, "the get says what ends its access")
	assert.True(t, te.AccessEndsAtTeardown())
	n, ok := op.(driver.Notifier)
	require.True(t, ok, "the get signals its end")
	signals := make(chan struct{}, 4)
	n.Notify(func() { signals <- struct{}{} })
	assert.Empty(t, signals, "nothing changed yet")
	require.True(t, f.d.Drain(conformance.Within(time.Second)))
	assert.Len(t, signals, 1, "the teardown signalled the end of its access")
	assert.True(t, op.AccessEnded())
	assert.False(t, te.AccessEndsAtTeardown(), "its access ended")

	require.NoError(t, f.d.Unregister(f.reg))
	require.NoError(t, f.d.Close())
	f.m.ThawPeer()
}

// TestAGetFromAKilledPeerEndsAtTeardown: the process holding the only
// replica was killed; a get answers TRANSFER_FAIL at once (turn 3: 1-4 ms,
// until the master expires the dead client), which the spec cannot tell
// from a frozen peer's, so its access too ends at the teardown: the drain
// tears the client down and the driver closes.
func TestAGetFromAKilledPeerEndsAtTeardown(t *testing.T) {
	f := newFx(t)
	b := fakesdk.NewClient(f.m, mooncakekit.Version)
	f.m.SetOwner(b)
	f.m.Plant("k", bytes.Repeat([]byte{9}, slot))
	f.m.KillPeer()
	op, res := f.get(t, f.row("k", 0))
	require.Equal(t, int64(mooncakegen.TransferFail), res[0].Code, res[0].Text)
	assert.False(t, op.AccessEnded())
	assert.False(t, op.AccessUnprovable())
	assert.True(t, f.d.Drain(conformance.Within(time.Second)))
	assert.True(t, op.AccessEnded())
	require.NoError(t, f.d.Unregister(f.reg))
	require.NoError(t, f.d.Close())
	f.m.Advance(11 * time.Second) // the master expires the dead owner
	exist, err := fakesdk.NewClient(f.m, mooncakekit.Version).BatchIsExist([]string{"k"})
	require.NoError(t, err)
	assert.Equal(t, []int64{0}, exist, "its objects went with its segment")
}

// TestATransferThatOutlivesItsGetLandsWithoutTeardown is the hazard the
// teardown ends: the same get, the client left up, lands its bytes at the
// thaw, after it answered.
func TestATransferThatOutlivesItsGetLandsWithoutTeardown(t *testing.T) {
	f, b := frozenPeer(t)
	defer func() { _ = b.Close() }()
	_, res := f.getFrozen(t)
	require.Equal(t, int64(mooncakegen.TransferFail), res[0].Code)
	f.m.ThawPeer()
	assert.Equal(t, bytes.Repeat([]byte{9}, slot), f.r.Slot(0).Bytes(), "landed after the call returned")
	assert.True(t, f.d.Drain(conformance.Within(time.Second)))
}

// TestATeardownWaitsForEveryOtherLeftover: the drain tears the client down
// only when gets that a teardown ends are all that is left: an unprovable
// put keeps the client up (its access is not one a teardown is known to
// end).
func TestATeardownWaitsForEveryOtherLeftover(t *testing.T) {
	f, b := frozenPeer(t)
	defer func() { _ = b.Close() }()
	f.m.ThawPeer()
	f.m.Raise(fakesdk.CallScatter, "p")
	op, _ := f.put(t, f.row("p", 2))
	require.True(t, op.AccessUnprovable())
	f.m.Plant("k2", bytes.Repeat([]byte{9}, slot))
	f.m.FreezePeer()
	var get driver.Operation
	require.NoError(t, f.m.Await(f.m.Go(func() { get, _ = f.get(t, f.row("k2", 0)) })))
	assert.False(t, f.d.Drain(conformance.Within(time.Second)))
	assert.False(t, get.AccessEnded(), "no teardown beside an unprovable put")
	_, err := f.d.Get(context.Background(), []driver.Row{f.row("k", 1)}, driver.Hint{})
	assert.NoError(t, err, "the client is up")
	f.m.ThawPeer()
}

func TestAdmissionComesFromTheSpec(t *testing.T) {
	f := newFx(t)
	multi := driver.Row{Key: "m", Spans: []driver.Span{f.r.Slot(0), f.r.Slot(1)}}
	_, err := f.d.Put(context.Background(), []driver.Row{multi})
	var re *driver.RejectedError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, driver.RuleMultiSpan, re.Rule)
	_, err = f.d.Get(context.Background(), []driver.Row{f.row("k", 0)}, driver.NewHint([]byte("x")))
	require.ErrorAs(t, err, &re)
	assert.Equal(t, driver.RuleHint, re.Rule)
	_, err = f.d.Register(&driver.Region{Name: "gpu", Kind: driver.Device, Layout: driver.Layout{SlotBytes: 8, Slots: 1}})
	require.ErrorAs(t, err, &re)
	assert.Equal(t, driver.RuleDeviceRegion, re.Rule)
	assert.Equal(t, int64(2)<<30, int64(mooncakegen.Mooncake0313().Admission.MaxRowBytes), "rows must stay under 2 GiB")
}

// TestAHostRegionWithoutAnAddressIsRefused: the SDK registers memory by
// address, so a host region whose Addr is 0 (Go memory, not hostmem's) is
// refused as an invalid span before the SDK is asked (tried: refusing only
// Addr 1 lets it through to register_buffer).
func TestAHostRegionWithoutAnAddressIsRefused(t *testing.T) {
	f := newFx(t)
	_, err := f.d.Register(&driver.Region{Name: "go-heap", Kind: driver.Host, Layout: driver.Layout{SlotBytes: 8, Slots: 1}, Mem: make([]byte, 8)})
	var re *driver.RejectedError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, driver.RuleInvalidSpan, re.Rule)
	assert.Contains(t, re.Error(), `region "go-heap" has no address`)
}

// TestDrainClosesWhenOnlyMetadataIsLeft: a session left open is metadata
// only, so whatever its revoke answers, drain answers true; the revoke's
// answer says only whether the driver still holds the key. Each case is an
// answer the real SDK gave (docs/mooncake-sdk.md).
func TestDrainClosesWhenOnlyMetadataIsLeft(t *testing.T) {
	cases := []struct {
		name  string
		stage func(m *fakesdk.Master)
		held  string // why the driver holds the key after drain
	}{
		{"revoke with no local session (c2: -600)", func(m *fakesdk.Master) {
			m.Raise(fakesdk.CallStart, "k")
			m.Answer(fakesdk.CallRevoke, "k", mooncakegen.InvalidParams)
		}, ""},
		{"revoke after a late-applied end (h11-15: -700 forever; a second end 0)", func(m *fakesdk.Master) {
			m.Answer(fakesdk.CallEnd, "k", mooncakegen.RPCTimeout)
			m.Answer(fakesdk.CallRevoke, "k", mooncakegen.InvalidWrite)
		}, ""},
		{"a session taken over by another client (g1: -601 forever)", func(m *fakesdk.Master) {
			m.Answer(fakesdk.CallEnd, "k", mooncakegen.IllegalClient)
			m.Answer(fakesdk.CallRevoke, "k", mooncakegen.IllegalClient)
		}, "keep"},
		{"an orphan session from a start whose answer was lost (h5: revoke -600)", func(m *fakesdk.Master) {
			m.Raise(fakesdk.CallStart, "k")
			m.Answer(fakesdk.CallRevoke, "k", mooncakegen.InvalidParams)
		}, ""},
		{"a revoke the master cannot answer (killed: -900)", func(m *fakesdk.Master) {
			m.Answer(fakesdk.CallEnd, "k", mooncakegen.RPCFail)
			m.Answer(fakesdk.CallRevoke, "k", mooncakegen.RPCFail)
		}, "open"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t)
			c.stage(f.m)
			op, res := f.put(t, f.row("k", 0))
			require.Equal(t, driver.Fault, res[0].Status)
			require.True(t, op.AccessEnded())
			assert.True(t, f.d.Drain(conformance.Within(time.Second)), "no call can touch memory")
			assert.Equal(t, c.held, f.d.Held("k"))
			assert.NoError(t, f.d.Unregister(f.reg), "metadata never pins a region")
			f.reg, _ = f.d.Register(f.r.Region)
		})
	}
}

// putK returns a put of "k" from slot for a fake's Go, its answer
// dropped: the tests look at what the driver holds after it.
func putK(f *fx, slot int) func() {
	return func() {
		op, err := f.d.Put(context.Background(), []driver.Row{f.row("k", slot)})
		if err == nil {
			op.Poll()
		}
	}
}

// endTimedOut is a fixture whose put of "k" had its session end time out
// while the master was frozen (on the fake's clock), so the driver holds
// the session open; the master is still frozen, and the test thaws it.
func endTimedOut(t *testing.T) *fx {
	t.Helper()
	f := newFx(t)
	h := f.m.Hold(fakesdk.CallEnd, "k")
	done := f.m.Go(putK(f, 0))
	<-h.Entered
	f.m.FreezeMaster()
	h.Release()
	require.NoError(t, f.m.Await(done)) // the end times out on the fake's clock
	require.Equal(t, "open", f.d.Held("k"))
	return f
}

// TestDrainClosesAfterTheRealSDKsLeftovers stages, on the faithful fake,
// the four ways the real SDK leaves a session the driver cannot revoke.
func TestDrainClosesAfterTheRealSDKsLeftovers(t *testing.T) {
	t.Run("a start that raised left no local session: the put's own revoke answers -600", func(t *testing.T) {
		f := newFx(t)
		f.m.Raise(fakesdk.CallStart, "k")
		f.put(t, f.row("k", 0))
		assert.Equal(t, "", f.d.Held("k"), "released by the put itself")
		assert.True(t, f.d.Drain(conformance.Within(time.Second)))
	})
	t.Run("an end timed out and applied late: revoke -700", func(t *testing.T) {
		f := endTimedOut(t)
		f.m.ThawMaster() // and the master applies it
		assert.True(t, f.d.Drain(conformance.Within(time.Second)))
		assert.Equal(t, "", f.d.Held("k"), "the revoke's -700 is answered by a second end, which the master answers OK")
		assert.False(t, f.d.SDK().(*fakesdk.Client).HoldsSession("k"), "the client dropped its session on that OK")
		_, res := f.put(t, f.row("k", 1))
		assert.Equal(t, driver.Ready, res[0].Status, "the late end completed the object")
		f.m.Delete("k") // evicted, say: the key is this client's to write again
		starts := f.m.Calls(fakesdk.CallStart)
		_, res = f.put(t, f.row("k", 1))
		assert.Equal(t, driver.Ready, res[0].Status, res[0].Text)
		assert.Equal(t, starts+1, f.m.Calls(fakesdk.CallStart), "written by a session of its own")
	})
	t.Run("an end applied late whose second end fails: the key is kept", func(t *testing.T) {
		f := endTimedOut(t)
		f.m.ThawMaster()
		f.m.Answer(fakesdk.CallEnd, "k", mooncakegen.RPCFail) // the second end
		f.d.Drain(conformance.Within(time.Second))
		// Kept under the revoke's answer, never ended or revoked again
		// (tried: dropping holds[i].how = heldKeep in endAgain leaves the
		// key held as nothing, and a later put starts a session on it).
		assert.Equal(t, "keep", f.d.Held("k"))
	})
	t.Run("another client took the session over: end and revoke -601", func(t *testing.T) {
		f := newFx(t)
		h := f.m.Hold(fakesdk.CallScatter, "k")
		done := f.m.Go(putK(f, 0))
		<-h.Entered
		f.m.Advance(fakesdk.DefaultDiscard + time.Second)
		b := fakesdk.NewClient(f.m, mooncakekit.Version)
		codes, err := b.BatchPutSessionStart([]string{"k"}, []int64{slot})
		require.NoError(t, err)
		require.Equal(t, []int64{int64(mooncakegen.OK)}, codes)
		h.Release()
		require.NoError(t, f.m.Await(done))
		assert.Equal(t, "keep", f.d.Held("k"))
		assert.True(t, f.d.Drain(conformance.Within(time.Second)))
		assert.True(t, f.m.SessionOpen("k"), "B's session is B's")
		_, res := f.put(t, f.row("k", 1))
		assert.Equal(t, driver.Fault, res[0].Status, "B has not finished, but this client can never write the key: not NOT_READY")
		assert.Equal(t, int64(mooncakegen.IllegalClient), res[0].Code)
		assert.Contains(t, res[0].Text, "lost to this client")
		codes, err = b.BatchPutSessionRevoke([]string{"k"})
		require.NoError(t, err)
		require.Equal(t, []int64{int64(mooncakegen.OK)}, codes)
		_, res = f.put(t, f.row("k", 1))
		assert.Equal(t, driver.Fault, res[0].Status, "the taker's object is gone: still refused, with the reason")
		assert.Equal(t, int64(mooncakegen.IllegalClient), res[0].Code)
		require.NoError(t, b.Close())
	})
	t.Run("a start timed out and applied late: an orphan nothing can revoke", func(t *testing.T) {
		f := newFx(t)
		f.m.FreezeMaster()
		require.NoError(t, f.m.Await(f.m.Go(putK(f, 0))))
		f.m.ThawMaster()
		require.True(t, f.m.SessionOpen("k"), "the orphan")
		assert.Equal(t, "", f.d.Held("k"))
		assert.True(t, f.d.Drain(conformance.Within(time.Second)))
		_, res := f.put(t, f.row("k", 1))
		assert.Equal(t, driver.NotReady, res[0].Status, "the orphan holds the key")
		f.m.Advance(fakesdk.DefaultDiscard)
		_, res = f.put(t, f.row("k", 1))
		assert.Equal(t, driver.Ready, res[0].Status, "the master discarded it")
	})
}

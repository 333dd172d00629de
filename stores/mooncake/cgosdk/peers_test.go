//go:build mooncake

package cgosdk_test

import (
	"bytes"
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/cgosdk"
	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit/realkit"
)

// TestRealPeers drives the driver over the real SDK through what a real
// cluster does to a reader and a writer: the peer holding a get's object
// killed, or frozen past the get's transfer wait, and another client taking
// over a key this one is writing. Client A, the driver's, mounts no
// segment, so every replica lives on client B, another process (the
// recorder's TestRecordPeer). The fake-SDK twins, which CI runs, are
// stores/mooncake's TestAGetFromAKilledPeerEndsAtTeardown,
// TestAGetWhoseTransferFailedEndsAtTeardown and
// TestAKeptKeyIsRefusedWithTheAnswerThatKeptIt; the recordings they rest on
// are p1, p2 and g1 (stores/mooncake/testdata/mcscenario).
func TestRealPeers(t *testing.T) {
	if os.Getenv("MOONCAKE_REAL") != "1" || os.Getenv(envScenario) != "" || os.Getenv(envPeer) != "" {
		t.Skip("set MOONCAKE_REAL=1 to run against a real mooncake_master")
	}

	// docs/security.md: what kvblob's processes control binds loopback (the
	// master: newPeerFx refuses one listening elsewhere), and a real client
	// listens on the wildcard address, which Mooncake has no setting to
	// change. A build whose clients no longer do makes the doc wrong.
	t.Run("the clients listen where docs/security.md says", func(t *testing.T) {
		f := newPeerFx(t)
		addrs, err := storekit.ListeningOf(os.Getpid())
		require.NoError(t, err)
		var wild []string
		for _, a := range addrs {
			if a.Addr().IsUnspecified() {
				wild = append(wild, a.String())
			}
		}
		t.Logf("client A listens on %v; the master on %s", addrs, f.master.Addr)
		assert.NotEmpty(t, wild, "docs/security.md says a real client listens on 0.0.0.0 (no setting binds it); this build's listens on %v: update the doc", addrs)
		require.True(t, f.d.Drain(conformance.Within(realkit.Deadline)))
		require.NoError(t, f.d.Unregister(f.reg))
		require.NoError(t, f.d.Close())
	})

	// A get from a killed owner answers TRANSFER_FAIL at once; its access
	// ends at the teardown the drain makes, and the driver closes.
	t.Run("a reader whose peer was killed closes", func(t *testing.T) {
		f := newPeerFx(t)
		f.putAndWarm(t)
		f.kill(t)
		op, res := f.get(t)
		require.Equal(t, int64(mooncakegen.TransferFail), res[0].Code, res[0].Text)
		f.closesAfterTeardown(t, op)
		assert.Equal(t, canary(), f.r.Slot(1).Bytes(), "nothing landed in the reader's slot")
	})

	// A get from a frozen owner answers TRANSFER_FAIL at the 60 s transfer
	// wait with its transfer still running (status timeout 120 s: the
	// bytes would land on the thaw, s3); the drain tears the client down
	// while the owner is frozen, the driver closes, and after the thaw
	// nothing lands (p1).
	t.Run("a reader whose peer was frozen then thawed closes", func(t *testing.T) {
		t.Setenv("MC_TCP_STATUS_TIMEOUT_SEC", "120") // read per transfer (tcp_transport_session_impl.h)
		f := newPeerFx(t)
		f.putAndWarm(t)
		f.signal(t, syscall.SIGSTOP)
		require.NoError(t, waitStopped(f.b.cmd.Process.Pid))
		t0 := time.Now()
		op, res := f.get(t)
		t.Logf("the get answered %d after %v", res[0].Code, time.Since(t0).Round(time.Millisecond))
		require.Equal(t, int64(mooncakegen.TransferFail), res[0].Code, res[0].Text)
		f.closesAfterTeardown(t, op)
		f.signal(t, syscall.SIGCONT)
		// s3's object landed within 1 s of the thaw; p1 looked 3 s after.
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			require.Equal(t, canary(), f.r.Slot(1).Bytes(), "bytes landed after the teardown")
			time.Sleep(50 * time.Millisecond) // paces the look at the slot
		}
	})

	// Another client takes a key over while this one writes it (g1: a
	// start after put_start_discard_timeout_sec). The put answers
	// ILLEGAL_CLIENT, and a later put of the key is READY when the taker
	// stored its object, and otherwise a FAULT that says the key is lost to
	// this client and to reopen the driver, which then writes it.
	t.Run("a takeover leaves the key writable or clearly refused", func(t *testing.T) {
		f := newPeerFx(t)
		src, err := f.b.alloc(slot)
		require.NoError(t, err)
		src.Write(0, bytes.Repeat([]byte{'b'}, slot))
		f.a.beforeEnd = func(keys []string) {
			// Past the master's 2 s discard timeout, B starts both keys,
			// stores "taken" and leaves "orphan" open.
			start := time.Now()
			for _, k := range []string{"taken", "orphan"} {
				for {
					codes, err := f.b.BatchPutSessionStart([]string{k}, []int64{slot})
					require.NoError(t, err)
					if codes[0] == 0 {
						break
					}
					require.Equal(t, int64(mooncakegen.ObjectAlreadyExists), codes[0], "B's start of %s before the discard timeout", k)
					require.Less(t, time.Since(start), 20*time.Second, "B's start of %s answered %v", k, codes)
					time.Sleep(200 * time.Millisecond) // paces B's retry until A's session is past the discard timeout
				}
			}
			n, err := f.b.BatchPutFromMultiBufferRanges([]string{"taken"}, [][]mooncake.Buffer{{src.Buffer()}})
			require.NoError(t, err)
			require.Equal(t, []int64{slot}, n)
			ends, err := f.b.BatchPutSessionEnd([]string{"taken"})
			require.NoError(t, err)
			require.Equal(t, []int64{0}, ends)
		}
		fill(f.r.Slot(0).Bytes(), 'a')
		fill(f.r.Slot(1).Bytes(), 'a')
		res := f.put(t, f.row("taken", 0), f.row("orphan", 1))
		f.a.beforeEnd = nil
		for i, r := range res {
			assert.Equal(t, driver.Fault, r.Status, "row %d: %s", i, r.Text)
			assert.Equal(t, int64(mooncakegen.IllegalClient), r.Code, "row %d: %s", i, r.Text)
		}
		revoked, err := f.b.BatchPutSessionRevoke([]string{"orphan"})
		require.NoError(t, err)
		require.Equal(t, []int64{0}, revoked)

		again := f.put(t, f.row("taken", 0), f.row("orphan", 1))
		assert.Equal(t, driver.Ready, again[0].Status, "the taker's object is there: %s", again[0].Text)
		assert.Equal(t, driver.Fault, again[1].Status)
		assert.Equal(t, int64(mooncakegen.IllegalClient), again[1].Code)
		assert.Contains(t, again[1].Text, "lost to this client")
		assert.Contains(t, again[1].Text, "reopen the driver")
		t.Logf("a later put of the orphaned key: %s", again[1].Text)

		require.True(t, f.d.Drain(conformance.Within(realkit.Deadline)), "kept keys pin no memory")
		require.NoError(t, f.d.Unregister(f.reg))
		require.NoError(t, f.d.Close())

		g := f.reopen(t)
		res = g.put(t, g.row("orphan", 1))
		assert.Equal(t, driver.Ready, res[0].Status, "a new client writes the key: %s", res[0].Text)
		require.True(t, g.d.Drain(conformance.Within(realkit.Deadline)))
		require.NoError(t, g.d.Unregister(g.reg))
		require.NoError(t, g.d.Close())
	})

	// An end whose answer was lost (RPC_TIMEOUT against a frozen master)
	// is applied on the thaw (h11-15): the drain's revoke answers
	// INVALID_WRITE, the driver ends the session again (end_again), the
	// client drops it, and the key is the driver's to write again: a later
	// put finds the late end's object complete (READY) and a get reads it.
	t.Run("a late-applied end leaves the key writable", func(t *testing.T) {
		t.Setenv("MC_RPC_TIMEOUT_MS", "3000") // read when a client sets up (master_client.h)
		f := newPeerFx(t)
		f.a.beforeEnd = func([]string) {
			require.NoError(t, f.master.Freeze())
			require.NoError(t, waitStopped(f.master.PID()))
		}
		f.a.afterEnd = func() { require.NoError(t, f.master.Thaw()) }
		fill(f.r.Slot(0).Bytes(), 'k')
		res := f.put(t, f.row("k", 0))
		f.a.beforeEnd, f.a.afterEnd = nil, nil
		require.Equal(t, driver.Fault, res[0].Status)
		require.Equal(t, int64(mooncakegen.RPCTimeout), res[0].Code, res[0].Text)
		assert.Equal(t, "open", f.d.Held("k"), "an unanswered end may still complete: the drain revokes it")
		// The thawed master applies the late end.
		start := time.Now()
		for {
			exist, err := f.b.BatchIsExist([]string{"k"})
			require.NoError(t, err)
			if exist[0] == 1 {
				break
			}
			require.Less(t, time.Since(start), 10*time.Second, "the late end was never applied")
			time.Sleep(100 * time.Millisecond) // paces the look for the late end's object
		}
		f.a.revokes = nil
		require.True(t, f.d.Drain(conformance.Within(realkit.Deadline)))
		assert.Equal(t, []int64{int64(mooncakegen.InvalidWrite)}, f.a.revokes, "the drain's revoke met the late end")
		assert.Empty(t, f.d.Held("k"), "ended again: the client dropped its session")
		again := f.put(t, f.row("k", 0))
		assert.Equal(t, driver.Ready, again[0].Status, again[0].Text)
		copy(f.r.Slot(1).Bytes(), canary())
		_, got := f.get(t)
		require.Equal(t, driver.Ready, got[0].Status, got[0].Text)
		assert.Equal(t, f.r.Slot(0).Bytes(), f.r.Slot(1).Bytes())
		require.True(t, f.d.Drain(conformance.Within(realkit.Deadline)))
		require.NoError(t, f.d.Unregister(f.reg))
		require.NoError(t, f.d.Close())
	})
}

const slot = 4096

// peerFx is a master, client B (another process, owning the only
// segment) and the driver over client A.
type peerFx struct {
	master *storekit.Server
	b      *peer
	a      *pausingSDK
	d      *mooncake.Driver
	r      *hostmem.Mapping
	reg    driver.Registration
}

func newPeerFx(t *testing.T) *peerFx {
	t.Helper()
	m, err := storekit.Start(realkit.Master) // a 2 s put discard timeout
	require.NoError(t, err)
	t.Cleanup(m.Stop)
	require.NoError(t, m.LoopbackOnly())
	mc := mooncake.DefaultConfig().Mooncake
	mc.Master = m.Addr
	mc.GlobalSegmentSize = 64 << 20
	b, err := startPeer(t, mc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	f := &peerFx{master: m, b: b}
	f.open(t)
	return f
}

// open opens the driver over a new client A, with no segment.
func (f *peerFx) open(t *testing.T) {
	t.Helper()
	mc := mooncake.DefaultConfig().Mooncake
	mc.Master = f.master.Addr
	mc.GlobalSegmentSize = 0
	sdk, err := cgosdk.Open(mc)
	require.NoError(t, err)
	f.a = &pausingSDK{SDK: sdk}
	f.d, err = mooncake.NewWith(f.a, mooncake.Options{AllowUnverified: true})
	require.NoError(t, err)
	f.r, err = hostmem.Map("slots", driver.Layout{SlotBytes: slot, Slots: 2})
	require.NoError(t, err)
	f.reg, err = f.d.Register(f.r.Region)
	require.NoError(t, err)
	d, r, a := f.d, f.r, f.a
	t.Cleanup(func() {
		// A driver a check left open: its client is torn down before its
		// memory is unmapped, so no transfer can land in freed memory.
		if d.Close() != nil {
			_ = a.SDK.Close()
		}
		_ = r.Close()
	})
}

// reopen is f with the driver over a new client of the same pool.
func (f *peerFx) reopen(t *testing.T) *peerFx {
	g := &peerFx{master: f.master, b: f.b}
	g.open(t)
	return g
}

func (f *peerFx) row(key string, i int) driver.Row {
	return driver.Row{Key: key, Spans: []driver.Span{f.r.Slot(i)}}
}

func (f *peerFx) put(t *testing.T, rows ...driver.Row) []driver.Result {
	t.Helper()
	op, err := f.d.Put(context.Background(), rows)
	require.NoError(t, err)
	res, done := op.Poll()
	require.True(t, done)
	require.True(t, op.AccessEnded(), "a put's access ends on its return")
	return res
}

// get reads "k" into slot 1.
func (f *peerFx) get(t *testing.T) (driver.Operation, []driver.Result) {
	t.Helper()
	op, err := f.d.Get(context.Background(), []driver.Row{f.row("k", 1)}, driver.Hint{})
	require.NoError(t, err)
	res, done := op.Poll()
	require.True(t, done)
	return op, res
}

// putAndWarm stores "k" on B's segment from slot 0, reads it back once
// (the A-B connection is then up, as in p2 and s3) and fills slot 1 with
// the canary.
func (f *peerFx) putAndWarm(t *testing.T) {
	t.Helper()
	fill(f.r.Slot(0).Bytes(), 'k')
	require.Equal(t, driver.Ready, f.put(t, f.row("k", 0))[0].Status)
	_, res := f.get(t)
	require.Equal(t, driver.Ready, res[0].Status, res[0].Text)
	require.Equal(t, f.r.Slot(0).Bytes(), f.r.Slot(1).Bytes())
	copy(f.r.Slot(1).Bytes(), canary())
}

func (f *peerFx) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, f.b.cmd.Process.Signal(sig))
}

// kill kills B and waits until its process is gone.
func (f *peerFx) kill(t *testing.T) {
	t.Helper()
	f.signal(t, syscall.SIGKILL)
	select {
	case <-f.b.dead:
	case <-time.After(10 * time.Second):
		t.Fatal("client B did not die within 10 s of SIGKILL")
	}
}

// closesAfterTeardown checks a get whose access only the teardown ends:
// its region stays registered until a drain tears the client down, which
// ends the access; then the driver unregisters and closes.
func (f *peerFx) closesAfterTeardown(t *testing.T, op driver.Operation) {
	t.Helper()
	assert.False(t, op.AccessEnded(), "the transfer may go on")
	assert.False(t, op.AccessUnprovable(), "a teardown ends it")
	te, ok := op.(driver.TeardownEnder)
	require.True(t, ok)
	assert.True(t, te.AccessEndsAtTeardown())
	assert.True(t, driver.IsRejected(f.d.Unregister(f.reg)), "unregister while the transfer may land")
	t0 := time.Now()
	require.True(t, f.d.Drain(conformance.Within(realkit.Deadline)), "the drain tears the client down")
	t.Logf("the drain's teardown took %v", time.Since(t0).Round(time.Millisecond))
	assert.True(t, op.AccessEnded(), "the teardown ended the get's access")
	require.NoError(t, f.d.Unregister(f.reg), "the registration went with the client")
	require.NoError(t, f.d.Close())
}

// pausingSDK is client A with hooks around each session end: where a
// check stages what another client or the master does between this
// driver's scatter and its end. It records what its revokes answered.
type pausingSDK struct {
	mooncake.SDK
	beforeEnd func(keys []string)
	afterEnd  func()
	revokes   []int64
}

func (p *pausingSDK) BatchPutSessionEnd(keys []string) ([]int64, error) {
	if p.beforeEnd != nil {
		p.beforeEnd(keys)
	}
	codes, err := p.SDK.BatchPutSessionEnd(keys)
	if p.afterEnd != nil {
		p.afterEnd()
	}
	return codes, err
}

func (p *pausingSDK) BatchPutSessionRevoke(keys []string) ([]int64, error) {
	codes, err := p.SDK.BatchPutSessionRevoke(keys)
	p.revokes = append(p.revokes, codes...)
	return codes, err
}

func canary() []byte { return bytes.Repeat([]byte{0xEE}, slot) }

func fill(p []byte, b byte) {
	for i := range p {
		p[i] = b
	}
}

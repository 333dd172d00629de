package memory_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/stores/trailer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	memorygen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const slot = 256

type fixture struct {
	d   *memory.Driver
	r   *hostmem.Mapping
	reg driver.Registration
}

func newFixture(t *testing.T, opt memory.Options) *fixture {
	t.Helper()
	r, err := hostmem.Map("slots", driver.Layout{SlotBytes: slot, Slots: 8})
	require.NoError(t, err)
	d := memory.New(opt)
	reg, err := d.Register(r.Region)
	require.NoError(t, err)
	f := &fixture{d: d, r: r, reg: reg}
	t.Cleanup(func() {
		if d.Drain(conformance.Within(5 * time.Second)) {
			_ = d.Unregister(reg)
			_ = r.Close()
		} // else: keep the memory, a store may still touch it
	})
	return f
}

func (f *fixture) row(key string, i int) driver.Row {
	return driver.Row{Key: key, Spans: []driver.Span{f.r.Slot(i)}}
}

func (f *fixture) fill(i int, b byte) {
	s := f.r.Slot(i).Bytes()
	for j := range s {
		s[j] = b + byte(j)
	}
}

func wait(t *testing.T, op driver.Operation) []driver.Result {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if res, done := op.Poll(); done {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatal("operation did not finish within 5s")
		}
		time.Sleep(time.Millisecond) // polling an operation, not synchronising a test
	}
}

func TestRoundTripIsByteForByte(t *testing.T) {
	for _, mode := range []memory.Mode{memory.Blocking, memory.Background} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFixture(t, memory.Options{Mode: mode})
			f.fill(0, 1)
			f.fill(1, 50)
			put, err := f.d.Put(context.Background(), []driver.Row{f.row("a", 0), f.row("b", 1)})
			require.NoError(t, err)
			assert.Equal(t, []driver.Result{{Status: driver.Ready}, {Status: driver.Ready}}, wait(t, put))
			get, err := f.d.Get(context.Background(), []driver.Row{f.row("a", 2), f.row("b", 3)}, driver.Hint{})
			require.NoError(t, err)
			assert.Equal(t, []driver.Result{{Status: driver.Ready}, {Status: driver.Ready}}, wait(t, get))
			assert.Equal(t, f.r.Slot(0).Bytes(), f.r.Slot(2).Bytes())
			assert.Equal(t, f.r.Slot(1).Bytes(), f.r.Slot(3).Bytes())
			require.True(t, f.d.Drain(conformance.Within(time.Second)))
		})
	}
}

// The store leaves its own objects' trailer unwritten (no read of them
// compares it), so every way an object is seen whole must fill it in, name
// digest and CRC32 included: an object taken out of the store is the one
// trailer.Encode makes, and a reader with Integrity on finds the tag
// missing, not the digest or the checksum wrong. "a" is stored into the
// block another key's object left, so a stale trailer would show.
func TestAnObjectSeenWholeCarriesItsChecksum(t *testing.T) {
	f := newFixture(t, memory.Options{})
	f.fill(1, 9)
	planted := trailer.Encode("b", f.r.Slot(1).Bytes())
	f.d.Store().SetObject("b", planted)
	f.d.Store().Delete("b") // its block, trailer and all, is the next one handed out
	f.fill(0, 3)
	put, err := f.d.Put(context.Background(), []driver.Row{f.row("a", 0)})
	require.NoError(t, err)
	require.Equal(t, driver.Ready, wait(t, put)[0].Status)

	obj, ok := f.d.Store().Object("a")
	require.True(t, ok)
	assert.Equal(t, trailer.Encode("a", f.r.Slot(0).Bytes()), obj)
	payload, err := trailer.Check(obj, "a")
	require.NoError(t, err)
	assert.Equal(t, f.r.Slot(0).Bytes(), payload)

	keyed := newFixture(t, memory.Options{Store: f.d.Store(), Integrity: rowKeys(t, 0xA0, 0)})
	res, written := keyed.getInto(t, "a")
	assert.Equal(t, int64(memorygen.Corrupt), res.Code, "%v", res)
	assert.Contains(t, res.Text, "row integrity not verified")
	assert.NotContains(t, res.Text, "CRC32")
	assert.False(t, written)
}

func TestMissLeavesDestinationUntouched(t *testing.T) {
	f := newFixture(t, memory.Options{})
	f.fill(0, 9)
	before := bytes.Clone(f.r.Slot(0).Bytes())
	op, err := f.d.Get(context.Background(), []driver.Row{f.row("absent", 0)}, driver.Hint{})
	require.NoError(t, err)
	assert.Equal(t, driver.Miss, wait(t, op)[0].Status)
	assert.Equal(t, before, f.r.Slot(0).Bytes())
}

func TestCorruptObjectsAreFaultsNamingWhatWasWrong(t *testing.T) {
	payload := bytes.Repeat([]byte{7}, slot)
	good := trailer.Encode("k", payload)
	mutate := func(fn func(o []byte) []byte) []byte { return fn(bytes.Clone(good)) }
	tr := len(good) - trailer.Size
	cases := []struct {
		name string
		obj  []byte
		want string
	}{
		{"magic", mutate(func(o []byte) []byte { o[tr] = 'X'; return o }), "magic"},
		{"version", mutate(func(o []byte) []byte { binary.LittleEndian.PutUint16(o[tr+4:], trailer.VersionKeyed+1); return o }), "format version 5, expected 1, 2, 3 or 4"},
		{"name", trailer.Encode("other", payload), "name digest"},
		{"length", mutate(func(o []byte) []byte { binary.LittleEndian.PutUint64(o[tr+24:], 5); return o }), "payload length"},
		{"checksum", mutate(func(o []byte) []byte { o[0] ^= 1; return o }), "CRC32"},
		{"too short", []byte("abc"), "shorter than its"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, memory.Options{})
			f.d.Store().SetObject("k", c.obj)
			f.fill(0, 3)
			before := bytes.Clone(f.r.Slot(0).Bytes())
			op, err := f.d.Get(context.Background(), []driver.Row{f.row("k", 0)}, driver.Hint{})
			require.NoError(t, err, "a store fault is a row result, never an error")
			res := wait(t, op)[0]
			assert.Equal(t, driver.Fault, res.Status)
			assert.Equal(t, int64(memorygen.Corrupt), res.Code)
			assert.Contains(t, res.Text, c.want)
			assert.Equal(t, before, f.r.Slot(0).Bytes(), "a corrupt object must not reach the slot")
		})
	}
}

func TestStoreAnswersBecomeRowResults(t *testing.T) {
	cases := []struct {
		name  string
		stage func(f *fixture)
		put   bool
		want  driver.Status
		code  int64
	}{
		{"store error on put is a fault", func(f *fixture) { f.d.Store().Inject(memory.CallPut, "k", memorygen.IOError) }, true, driver.Fault, int64(memorygen.IOError)},
		{"store error on get is a fault", func(f *fixture) { f.d.Store().Inject(memory.CallGet, "k", memorygen.IOError) }, false, driver.Fault, int64(memorygen.IOError)},
		{"a full store declines", func(f *fixture) { f.d.Store().SetCapacity(10) }, true, driver.Declined, int64(memorygen.Full)},
		{"another writer's key is not ready to put", func(f *fixture) { f.d.Store().BeginExternal("k") }, true, driver.NotReady, 0},
		{"another writer's key is not ready to get", func(f *fixture) { f.d.Store().BeginExternal("k") }, false, driver.NotReady, 0},
		{"a shorter object is a fault", func(f *fixture) { f.d.Store().SetObject("k", trailer.Encode("k", []byte("short"))) }, false, driver.Fault, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, memory.Options{})
			c.stage(f)
			var op driver.Operation
			var err error
			if c.put {
				op, err = f.d.Put(context.Background(), []driver.Row{f.row("k", 0)})
			} else {
				op, err = f.d.Get(context.Background(), []driver.Row{f.row("k", 0)}, driver.Hint{})
			}
			require.NoError(t, err)
			res := wait(t, op)[0]
			assert.Equal(t, c.want, res.Status, res.Text)
			assert.Equal(t, c.code, res.Code)
			assert.NoError(t, res.Validate())
		})
	}
}

func TestDeviceRegionIsRefusedAtRegister(t *testing.T) {
	d := memory.New(memory.Options{})
	_, err := d.Register(&driver.Region{Name: "gpu", Kind: driver.Device, Layout: driver.Layout{SlotBytes: 8, Slots: 1}})
	var re *driver.RejectedError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, driver.RuleDeviceRegion, re.Rule)
}

func TestControlledStagesAreObservedApart(t *testing.T) {
	t.Run("results before access end", func(t *testing.T) {
		f := newFixture(t, memory.Options{Mode: memory.Controlled})
		op, err := f.d.Put(context.Background(), []driver.Row{f.row("k", 0)})
		require.NoError(t, err)
		c := memory.ControllerOf(op)
		_, done := op.Poll()
		assert.False(t, done)
		c.PublishResults()
		res, done := op.Poll()
		assert.True(t, done)
		assert.Equal(t, driver.Ready, res[0].Status)
		assert.False(t, op.AccessEnded(), "READY does not end access")
		assert.Error(t, f.d.Unregister(f.reg), "unregister while access is open")
		c.EndAccess()
		assert.True(t, op.AccessEnded())
	})
	t.Run("access end before results", func(t *testing.T) {
		f := newFixture(t, memory.Options{Mode: memory.Controlled})
		op, err := f.d.Put(context.Background(), []driver.Row{f.row("k", 0)})
		require.NoError(t, err)
		c := memory.ControllerOf(op)
		c.EndAccess()
		assert.True(t, op.AccessEnded())
		_, done := op.Poll()
		assert.False(t, done, "ending access publishes no result")
		c.PublishResults()
		_, done = op.Poll()
		assert.True(t, done)
	})
}

func TestCancelOnlyStopsRowsThatNeverStarted(t *testing.T) {
	f := newFixture(t, memory.Options{Mode: memory.Controlled})
	before, err := f.d.Put(context.Background(), []driver.Row{f.row("a", 0), f.row("b", 1)})
	require.NoError(t, err)
	before.Cancel()
	memory.ControllerOf(before).PublishResults()
	res, _ := before.Poll()
	assert.Equal(t, []driver.Result{{Status: driver.Cancelled}, {Status: driver.Cancelled}}, res)

	after, err := f.d.Put(context.Background(), []driver.Row{f.row("c", 0)})
	require.NoError(t, err)
	c := memory.ControllerOf(after)
	c.MoveData()
	after.Cancel()
	c.PublishResults()
	c.EndAccess()
	res, _ = after.Poll()
	assert.Equal(t, driver.Ready, res[0].Status, "a started row is never CANCELLED")
}

func TestUnprovableOperationPinsRegionAndDrain(t *testing.T) {
	f := newFixture(t, memory.Options{})
	f.d.LoseEvidenceNext()
	op, err := f.d.Put(context.Background(), []driver.Row{f.row("k", 0)})
	require.NoError(t, err)
	assert.True(t, op.AccessUnprovable())
	assert.False(t, op.AccessEnded())
	start := time.Now()
	assert.False(t, f.d.Drain(conformance.Within(time.Hour)), "drain answers false at once")
	assert.Less(t, time.Since(start), time.Minute)
	var re *driver.RejectedError
	require.ErrorAs(t, f.d.Unregister(f.reg), &re)
	assert.Equal(t, driver.RuleAccessOpen, re.Rule)
}

func TestDrainWaitsForBackgroundWork(t *testing.T) {
	f := newFixture(t, memory.Options{Mode: memory.Background})
	entered, release := f.d.Store().Hold(memory.CallPut, "k")
	op, err := f.d.Put(context.Background(), []driver.Row{f.row("k", 0)})
	require.NoError(t, err)
	<-entered
	assert.False(t, f.d.Drain(conformance.Within(10*time.Millisecond)), "a put is held inside the store")
	release()
	assert.True(t, f.d.Drain(conformance.Within(5*time.Second)))
	assert.True(t, op.AccessEnded())
}

func TestCloseNeedsDrainAndUnregister(t *testing.T) {
	r, err := hostmem.Map("r", driver.Layout{SlotBytes: 64, Slots: 1})
	require.NoError(t, err)
	defer r.Close()
	d := memory.New(memory.Options{})
	reg, err := d.Register(r.Region)
	require.NoError(t, err)
	assert.Error(t, d.Close(), "no drain yet")
	require.True(t, d.Drain(conformance.Within(time.Second)))
	assert.Error(t, d.Close(), "a region is still registered")
	require.NoError(t, d.Unregister(reg))
	require.NoError(t, d.Close())
	_, err = d.Put(context.Background(), []driver.Row{{Key: "k", Spans: []driver.Span{r.Slot(0)}}})
	assert.True(t, driver.IsRejected(err), "a closed driver rejects work")
}

func TestAPutNotYetPublishedIsNotReadyToOthers(t *testing.T) {
	shared := memory.NewStore(0)
	f := newFixture(t, memory.Options{Mode: memory.Controlled, Store: shared})
	reader := newFixture(t, memory.Options{Store: shared})
	op, err := f.d.Put(context.Background(), []driver.Row{f.row("k", 0)})
	require.NoError(t, err)
	c := memory.ControllerOf(op)
	c.MoveData()
	get, err := reader.d.Get(context.Background(), []driver.Row{reader.row("k", 1)}, driver.Hint{})
	require.NoError(t, err)
	assert.Equal(t, driver.NotReady, wait(t, get)[0].Status, "data moved but not committed")
	c.PublishResults()
	c.EndAccess()
	get, err = reader.d.Get(context.Background(), []driver.Row{reader.row("k", 1)}, driver.Hint{})
	require.NoError(t, err)
	assert.Equal(t, driver.Ready, wait(t, get)[0].Status)
}

func TestOperationsNotifyEachChange(t *testing.T) {
	f := newFixture(t, memory.Options{Mode: memory.Controlled})
	op, err := f.d.Put(context.Background(), []driver.Row{f.row("k", 0)})
	require.NoError(t, err)
	n, ok := op.(driver.Notifier)
	require.True(t, ok, "a memory operation is a driver.Notifier")
	var calls atomic.Int32
	n.Notify(func() { calls.Add(1) })
	c := memory.ControllerOf(op)
	c.MoveData()
	assert.Zero(t, calls.Load(), "moving data changes nothing Poll answers")
	c.PublishResults()
	assert.Equal(t, int32(1), calls.Load(), "results published")
	c.EndAccess()
	assert.Equal(t, int32(2), calls.Load(), "access ended")
}

// A put finds its key's entry once, as it reserves it, and commits
// through it. When another writer took the key over and let it go while
// the put was moving (the entry left the store's map), the put still
// commits its object under the key.
func TestAPutCommitsAfterAnotherWriterTookItsKeyAndLetGo(t *testing.T) {
	f := newFixture(t, memory.Options{Mode: memory.Controlled})
	reader := newFixture(t, memory.Options{Store: f.d.Store()})
	f.fill(0, 5)
	op, err := f.d.Put(context.Background(), []driver.Row{f.row("k", 0)})
	require.NoError(t, err)
	c := memory.ControllerOf(op)
	c.MoveData()
	f.d.Store().BeginExternal("k")()
	c.PublishResults()
	c.EndAccess()
	assert.Equal(t, driver.Ready, wait(t, op)[0].Status)
	assert.Equal(t, 1, f.d.Store().Len())
	res, written := reader.getInto(t, "k")
	assert.Equal(t, driver.Ready, res.Status, "%v", res)
	assert.True(t, written)
	assert.Equal(t, f.r.Slot(0).Bytes(), reader.r.Slot(1).Bytes())
}

// A put the store declines (full) leaves nothing under its key: a get
// misses, it does not find the key still being written.
func TestADeclinedPutLeavesNoTrace(t *testing.T) {
	f := newFixture(t, memory.Options{})
	f.d.Store().SetCapacity(10)
	op, err := f.d.Put(context.Background(), []driver.Row{f.row("k", 0)})
	require.NoError(t, err)
	assert.Equal(t, driver.Declined, wait(t, op)[0].Status)
	assert.Zero(t, f.d.Store().Len())
	res, written := f.getInto(t, "k")
	assert.Equal(t, driver.Miss, res.Status, "%v", res)
	assert.False(t, written)
}

// A call of one row keeps its result (and a put its write) in the op
// itself: it allocates two fewer times than a put of three rows (the
// results and the writes) and once fewer than a get of three rows.
func TestACallOfOneRowKeepsItsRoomInTheOp(t *testing.T) {
	f := newFixture(t, memory.Options{})
	allocs := func(put bool, rows []driver.Row) float64 {
		return testing.AllocsPerRun(100, func() {
			var op driver.Operation
			if put {
				op, _ = f.d.Put(context.Background(), rows)
			} else {
				op, _ = f.d.Get(context.Background(), rows, driver.Hint{})
			}
			if _, done := op.Poll(); !done {
				t.Fatal("a blocking driver returned an unfinished operation")
			}
		})
	}
	one := []driver.Row{f.row("a", 0)}
	three := []driver.Row{f.row("a", 0), f.row("b", 1), f.row("c", 2)}
	assert.LessOrEqual(t, allocs(true, one), allocs(true, three)-2, "put")
	assert.LessOrEqual(t, allocs(false, one), allocs(false, three)-1, "get")
}

// When every row of an operation was cancelled before it started, moving
// it ends its access, which notifies; the notified may move the operation
// again (here through its Controller), and that returns at once.
func TestANotifiedCallerMayMoveTheOperationAgain(t *testing.T) {
	f := newFixture(t, memory.Options{Mode: memory.Controlled})
	op, err := f.d.Put(context.Background(), []driver.Row{f.row("a", 0), f.row("b", 1)})
	require.NoError(t, err)
	c := memory.ControllerOf(op)
	op.Cancel()
	var calls atomic.Int32
	op.(driver.Notifier).Notify(func() {
		calls.Add(1)
		c.MoveData()
	})
	c.MoveData()
	assert.True(t, op.AccessEnded(), "no row started: access ended")
	assert.Equal(t, int32(1), calls.Load())
	c.PublishResults()
	assert.Equal(t, []driver.Result{{Status: driver.Cancelled}, {Status: driver.Cancelled}}, wait(t, op))
}

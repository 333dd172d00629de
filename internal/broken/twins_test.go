package broken

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/runtime/driver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// plain is a sound store reduced to what a twin's test needs: it answers
// each operation at once with the next results its test queued (READY for
// every row when none are), writes nothing into any span, records the
// keys each call reached it with, and says whether work is in progress to
// Drain. Its operations end their access unless open or unprovable is
// set, and its Unregister answers refuse.
type plain struct {
	mu         sync.Mutex
	answers    [][]driver.Result // queued answers, one per Put or Get
	puts       [][]string        // the keys of each put that reached the store
	gets       [][]string        // the keys of each get that reached the store
	busy       bool              // Drain answers !busy
	open       bool              // operations never end their access
	unprovable bool              // operations report their access unprovable
	refuse     error             // what Unregister answers
}

// plainOp is a plain store's operation: done at once with res.
type plainOp struct {
	res              []driver.Result
	open, unprovable bool
}

func (o plainOp) Poll() ([]driver.Result, bool) { return o.res, true }
func (o plainOp) AccessEnded() bool             { return !o.open && !o.unprovable }
func (o plainOp) AccessUnprovable() bool        { return o.unprovable }
func (plainOp) Cancel()                         {}

func (p *plain) answer(rows []driver.Row, calls *[][]string) driver.Operation {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]string, len(rows))
	for i, r := range rows {
		keys[i] = r.Key
	}
	*calls = append(*calls, keys)
	res := ready(len(rows))
	if len(p.answers) > 0 {
		res, p.answers = p.answers[0], p.answers[1:]
	}
	return plainOp{res: res, open: p.open, unprovable: p.unprovable}
}

func (p *plain) Capabilities() driver.Capabilities {
	return driver.Capabilities{MultiSpan: true, Hints: true, MaxRowsPerOp: 16}
}
func (p *plain) Register(r *driver.Region) (driver.Registration, error) {
	return fakeRegistration{r}, nil
}
func (p *plain) Unregister(driver.Registration) error { return p.refuse }
func (p *plain) Put(_ context.Context, rows []driver.Row) (driver.Operation, error) {
	return p.answer(rows, &p.puts), nil
}
func (p *plain) Get(_ context.Context, rows []driver.Row, _ driver.Hint) (driver.Operation, error) {
	return p.answer(rows, &p.gets), nil
}
func (p *plain) Drain(context.Context) bool { p.mu.Lock(); defer p.mu.Unlock(); return !p.busy }
func (p *plain) Close() error               { return nil }

// twin wraps p in the twin of the named check.
func twin(t *testing.T, check string, p *plain) driver.Driver {
	t.Helper()
	f, ok := Twin(check)
	require.True(t, ok, "no twin for %q", check)
	return f(p)
}

// region is a zeroed host region of n one-byte slots.
func region(n int) *driver.Region {
	return &driver.Region{Name: "r", Kind: driver.Host, Layout: driver.Layout{SlotBytes: 1, Slots: n}, Mem: make([]byte, n)}
}

// put and get run one call on d and poll its operation once: every
// operation here is done at once.
func put(t *testing.T, d driver.Driver, rows []driver.Row) []driver.Result {
	t.Helper()
	return done(t)(d.Put(context.Background(), rows))
}

func get(t *testing.T, d driver.Driver, rows []driver.Row) []driver.Result {
	t.Helper()
	return done(t)(d.Get(context.Background(), rows, driver.Hint{}))
}

func done(t *testing.T) func(driver.Operation, error) []driver.Result {
	return func(op driver.Operation, err error) []driver.Result {
		t.Helper()
		require.NoError(t, err)
		res, done := op.Poll()
		require.True(t, done, "the operation was not done at once")
		return res
	}
}

// TestDrainTwinAnswersTrueBeforeTheWorkFinished: with work in progress,
// the drain twin answers true to a Drain whose deadline is near (the
// lie its check catches), and passes any other Drain to the store, which
// answers false.
func TestDrainTwinAnswersTrueBeforeTheWorkFinished(t *testing.T) {
	p := &plain{busy: true}
	d := twin(t, "drain_waits_for_work_in_progress", p)
	near, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.True(t, d.Drain(near), "a Drain with a near deadline: the twin must answer true with work in progress")
	assert.False(t, d.Drain(context.Background()), "a Drain with no deadline: the twin must pass on the store's false")
}

// TestMultiSpanTwinCorruptsTheSecondSpan: a READY get of a row of two
// one-byte spans delivers the first span as the store wrote it (untouched
// here) and the second changed.
func TestMultiSpanTwinCorruptsTheSecondSpan(t *testing.T) {
	d := twin(t, "multi_span_rows_round_trip_when_declared", &plain{})
	r := region(2)
	row := driver.Row{Key: "k", Spans: []driver.Span{r.Slot(0), r.Slot(1)}}
	res := get(t, d, []driver.Row{row})
	require.Equal(t, driver.Ready, res[0].Status)
	assert.Equal(t, byte(0), r.Mem[0], "the first span must be delivered as the store wrote it")
	assert.NotEqual(t, byte(0), r.Mem[1], "the second span must be delivered changed")
}

// TestSpanTwinWritesPastTheSpan: a get of a one-byte span changes the
// region's byte just past it.
func TestSpanTwinWritesPastTheSpan(t *testing.T) {
	d := twin(t, "writes_stay_inside_their_spans", &plain{})
	r := region(2)
	row := driver.Row{Key: "k", Spans: []driver.Span{r.Slot(0)}}
	get(t, d, []driver.Row{row})
	assert.Equal(t, byte(0), r.Mem[0], "the span itself is the store's to write")
	assert.NotEqual(t, byte(0), r.Mem[1], "the byte past the span must be changed")
}

// TestPutTwinWritesItsSource: a put changes the bytes of its own source.
func TestPutTwinWritesItsSource(t *testing.T) {
	d := twin(t, "put_never_writes_its_sources", &plain{})
	r := region(2)
	row := driver.Row{Key: "k", Spans: []driver.Span{{Region: r, Offset: 0, Length: 2}}}
	put(t, d, []driver.Row{row})
	assert.NotEqual(t, []byte{0, 0}, r.Mem, "the put must have written its source")
}

// TestStatusTwinsReportOneStatusAsAnother: each twin that misreports a
// status answers its replacement for each row the store answered with it,
// and passes every other row's result on.
func TestStatusTwinsReportOneStatusAsAnother(t *testing.T) {
	for _, c := range []struct {
		check    string
		from, to driver.Status
	}{
		{"a_key_another_client_is_writing_is_NOT_READY", driver.NotReady, driver.Miss},
		{"a_full_store_declines", driver.Declined, driver.Fault},
		{"a_failing_read_is_a_row_fault", driver.Fault, driver.Miss},
	} {
		t.Run(c.check, func(t *testing.T) {
			from := driver.Result{Status: c.from}
			if c.from == driver.Fault {
				from = driver.FaultResult(5, "read failed")
			}
			p := &plain{answers: [][]driver.Result{{from, {Status: driver.Ready}}}}
			d := twin(t, c.check, p)
			r := region(2)
			rows := []driver.Row{{Key: "a", Spans: []driver.Span{r.Slot(0)}}, {Key: "b", Spans: []driver.Span{r.Slot(1)}}}
			res := get(t, d, rows)
			assert.Equal(t, c.to, res[0].Status, "the row the store answered %v", c.from)
			assert.Equal(t, driver.Ready, res[1].Status, "the row the store answered READY")
		})
	}
}

// TestMarkerTwinLeavesAFailedPutsKeyNotReady: after a put of a key the
// store DECLINED (or FAULTed), a get of that key answers NOT_READY where
// the store answered MISS; a key no put failed keeps its answer.
func TestMarkerTwinLeavesAFailedPutsKeyNotReady(t *testing.T) {
	for _, failed := range []driver.Result{{Status: driver.Declined}, driver.FaultResult(1, "disk")} {
		t.Run(failed.Status.String(), func(t *testing.T) {
			miss := driver.Result{Status: driver.Miss}
			p := &plain{answers: [][]driver.Result{{failed, {Status: driver.Ready}}, {miss, miss}}}
			d := twin(t, "a_declined_put_leaves_the_key_writable", p)
			r := region(2)
			rows := []driver.Row{{Key: "failed", Spans: []driver.Span{r.Slot(0)}}, {Key: "stored", Spans: []driver.Span{r.Slot(1)}}}
			put(t, d, rows)
			res := get(t, d, rows)
			assert.Equal(t, driver.NotReady, res[0].Status, "a get of the key whose put failed")
			assert.Equal(t, driver.Miss, res[1].Status, "a get of the key whose put was READY")
		})
	}
}

// TestPutIfAbsentTwinAnswersAStoredKeyWithoutStoring: a second put of a
// key the store took READY answers READY without reaching the store.
func TestPutIfAbsentTwinAnswersAStoredKeyWithoutStoring(t *testing.T) {
	p := &plain{}
	d := twin(t, "a_READY_put_over_another_length_stored_the_new_bytes", p)
	r := region(2)
	first := []driver.Row{{Key: "k", Spans: []driver.Span{r.Slot(0)}}}
	again := []driver.Row{{Key: "k", Spans: []driver.Span{{Region: r, Offset: 0, Length: 2}}}}
	put(t, d, first)
	res := put(t, d, again)
	assert.Equal(t, driver.Ready, res[0].Status)
	assert.Equal(t, [][]string{{"k"}}, p.puts, "the second put must not reach the store")
}

// TestTenantlessTwinStoresTenantsRowsOfOneNameAsOne: puts and gets of two
// tenants' rows of one name reach the store under one key.
func TestTenantlessTwinStoresTenantsRowsOfOneNameAsOne(t *testing.T) {
	p := &plain{}
	f, ok := HostileTwin("nested_prefix_tenants_never_read_each_others_rows")
	require.True(t, ok)
	d := f(p)
	r := region(2)
	rows := func(key string) []driver.Row { return []driver.Row{{Key: key, Spans: []driver.Span{r.Slot(0)}}} }
	put(t, d, rows("a/v1/name"))
	get(t, d, rows("a/b/v1/name"))
	require.Len(t, p.puts, 1)
	require.Len(t, p.gets, 1)
	assert.Equal(t, p.puts[0], p.gets[0], "two tenants' keys of one name must reach the store as one key")
}

// TestPoisoningTwinFaultsEveryLaterPutOfAFailedKey: after a put of a key
// the store DECLINED (or FAULTed), every later put of that key answers
// FAULT where the store answered READY; a key whose put was READY keeps
// its answer.
func TestPoisoningTwinFaultsEveryLaterPutOfAFailedKey(t *testing.T) {
	for _, failed := range []driver.Result{{Status: driver.Declined}, driver.FaultResult(1, "disk")} {
		t.Run(failed.Status.String(), func(t *testing.T) {
			p := &plain{answers: [][]driver.Result{{failed, {Status: driver.Ready}}}}
			d := twin(t, "a_faulted_put_leaves_the_key_writable", p)
			r := region(2)
			rows := []driver.Row{{Key: "failed", Spans: []driver.Span{r.Slot(0)}}, {Key: "stored", Spans: []driver.Span{r.Slot(1)}}}
			put(t, d, rows)
			for range 2 {
				res := put(t, d, rows)
				assert.Equal(t, driver.Fault, res[0].Status, "a put of the key whose put failed")
				assert.Equal(t, driver.Ready, res[1].Status, "a put of the key whose put was READY")
			}
		})
	}
}

// TestUnregisterTwinsLieAboutARefusal: each twin that lies about a
// refused Unregister answers nil where the store refused, in exactly the
// state its rule names (an operation open, or one unprovable), and passes
// the refusal on in the other.
func TestUnregisterTwinsLieAboutARefusal(t *testing.T) {
	refused := errors.New("refused: an operation may touch the region")
	for _, c := range []struct {
		check      string
		unprovable bool // the state the twin lies in
	}{
		{"unregister_is_refused_while_an_operation_may_touch_the_region", false},
		{"unregister_is_refused_while_a_call_is_in_progress", false},
		{"an_unprovable_operation_keeps_its_region_registered", true},
	} {
		for _, unprovable := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/unprovable=%v", c.check, unprovable), func(t *testing.T) {
				p := &plain{open: true, unprovable: unprovable, refuse: refused}
				d := twin(t, c.check, p)
				r := region(1)
				get(t, d, []driver.Row{{Key: "k", Spans: []driver.Span{r.Slot(0)}}})
				reg, err := d.Register(r)
				require.NoError(t, err)
				if err := d.Unregister(reg); unprovable == c.unprovable {
					assert.NoError(t, err, "the twin must lie")
				} else {
					assert.ErrorIs(t, err, refused, "the twin must pass the refusal on")
				}
			})
		}
	}
}

// TestFirstRegionTwinPinsOnlyTheFirstRowsRegion: with an operation open
// over two regions, the twin passes on the store's refusal to unregister
// the first row's region and lies (nil) for the second row's; an open
// operation of no rows pins nothing.
func TestFirstRegionTwinPinsOnlyTheFirstRowsRegion(t *testing.T) {
	refused := errors.New("refused: an operation may touch the region")
	p := &plain{open: true, refuse: refused}
	d := twin(t, "unregister_is_refused_for_every_region_of_an_operation", p)
	first, second := region(1), region(1)
	get(t, d, nil)
	get(t, d, []driver.Row{{Key: "a", Spans: []driver.Span{first.Slot(0)}}, {Key: "b", Spans: []driver.Span{second.Slot(0)}}})
	for _, c := range []struct {
		r    *driver.Region
		want error
	}{{first, refused}, {second, nil}} {
		reg, err := d.Register(c.r)
		require.NoError(t, err)
		assert.Equal(t, c.want, d.Unregister(reg))
	}
}

// TestNamesListEveryTwinSorted: Names and HostileNames list every twin,
// sorted, and each name finds its twin.
func TestNamesListEveryTwinSorted(t *testing.T) {
	for _, c := range []struct {
		names []string
		find  func(string) (func(driver.Driver) driver.Driver, bool)
		n     int
	}{
		{Names(), Twin, len(twins)},
		{HostileNames(), HostileTwin, len(hostileTwins)},
	} {
		assert.Len(t, c.names, c.n)
		assert.True(t, sort.StringsAreSorted(c.names), "%q", c.names)
		for _, name := range c.names {
			_, ok := c.find(name)
			assert.True(t, ok, "%q names no twin", name)
		}
	}
}

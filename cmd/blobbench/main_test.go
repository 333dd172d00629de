package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/fs"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
	"github.com/kvblob/kvblob/stores/trailer"
)

// TestMain runs blobbench's main instead of the tests when
// BLOBBENCH_RUN_MAIN=1, so a test can signal a real process.
func TestMain(m *testing.M) {
	if os.Getenv("BLOBBENCH_RUN_MAIN") == "1" {
		main()
		return
	}
	goleak.VerifyTestMain(m)
}

// TestQuickRunWritesEveryOutput runs the bench at tiny sizes: it asserts the
// outputs exist and hang together, never a speed.
func TestQuickRunWritesEveryOutput(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	// -workers gives the worker counts -quick has: they replace the
	// defaults (appended, every count would be measured twice).
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	require.Equal(t, 0, runWithin(t, []string{"-quick", "-no-redis", "-stores", "memory,mooncake-fake,fs", "-workers", "1,2", "-cpuprofile", prof, "-out", dir}, &out, &errb), errb.String())
	f := `\d+\.\d+ \(\d+\.\d+–\d+\.\d+\)`
	// Every ratio at every row size, one line per store.
	sizes := func(extra string, more ...string) string {
		var b strings.Builder
		for _, at := range []string{"64KiB", "1MiB"} {
			fmt.Fprintf(&b, ` publish_vs_memcpy@%s=%s fetch_vs_memcpy@%s=%s`, at, f, at, f)
			if extra != "" {
				fmt.Fprintf(&b, ` publish_vs_%s@%s=%s fetch_vs_%s@%s=%s`, extra, at, f, extra, at, f)
			}
			for _, m := range more {
				fmt.Fprintf(&b, ` %s@%s=%s`, m, at, f)
			}
		}
		return b.String()
	}
	keyed := []string{"publish_keyed_vs_off", "fetch_keyed_vs_off", "publish_keyed_vs_tag_bound", "fetch_keyed_vs_tag_bound", "tag_bound_gb_s", "tag_only_gb_s"}
	assert.Regexp(t, regexp.MustCompile(`(?m)^ratios\[memory\]: workers=2`+sizes("", keyed...)+` fetch_p99_loaded_vs_idle=`+f+` publish_loaded_vs_alone=`+f+` row_ops_per_s=\d+ \(\d+–\d+\) row_ops_vs_memcpy=`+f+
		` row_op_cost_max_vs_min_over_attempts=`+f+` over_batches_per_view=`+f+`$`), out.String())
	assert.Contains(t, out.String(), "cost per row-op as work grows", "the table prints the sizes")
	assert.Contains(t, out.String(), "two goroutine hand-offs alone", "and the floor under one batch")
	assert.Regexp(t, regexp.MustCompile(`(?m)^ratios\[mooncake-fake\]: workers=2`+sizes("", append([]string{"publish_unkeyed_vs_off", "fetch_unkeyed_vs_off"}, keyed...)...)+` fetch_p99_loaded_vs_idle=`+f+` publish_loaded_vs_alone=`+f+`$`), out.String())
	assert.Regexp(t, regexp.MustCompile(`(?m)^ratios\[fs\]: workers=2`+sizes("posix", append(append([]string{"fetch_vs_posix_checked"}, keyed...), "posix_publish_vs_tag_bound", "posix_fetch_vs_tag_bound")...)+` fetch_p99_loaded_vs_idle=`+f+` publish_loaded_vs_alone=`+f+`$`), out.String(),
		"fs against a durable write and a pread of its own, and that pread with the CRC32 a raw client must check")
	assert.Contains(t, errb.String(), "blobbench: memory", "progress goes to stderr")
	b, err := os.ReadFile(filepath.Join(dir, "blobbench.json"))
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(b, &rep))
	assert.Len(t, rep.Bandwidth, 3*2*2, "three stores x two row sizes x two worker counts")
	ways := map[string][]string{"memory": {"off", "keyed"}, "mooncake-fake": {"off", "unkeyed", "keyed"}, "fs": {"off", "keyed"}}
	for _, b := range rep.Bandwidth {
		var got []string
		for _, c := range b.BusyCores {
			got = append(got, c.Way)
			assert.GreaterOrEqual(t, min(c.Publish, c.Fetch), 0.0, "%s %s", b.Store, c.Way)
		}
		assert.Equal(t, ways[b.Store], got, "%s: the busy cores of every way it measured", b.Store)
	}
	// -cpuprofile: a gzipped pprof profile of the run.
	pb, err := os.ReadFile(prof)
	require.NoError(t, err)
	require.Greater(t, len(pb), 2, "-cpuprofile wrote an empty file")
	assert.Equal(t, []byte{0x1f, 0x8b}, pb[:2], "-cpuprofile wrote a gzipped profile")
	assert.Len(t, rep.Latency, 3)
	for _, b := range rep.Bandwidth {
		if b.RowBytes == 64<<10 {
			assert.Greater(t, b.BatchesPerView, 1, "a view is many driver calls")
		}
	}
	assert.Len(t, rep.Ratios, 3)
	for _, b := range rep.Bandwidth {
		if b.Store == "fs" {
			// -quick: views of 4 MiB cut at 1 MiB.
			perCall := int(max(1, min(256, (1<<20)/b.RowBytes)))
			pub, fetch := reached(fs.DefaultRowsInFlight, perCall, int(max(1, (4<<20)/b.RowBytes)), b.Workers)
			assert.Equal(t, [2]int{pub, fetch}, [2]int{b.PublishConcurrency, b.Concurrency}, "fs's own client runs at the driver's concurrency")
		}
	}
	assert.Len(t, rep.Scaling.Attempts, 3, "16, 256 and 4,096 attempts outstanding")
	assert.Len(t, rep.Scaling.Batches, 4, "1, 16, 256 and 1,024 batches per view")
	assert.Positive(t, rep.Scaling.HandoffNs.Median)
	for _, pt := range append(rep.Scaling.Attempts, rep.Scaling.Batches...) {
		assert.Positive(t, pt.NsPerOp.Median, "size %d timed", pt.N)
	}
	svg, err := os.ReadFile(filepath.Join(dir, "bandwidth.svg"))
	require.NoError(t, err)
	assert.Contains(t, string(svg), "<svg")
	assert.Contains(t, string(svg), "mooncake-fake fetch")
}

func TestBadFlags(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"-reps", "0"}, "must be positive"},
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"-stores", "memory,nosuch"}, `unknown store "nosuch"; want one of memory, mooncake-fake, fs, s3, redis`},
		{[]string{"-row-kib", "x"}, `-row-kib: "x" is not a size in KiB`},
		{[]string{"-rows", "1024"}, `-rows was renamed -row-kib (comma-separated row sizes in KiB`},
		{[]string{"-quick", "--rows=256"}, `-rows was renamed -row-kib`},
		{[]string{"-fs-dir", "no/such/folder"}, `-fs-dir no/such/folder is not a folder that exists`},
		{[]string{"-quick", "-no-redis", "-stores", "memory", "-cpuprofile", "no/such/folder/cpu.prof", "-out", t.TempDir()}, `no/such/folder/cpu.prof`},
	}
	if len(extraStores) == 0 {
		cases = append(cases, struct {
			args []string
			want string
		}{[]string{"-stores", "mooncake-real"}, "needs a blobbench built with -tags mooncake"})
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		assert.Equal(t, 2, runWithin(t, c.args, &out, &errb), "%v", c.args)
		assert.Contains(t, errb.String(), c.want, "%v", c.args)
	}
}

// TestChartDrawsOnlyItsStores: a store the chart has no series for (the
// real Mooncake SDK, Redis on Valkey) stays in the tables and out of the
// chart, and never takes another store's series.
func TestChartDrawsOnlyItsStores(t *testing.T) {
	rep := &report{Bandwidth: []bandwidth{
		{Store: "memory", RowBytes: 1 << 20, Workers: 2, PublishGBs: 5, FetchGBs: 6, MemcpyGBs: 10},
		{Store: "redis-valkey-8.1", RowBytes: 1 << 20, Workers: 2, PublishGBs: 0.5, FetchGBs: 0.25, MemcpyGBs: 10},
	}}
	svg := string(chart(rep))
	assert.NotContains(t, svg, "valkey")
	assert.Contains(t, svg, "memory publish")
	assert.Equal(t, string(chart(&report{Bandwidth: rep.Bandwidth[:1]})), svg, "the Valkey row changed the chart")
}

// A store's own client runs at the concurrency the driver reaches: no more
// rows in flight than a call holds, a publish on the publishing workers
// only, and no more workers than the view has calls. (Tried: reached
// ignoring the view's calls fails the one-call cases.)
func TestTheOwnClientRunsAtTheConcurrencyTheDriverReaches(t *testing.T) {
	for _, c := range []struct {
		name                                 string
		rowsInFlight, perCall, rows, workers int
		pub, fetch                           int
	}{
		{"a call of one row is one request whatever RowsInFlight says", 8, 1, 64, 2, backend.PublishWorkers(2), 2},
		{"RowsInFlight caps a call of many rows", 4, 16, 64, 2, backend.PublishWorkers(2) * 4, 8},
		{"a call holds fewer rows than RowsInFlight", 8, 4, 64, 2, backend.PublishWorkers(2) * 4, 8},
		{"a store that sends a call's rows one after another", 0, 16, 64, 4, backend.PublishWorkers(4), 4},
		{"a view of one call is one worker's", 8, 64, 64, 2, 8, 8},
		{"a view of two calls keeps two fetching workers", 8, 32, 64, 4, min(backend.PublishWorkers(4), 2) * 8, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, f := reached(c.rowsInFlight, c.perCall, c.rows, c.workers)
			assert.Equal(t, c.pub, p, "publish")
			assert.Equal(t, c.fetch, f, "fetch")
		})
	}
}

// TestAStoresClientRunsAtTheParallelismOfTheWorkItMatches: a store's own
// client puts at the publish's parallelism (backend.PublishWorkers of the
// workers, times the rows a call sends at once) and gets at the fetch's,
// so each ratio compares like with like; a store with a session path
// gets its publish_vs_<session> ratio at every size, one with a
// checked get its fetch_vs_<checked>, and one with the row key its
// client's time over the integrity code's pass (<client>_publish_vs_tag_bound).
func TestAStoresClientRunsAtTheParallelismOfTheWorkItMatches(t *testing.T) {
	for _, c := range []struct {
		workers, rowsInFlight, wantGet int
	}{
		{1, 0, 1},
		{2, 0, 2},
		{4, 0, 4},
		{2, 4, 8},
	} {
		// One worker is kept for fetches, and on this machine publishers
		// leave a CPU to them.
		wantPut := backend.PublishWorkers(c.workers) * max(1, c.rowsInFlight)
		s := memoryStore()
		var puts, gets []int
		s.plainName, s.sessionName, s.checkedName, s.rowsInFlight = "own", "own_session", "own_checked", c.rowsInFlight
		s.plain = func(_ driver.Driver, w plainWork) (plainTimes, error) {
			puts, gets = append(puts, w.putConc), append(gets, w.getConc)
			return plainTimes{put: time.Millisecond, get: time.Millisecond, session: 2 * time.Millisecond, checked: 3 * time.Millisecond}, nil
		}
		p := plan{reps: 2, viewBytes: 1 << 20, bytesPerCall: 256 << 10, rowsPerCall: 256}
		b, err := measureBandwidth(s, p, 64<<10, 16, c.workers)
		require.NoError(t, err)
		assert.Equal(t, []int{wantPut, wantPut, wantPut}, puts, "puts, %+v", c)
		assert.Equal(t, []int{c.wantGet, c.wantGet, c.wantGet}, gets, "gets, %+v", c)
		require.NotNil(t, b.PublishVsSession, "%+v", c)
		require.NotNil(t, b.FetchVsChecked, "%+v", c)
		require.NotNil(t, b.PlainPublishVsTagBound, "%+v", c)
		require.NotNil(t, b.PlainFetchVsTagBound, "%+v", c)
		var out bytes.Buffer
		printRatios(&out, ratios{Store: "x", PlainName: s.plainName, SessionName: s.sessionName, CheckedName: s.checkedName, Workers: c.workers,
			Sizes: []sizeRatios{{RowBytes: 64 << 10, PublishVsPlain: b.PublishVsPipeline, FetchVsPlain: b.FetchVsPipeline, PublishVsSession: b.PublishVsSession, FetchVsChecked: b.FetchVsChecked,
				integrityRatios: b.integrityRatios}}})
		assert.Contains(t, out.String(), " own_publish_vs_tag_bound@64KiB="+b.PlainPublishVsTagBound.String())
		assert.Contains(t, out.String(), " own_fetch_vs_tag_bound@64KiB="+b.PlainFetchVsTagBound.String())
		assert.Contains(t, out.String(), " publish_vs_own@64KiB=")
		assert.Contains(t, out.String(), " publish_vs_own_session@64KiB="+b.PublishVsSession.String())
		assert.Contains(t, out.String(), " fetch_vs_own_checked@64KiB="+b.FetchVsChecked.String())
	}
}

// The store's own client makes calls of as many keys as the backend put in
// each of the driver's calls, whichever bound cut them (rows, bytes, the
// store's own batching or the flags that override it), and gets the rig's
// registered slots: src holding the published rows, dst the fetched ones.
func TestTheOwnClientCutsItsCallsAsTheBackendCutTheDrivers(t *testing.T) {
	const rowBytes, rows = 64 << 10, 16
	for _, c := range []struct {
		name                   string
		p                      plan
		storeRows              int
		storeBytes             int64
		wantPerCall, wantCalls int
		fromSlots              bool // the baseline moves the slots and gets no objects
	}{
		{"the plan's bytes", plan{bytesPerCall: 256 << 10, rowsPerCall: 256}, 0, 0, 4, 4, false},
		{"the plan's rows", plan{bytesPerCall: 1 << 20, rowsPerCall: 2}, 0, 0, 2, 8, false},
		{"the store's own bytes", plan{bytesPerCall: 256 << 10, rowsPerCall: 256}, 0, 128 << 10, 2, 8, false},
		{"the store's own rows", plan{bytesPerCall: 1 << 20, rowsPerCall: 256}, 8, 0, 8, 2, false},
		{"-bytes-per-call overrides the store's", plan{bytesPerCall: 512 << 10, rowsPerCall: 256, bytesPerCallSet: true}, 0, 128 << 10, 8, 2, false},
		{"-rows-per-call overrides the store's", plan{bytesPerCall: 1 << 20, rowsPerCall: 4, rowsPerCallSet: true}, 1, 0, 4, 4, false},
		{"a view of fewer rows than a call holds is one call", plan{bytesPerCall: 4 << 20, rowsPerCall: 256}, 0, 0, 16, 1, false},
		{"a baseline from the slots", plan{bytesPerCall: 256 << 10, rowsPerCall: 256}, 0, 0, 4, 4, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.p.reps = 2
			s := memoryStore()
			s.plainName, s.rowsPerCall, s.bytesPerCall, s.plainFromSlots = "own", c.storeRows, c.storeBytes, c.fromSlots
			var works []plainWork
			s.plain = func(_ driver.Driver, w plainWork) (plainTimes, error) {
				require.Len(t, w.src, rows*rowBytes)
				require.Len(t, w.dst, rows*rowBytes)
				assert.Equal(t, int64(rowBytes), w.rowBytes)
				assert.Equal(t, w.src[:rowBytes], w.dst[:rowBytes], "dst holds what the fetch read back")
				if c.fromSlots {
					assert.Nil(t, w.objs)
				} else {
					require.Len(t, w.objs, rows)
					assert.Equal(t, plainObject(nil, w.keys[1], w.src[rowBytes:2*rowBytes]), w.objs[1], "each key's own object")
				}
				works = append(works, w)
				return plainTimes{put: time.Millisecond, get: time.Millisecond}, nil
			}
			b, err := measureBandwidth(s, c.p, rowBytes, rows, 2)
			require.NoError(t, err)
			assert.Equal(t, c.wantCalls, b.BatchesPerView, "the driver's calls per view")
			assert.Equal(t, c.wantPerCall, b.RowsPerCall)
			require.Len(t, works, c.p.reps+1)
			for _, w := range works {
				assert.Equal(t, c.wantPerCall, w.perCall, "the own client's keys per call")
			}
		})
	}
}

// TestPublishesElsewhereGoToTheSecondDeployment: with
// -latency-publish-elsewhere the latency phase's publish streams go to
// the store's second deployment and never to the one the fetches read
// (each stream deletes what it published from the store it published
// to); without it, to the same one; a store with no second deployment is
// refused, saying so.
func TestPublishesElsewhereGoToTheSecondDeployment(t *testing.T) {
	for _, c := range []struct {
		name                string
		elsewhere, hasTwin  bool
		here, there, refuse bool
	}{
		{"by default the streams publish to the store the fetches read", false, true, true, false, false},
		{"with the flag they publish to the second deployment only", true, true, false, true, false},
		{"a store with no second deployment is refused", true, false, false, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var here, there atomic.Int32
			counted := func(n *atomic.Int32) store {
				s := memoryStore()
				forget := s.forget
				s.forget = func(d driver.Driver, keys []string) { n.Add(1); forget(d, keys) }
				return s
			}
			s := counted(&here)
			if c.hasTwin {
				s.elsewhere = func() (store, error) { return counted(&there), nil }
			}
			p := plan{reps: 1, bytesPerCall: 4 << 20, rowsPerCall: 256, latencyFetches: 20, latencyBudget: time.Minute, latencyRows: 1, latencyElsewhere: c.elsewhere}
			l, err := measureLatency(s, p, io.Discard)
			if c.refuse {
				require.ErrorContains(t, err, "memory has no second deployment")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.here, here.Load() > 0, "streams published to the fetches' store")
			assert.Equal(t, c.there, there.Load() > 0, "streams published to the second deployment")
			assert.Equal(t, c.elsewhere, l.PublishesElsewhere)
		})
	}
}

// TestEachWayWritesTheRowsItNames: in a bandwidth rep, the rig of the
// row key on stores rows tagged under the bench's row key, the unkeyed
// way (Mooncake) rows with the unkeyed trailer, and integrity off rows
// that no reader with the key takes (tried: a keyed rig made with the
// store's own make fails the first assertion).
func TestEachWayWritesTheRowsItNames(t *testing.T) {
	const rowBytes = 64 << 10
	p := plan{rowsPerCall: 4, bytesPerCall: 1 << 20}
	fsS, err := fsStore()
	require.NoError(t, err)
	defer fsS.stop()
	for _, s := range []store{memoryStore(), mooncakeStore(), fsS} {
		t.Run(s.name, func(t *testing.T) {
			modes, err := newModeRigs(s, p, rowBytes, 2, 2)
			require.NoError(t, err)
			off, err := newRig(s, p, rowBytes, 2, 2)
			require.NoError(t, err)
			rigs := map[string]*rig{"off": off}
			for _, m := range modes {
				rigs[m.name] = m.r
			}
			for name, r := range rigs {
				src, _ := r.views(0, 1)
				require.NoError(t, r.finish(r.be.Publish(context.Background(), src)), name)
				obj := objectOf(t, s.name, r, r.keys(src)[0])
				_, keyedErr := rowKey.Check(obj, r.keys(src)[0])
				switch name {
				case "keyed":
					assert.NoError(t, keyedErr, "the keyed way's row verifies under the row key")
				case "unkeyed":
					_, err := trailer.Check(obj, r.keys(src)[0])
					assert.NoError(t, err, "the unkeyed way's row has the trailer")
					assert.ErrorIs(t, keyedErr, trailer.ErrUnverified)
				default:
					assert.Error(t, keyedErr, "integrity off's row is not tagged")
				}
				require.NoError(t, r.close())
			}
			assert.Equal(t, s.name == "mooncake-fake", rigs["unkeyed"] != nil, "only Mooncake has an unkeyed way apart from off")
			assert.NotNil(t, rigs["keyed"], "every store here takes a row key")
		})
	}
}

// objectOf is the bytes the store holds for key: its whole object.
func objectOf(t *testing.T, store string, r *rig, key string) []byte {
	t.Helper()
	switch store {
	case "memory":
		obj, ok := r.d.(*memory.Driver).Store().Object(key)
		require.True(t, ok)
		return obj
	case "mooncake-fake":
		obj, ok := r.d.(*mooncake.Driver).SDK().(*fakesdk.Client).Master().Object(key)
		require.True(t, ok)
		return obj
	}
	file, _, _ := r.d.(*fs.Driver).Paths(key)
	obj, err := os.ReadFile(file)
	require.NoError(t, err)
	return obj
}

// TestTheFsStoreIsMadeInTheFolderFsDirNames: -fs-dir puts the fs store's
// directory in the folder it names (a tmpfs, say), and the store's stop
// removes that directory.
func TestTheFsStoreIsMadeInTheFolderFsDirNames(t *testing.T) {
	parent := t.TempDir()
	fsDirFlag = parent
	defer func() { fsDirFlag = "" }()
	s, err := fsStore()
	require.NoError(t, err)
	d, err := s.make()
	require.NoError(t, err)
	file, _, err := d.(*fs.Driver).Paths("a/" + driver.KeyVersion + "/0123")
	require.NoError(t, err)
	require.NoError(t, d.Close())
	assert.True(t, strings.HasPrefix(file, parent+string(filepath.Separator)), "the store's file %s is not under -fs-dir %s", file, parent)
	s.stop()
	left, err := os.ReadDir(parent)
	require.NoError(t, err)
	assert.Empty(t, left, "the store's stop left its directory in -fs-dir")
}

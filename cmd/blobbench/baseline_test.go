package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/trailer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheBaselinesShareTheRowsTheSameWay: share cuts the rows into n
// contiguous runs that cover each row once (more goroutines than rows
// included), and parallelCopy, allocCopy and parallelTag, which all run
// on those shares, copy every row. (Tried: a share's hi of
// rows*(g+1)/n-1 fails the cover; parallelCopy stepping by two rows fails
// the copy; so does parallelTag.)
func TestTheBaselinesShareTheRowsTheSameWay(t *testing.T) {
	const rowBytes = 64
	for _, c := range []struct{ rows, n int }{{1, 1}, {7, 2}, {8, 2}, {3, 4}, {16, 3}} {
		t.Run(fmt.Sprintf("%d rows on %d", c.rows, c.n), func(t *testing.T) {
			seen := make([]int, c.rows)
			prev := int64(0)
			for g := 0; g < c.n; g++ {
				lo, hi := share(int64(c.rows), g, c.n)
				require.Equal(t, prev, lo, "share %d does not start where %d ended", g, g-1)
				for k := lo; k < hi; k++ {
					seen[k]++
				}
				prev = hi
			}
			for k, s := range seen {
				assert.Equal(t, 1, s, "row %d taken %d times", k, s)
			}
			src := make([]byte, c.rows*rowBytes)
			for i := range src {
				src[i] = byte(i*7 + 1)
			}
			dst := make([]byte, len(src))
			parallelCopy(dst, src, rowBytes, c.n)
			assert.Equal(t, src, dst, "parallelCopy")
			objs := allocCopy(src, rowBytes, c.n)
			require.Len(t, objs, c.rows)
			assert.Equal(t, src, bytes.Join(objs, nil), "allocCopy")
			for _, pass := range []tagPass{sealCopy, verifyCopy} {
				tagged := make([]byte, len(src))
				parallelTag(rowKey, tagged, src, rowBytes, c.n, pass)
				assert.Equal(t, src, tagged, "parallelTag (pass %d) copies every row", pass)
			}
		})
	}
}

// TestJoinedReadsBothSlicesAsOne reads a joined body whole through a
// SectionReader, in reads of every size that straddle the seam. (Tried:
// dropping b's read fails every size.)
func TestJoinedReadsBothSlicesAsOne(t *testing.T) {
	a, b := []byte("the row's payload"), []byte("+trailer")
	want := append(append([]byte(nil), a...), b...)
	for step := 1; step <= len(want)+1; step++ {
		r := io.NewSectionReader(joined{a, b}, 0, int64(len(want)))
		var got []byte
		buf := make([]byte, step)
		for {
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
		}
		assert.Equal(t, want, got, "reads of %d", step)
	}
}

// TestAPlainWorksRowsAreTheRowsSlots: plainWork.rows cuts the rig's
// memory into one slot per key, each the row's own, in order, none
// another's (tried: every key given the first row's slot fails).
func TestAPlainWorksRowsAreTheRowsSlots(t *testing.T) {
	const rowBytes, rows = 64, 5
	mem := make([]byte, rowBytes*rows)
	for i := range mem {
		mem[i] = byte(i / rowBytes)
	}
	w := plainWork{keys: make([]string, rows), rowBytes: rowBytes}
	got := w.rows(mem)
	require.Len(t, got, rows)
	for k, b := range got {
		require.Len(t, b, rowBytes, "row %d", k)
		assert.Equal(t, bytes.Repeat([]byte{byte(k)}, rowBytes), b, "row %d is not its own slot", k)
	}
}

// TestTheCheckedBaselineRefusesWhatTheDriverRefuses: the fs baseline's
// check (crcChecks) passes an object as the driver stores it and refuses
// one with a byte of its payload flipped anywhere, as the driver's
// fetch does, so posix_checked times the same work. (Tried: crcChecks
// returning nil before it compares passes the flipped payloads.)
func TestTheCheckedBaselineRefusesWhatTheDriverRefuses(t *testing.T) {
	payload := bytes.Repeat([]byte("kv rows "), 512)
	obj := plainObject(nil, "p/v1/00", payload)
	tail := obj[len(payload):]
	require.NoError(t, crcChecks("f", payload, tail))
	for _, at := range []int{0, len(payload) / 2, len(payload) - 1} {
		bad := bytes.Clone(payload)
		bad[at] ^= 0xff
		assert.Error(t, crcChecks("f", bad, tail), "a byte flipped at %d", at)
	}
}

// loggedDriver logs its calls' kinds in order, once per run of the same
// kind, beside the rig's other steps.
type loggedDriver struct {
	driver.Driver
	log *[]string
	mu  *sync.Mutex
	way string // "" for integrity off, else the way's name and a space
}

func (d loggedDriver) note(what string) {
	what = d.way + what
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := len(*d.log); n == 0 || (*d.log)[n-1] != what {
		*d.log = append(*d.log, what)
	}
}

func (d loggedDriver) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	d.note("publish")
	return d.Driver.Put(ctx, rows)
}

func (d loggedDriver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	d.note("fetch")
	return d.Driver.Get(ctx, rows, hint)
}

// logged is s with its drivers wrapped in loggedDriver, logging into log
// under mu; its forget unwraps them.
func logged(s store, log *[]string, mu *sync.Mutex) store {
	mk, forget := s.make, s.forget
	s.make = func() (driver.Driver, error) {
		d, err := mk()
		return loggedDriver{Driver: d, log: log, mu: mu}, err
	}
	if keyed := s.keyed; keyed != nil {
		s.keyed = func(in *trailer.Integrity) (driver.Driver, error) {
			d, err := keyed(in)
			return loggedDriver{Driver: d, log: log, mu: mu, way: "keyed "}, err
		}
	}
	s.forget = func(d driver.Driver, keys []string) { forget(d.(loggedDriver).Driver, keys) }
	return s
}

// TestEveryTimedStepOfABandwidthRepStartsWithColdCaches: the store's
// publish, its fetch and each memcpy (the fetch's at the workers, the
// publish's at backend.PublishWorkers of them when that differs) each
// follow a coldCaches of their own, in every rep, the warm-up's included;
// so does each of fs's raw client's timed steps: its put (after the one
// measureBandwidth makes before a store's own client), its read and its
// checked read (two inside its plain), in each of fs's three rounds,
// which alternate which side goes first; so does each of the row key's
// publish and fetch, in as many rounds, and each of the integrity code's
// passes. (Tried: dropping the coldCaches
// before the publish's memcpy fails the two-worker sequence; dropping the
// one before the fetch fails both; dropping the one before fs's raw
// checked read fails fs's; dropping fs's rounds fails fs's.)
func TestEveryTimedStepOfABandwidthRepStartsWithColdCaches(t *testing.T) {
	var log []string
	var mu sync.Mutex
	note := func(what string) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, what)
	}
	saved := coldCaches
	t.Cleanup(func() { coldCaches = saved })
	coldCaches = func() byte {
		note("cold")
		return 0
	}
	fsStore := func() store {
		s, err := fsStore()
		require.NoError(t, err)
		t.Cleanup(s.stop)
		return s
	}
	for _, tc := range []struct {
		name   string
		s      func() store
		raw    []string // the store's own client's steps, the cold before it included (none: no client)
		rounds int      // of the driver's steps and the client's, alternating, a rep runs
	}{
		{"memory", memoryStore, nil, 1},
		{"fs", fsStore, []string{"cold", "raw", "cold", "cold", "raw end"}, shortStepRounds},
	} {
		for _, workers := range []int{1, 2} {
			log = nil
			s := logged(tc.s(), &log, &mu)
			plain := s.plain
			if plain != nil {
				s.plain = func(d driver.Driver, w plainWork) (plainTimes, error) {
					note("raw")
					defer note("raw end")
					return plain(d.(loggedDriver).Driver, w)
				}
			}
			p := plan{reps: 2, viewBytes: 1 << 20, bytesPerCall: 256 << 10, rowsPerCall: 256}
			_, err := measureBandwidth(s, p, 64<<10, 16, workers)
			require.NoError(t, err)
			var want []string
			for i := range p.reps + 1 {
				store := []string{"cold", "publish", "cold", "fetch"}
				for k := range tc.rounds {
					if tc.raw != nil && plainFirst(i, k) {
						want = append(append(want, tc.raw...), store...)
					} else {
						want = append(append(want, store...), tc.raw...)
					}
				}
				for range tc.rounds { // the row key on, its own rounds
					want = append(want, "cold", "keyed publish", "cold", "keyed fetch")
				}
				want = append(want, "cold", "cold", "cold") // the integrity code's passes: a reader's, a writer's, the tag alone
				want = append(want, "cold")                 // the fetch's memcpy
				if backend.PublishWorkers(workers) != workers {
					want = append(want, "cold") // the publish's
				}
			}
			assert.Equal(t, want, log, "%s, %d workers", tc.name, workers)
		}
	}
}

// TestRoundsAlternateWhichSideGoesFirst: a rep runs the store's rounds of
// the driver's steps and its own client's, the client first in every
// other round, one round later in every other rep, so each side goes
// first as often; every timed step starts with cold caches, the client's
// work included; the memcpys run once a rep, after the rounds.
// (Tried: plainFirst always false fails the order; dropping the
// coldCaches before the client's work fails it too.)
func TestRoundsAlternateWhichSideGoesFirst(t *testing.T) {
	var log []string
	var mu sync.Mutex
	saved := coldCaches
	t.Cleanup(func() { coldCaches = saved })
	coldCaches = func() byte {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, "cold")
		return 0
	}
	s := logged(memoryStore(), &log, &mu)
	s.keyed = nil // the row key's rounds are TestEveryTimedStepOfABandwidthRepStartsWithColdCaches's
	s.plainName, s.rounds = "own", 2
	s.plain = func(driver.Driver, plainWork) (plainTimes, error) {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, "own")
		return plainTimes{put: time.Millisecond, get: time.Millisecond}, nil
	}
	p := plan{reps: 2, viewBytes: 1 << 20, bytesPerCall: 256 << 10, rowsPerCall: 256}
	_, err := measureBandwidth(s, p, 64<<10, 16, 1)
	require.NoError(t, err)
	drv := []string{"cold", "publish", "cold", "fetch"}
	own := []string{"cold", "own"}
	memcpy := []string{"cold"} // one worker: the fetch's memcpy is the publish's
	var want []string
	for _, rep := range [][][]string{
		{drv, own, own, drv, memcpy}, // rep 0 (the warm-up): the driver first, then the client
		{own, drv, drv, own, memcpy}, // rep 1: the other way round
		{drv, own, own, drv, memcpy},
	} {
		for _, part := range rep {
			want = append(want, part...)
		}
	}
	assert.Equal(t, want, log)
}

// TestARepTakesEachSidesFastestRound: with rounds, each side's figure in
// a rep is its fastest round, the driver's and its client's apart, so a
// round that lost the machine to another process counts on neither side.
// (Tried: taking the first round's instead fails it.)
func TestARepTakesEachSidesFastestRound(t *testing.T) {
	s := memoryStore()
	s.plainName, s.rounds = "own", 3
	calls := 0
	// The client's rounds take 30, 10 and 20 ms putting and 5, 15 and 25
	// getting, in every rep: its fastest put is 10 ms, its fastest get 5.
	s.plain = func(driver.Driver, plainWork) (plainTimes, error) {
		k := calls % 3
		calls++
		return plainTimes{put: []time.Duration{30, 10, 20}[k] * time.Millisecond, get: []time.Duration{5, 15, 25}[k] * time.Millisecond}, nil
	}
	var steps bytes.Buffer
	p := plan{reps: 2, viewBytes: 1 << 20, bytesPerCall: 256 << 10, rowsPerCall: 256, steps: &steps}
	b, err := measureBandwidth(s, p, 64<<10, 16, 2)
	require.NoError(t, err)
	assert.Equal(t, 9, calls, "three rounds in each of the three reps")
	// The driver's steps' fastest, read back from -steps' lines.
	var pubs, gets []float64
	for _, line := range strings.Split(strings.TrimSpace(steps.String()), "\n")[1:] { // rep 0 is the warm-up
		var pub, get []float64
		for _, round := range strings.Split(line, "[")[1:] {
			var pb, gt, put, gt2 float64
			_, err := fmt.Sscanf(round, "publish %g fetch %g own put %g get %g]", &pb, &gt, &put, &gt2)
			require.NoError(t, err, round)
			pub, get = append(pub, pb), append(get, gt)
		}
		require.Len(t, pub, 3, line)
		pubs, gets = append(pubs, slices.Min(pub)), append(gets, slices.Min(get))
	}
	// Each rep's ratio is the client's fastest over the driver's fastest
	// (to the microsecond the lines print).
	for _, c := range []struct {
		name string
		got  spread
		own  float64
		drv  []float64
	}{
		{"publish", *b.PublishVsPipeline, 10, pubs},
		{"fetch", *b.FetchVsPipeline, 5, gets},
	} {
		lo, hi := c.own/slices.Max(c.drv), c.own/slices.Min(c.drv)
		assert.InEpsilon(t, lo, c.got.Min, 0.05, c.name)
		assert.InEpsilon(t, hi, c.got.Max, 0.05, c.name)
	}
}

// TestTheHeapGoesBackToTheSystemOnlyAfterTheStoresLastStep: coldHeap (for
// the allocate-then-copy) runs once per rep, warm-up included, and only
// after the store's last publish and fetch, so that no step of the
// store's starts from a heap given back to the system, with the row key
// on or off. (Tried: coldHeap
// and the allocate-then-copy back inside each rep, after the memcpy, as
// before: the log interleaves heap with publish and fetch, and the test
// fails.)
func TestTheHeapGoesBackToTheSystemOnlyAfterTheStoresLastStep(t *testing.T) {
	var log []string
	var mu sync.Mutex
	saved := coldHeap
	t.Cleanup(func() { coldHeap = saved })
	coldHeap = func() {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, "heap")
	}
	s := logged(memoryStore(), &log, &mu)
	p := plan{reps: 2, viewBytes: 1 << 20, bytesPerCall: 256 << 10, rowsPerCall: 256}
	_, err := measureBandwidth(s, p, 64<<10, 16, 2)
	require.NoError(t, err)
	var want []string
	for range p.reps + 1 {
		want = append(want, "publish", "fetch", "keyed publish", "keyed fetch")
	}
	for range p.reps + 1 {
		want = append(want, "heap")
	}
	assert.Equal(t, want, log)
}

package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kvblob/kvblob/internal/scalebench"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
	"github.com/kvblob/kvblob/stores/trailer"
)

type plan struct {
	reps         int
	viewBytes    int64
	bytesPerCall int64
	rowsPerCall  int
	// bytesPerCallSet and rowsPerCallSet: the flags were given, and
	// override a store's own batching (plan.batching).
	bytesPerCallSet, rowsPerCallSet bool
	rowSizes                        []int64
	workers                         []int
	latencyFetches                  int           // samples per latency phase
	latencyBudget                   time.Duration // a phase's time, past minLatencySamples
	// latencyGap spaces a phase's fetches: the i-th starts no earlier
	// than i gaps after the first (0: back to back). A fixed fetch load
	// compares what it costs the publishes on two drivers whose fetches
	// take different times.
	latencyGap time.Duration
	// latencyElsewhere sends the latency phase's publish streams to a
	// second deployment of the store (store.elsewhere), so that its
	// fetches share only the machine with them, not the server: a
	// control for how much of the tail is the machine's.
	latencyElsewhere bool
	latencyRows      int
	rowOpsRows       int // rows of a view in the end-to-end row-ops measurement
	rowOpsViews      int // round trips of such a view per rep, so a rep lasts long enough to be steady
	scalingOps       int // row-ops per size per rep in the cost-as-work-grows measurement
	redis            bool
	stores           []string     // nil: all
	target           *redisTarget // a Redis deployment the user runs, instead of one started here
	// steps, when set, gets every timed step of every bandwidth rep
	// (-steps): which side moved when a ratio did.
	steps io.Writer
}

type report struct {
	Plan      planJSON    `json:"plan"`
	Bandwidth []bandwidth `json:"bandwidth"`
	Latency   []latency   `json:"latency"`
	RowOps    rowOps      `json:"row_ops"`
	Scaling   scaling     `json:"scaling"`
	Ratios    []ratios    `json:"ratios"`
	Skipped   []string    `json:"skipped,omitempty"`
}

type planJSON struct {
	Reps         int   `json:"reps"`
	ViewBytes    int64 `json:"view_bytes"`
	BytesPerCall int64 `json:"bytes_per_call"`
	RowsPerCall  int   `json:"rows_per_call"`
	GOMAXPROCS   int   `json:"gomaxprocs"`
	// LoadAvg is /proc/loadavg's first three figures when the run began:
	// the machine is shared, and a reader should know how busy it was.
	LoadAvg string `json:"load_average"`
	// OwnCPUSeconds is the CPU time the run took (its servers' included),
	// and OthersCPUSeconds what every other process took meanwhile (nil:
	// unknown, no /proc/stat): the load average at the start does not say
	// who came later, and a run next to others is not a quiet run.
	OwnCPUSeconds    float64  `json:"own_cpu_seconds"`
	OthersCPUSeconds *float64 `json:"others_cpu_seconds,omitempty"`
}

// loadAvg is /proc/loadavg's 1, 5 and 15 minute averages ("?" where the
// system has none).
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// spread is the median of a figure over the reps, with its range.
type spread struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return spread{Median: s[len(s)/2], Min: s[0], Max: s[len(s)-1]}
}

func (s spread) String() string { return fmt.Sprintf("%.3f (%.3f–%.3f)", s.Median, s.Min, s.Max) }

type bandwidth struct {
	Store    string `json:"store"`
	RowBytes int64  `json:"row_bytes"`
	Workers  int    `json:"workers"`
	// PublishWorkers are the workers that may publish at once
	// (backend.PublishWorkers): the publish's memcpy runs on as many
	// goroutines, the fetch's on Workers.
	PublishWorkers int `json:"publish_workers"`
	// PublishConcurrency and Concurrency are the store calls in flight at
	// once publishing and fetching (reached): the store's own client runs
	// at them.
	PublishConcurrency int `json:"publish_concurrency"`
	Concurrency        int `json:"concurrency"`
	// RowsPerCall is the rows of each driver call (the backend's cut,
	// Backend.BatchSize); the store's own client's calls take as many keys.
	RowsPerCall     int     `json:"rows_per_call"`
	BatchesPerView  int     `json:"batches_per_view"`
	PublishGBs      float64 `json:"publish_gb_s"`
	FetchGBs        float64 `json:"fetch_gb_s"`
	MemcpyGBs       float64 `json:"memcpy_gb_s"`
	AllocCopyGBs    float64 `json:"alloc_copy_gb_s"`
	PublishVsMemcpy spread  `json:"publish_vs_memcpy"`
	FetchVsMemcpy   spread  `json:"fetch_vs_memcpy"`
	// The plain store-client pipeline of the same bytes over the
	// publish's and fetch's times (Redis only).
	PublishVsPipeline *spread `json:"publish_vs_pipeline,omitempty"`
	FetchVsPipeline   *spread `json:"fetch_vs_pipeline,omitempty"`
	// The store's own client putting the same bytes the driver's way
	// (store.sessionName) over the publish's time.
	PublishVsSession *spread `json:"publish_vs_session,omitempty"`
	// The store's own client getting the same bytes and checking them as
	// a raw client must before it trusts a row (store.checkedName) over
	// the fetch's time.
	FetchVsChecked *spread `json:"fetch_vs_checked,omitempty"`
	integrityRatios
	// BusyCores is, for each way of the store measured, how many of the
	// machine's cores were busy while its timed publishes and fetches ran:
	// the machine's busy CPU time (/proc/stat, every process's, the
	// store's servers too) over their wall time, every counted rep
	// together. A way at the machine's core count is bound by CPU, so the
	// CPU time a check adds is added to its wall time however the check is
	// scheduled. /proc/stat counts in 10 ms ticks, so a step's reading is
	// off by up to a tick a core: a figure is good to about 0.02 s a core
	// over its steps' wall time (PublishSeconds, FetchSeconds), useless for
	// a store whose steps take a few milliseconds in all. Absent where
	// /proc/stat is not readable.
	BusyCores []wayCores `json:"busy_cores,omitempty"`
}

// wayCores is one way's busy cores (bandwidth.BusyCores): "off", and
// "unkeyed" and "keyed" where the store has them.
type wayCores struct {
	Way     string  `json:"way"`
	Publish float64 `json:"publish"`
	Fetch   float64 `json:"fetch"`
	// The wall time of the steps counted, each side.
	PublishSeconds float64 `json:"publish_seconds"`
	FetchSeconds   float64 `json:"fetch_seconds"`
}

// busyTally adds up the machine's busy CPU time and the wall time of a
// way's timed steps.
type busyTally struct {
	ok                                 bool
	pubBusy, pubWall, getBusy, getWall time.Duration
}

// add counts a step that ran from start to now (readCPUClock at each)
// for wall; a step either reading lacks is not counted.
func (b *busyTally) add(start, now cpuClock, wall time.Duration, fetch bool) {
	if !start.ok || !now.ok {
		return
	}
	b.ok = true
	if fetch {
		b.getBusy, b.getWall = b.getBusy+now.busy-start.busy, b.getWall+wall
	} else {
		b.pubBusy, b.pubWall = b.pubBusy+now.busy-start.busy, b.pubWall+wall
	}
}

// cores is the tally as way's wayCores, and false when nothing was counted.
func (b *busyTally) cores(way string) (wayCores, bool) {
	if !b.ok || b.pubWall <= 0 || b.getWall <= 0 {
		return wayCores{}, false
	}
	return wayCores{Way: way, Publish: float64(b.pubBusy) / float64(b.pubWall), Fetch: float64(b.getBusy) / float64(b.getWall),
		PublishSeconds: b.pubWall.Seconds(), FetchSeconds: b.getWall.Seconds()}, true
}

// integrityRatios are what a store's integrity costs, each side by side
// in every rep: its publish and fetch bandwidth with the unkeyed trailer
// (where off writes none: Mooncake) and with the row key on over integrity
// off, and with the row key on over the integrity code's own single pass
// over the same rows at the same parallelism (parallelTag: each row
// copied and, a chunk at a time while in cache, checksummed and tagged as
// a writer does for the publish, verified as a reader does for the fetch,
// on as many goroutines as the publish's and the fetch's workers): the
// bound a store with the key on is judged against, since every publish
// and fetch moves the row once.
type integrityRatios struct {
	PublishUnkeyedVsOff    *spread `json:"publish_unkeyed_vs_off,omitempty"`
	FetchUnkeyedVsOff      *spread `json:"fetch_unkeyed_vs_off,omitempty"`
	PublishKeyedVsOff      *spread `json:"publish_keyed_vs_off,omitempty"`
	FetchKeyedVsOff        *spread `json:"fetch_keyed_vs_off,omitempty"`
	PublishKeyedVsTagBound *spread `json:"publish_keyed_vs_tag_bound,omitempty"`
	FetchKeyedVsTagBound   *spread `json:"fetch_keyed_vs_tag_bound,omitempty"`
	// TagBoundGBs is the integrity code's own pass of a reader, copying
	// (verifyCopy), at the fetch's workers; TagOnlyGBs a writer's CRC32
	// and tag alone, nothing copied.
	TagBoundGBs *spread `json:"tag_bound_gb_s,omitempty"`
	TagOnlyGBs  *spread `json:"tag_only_gb_s,omitempty"`
	// PlainPublishVsTagBound and PlainFetchVsTagBound are the store's own
	// client (the plain baseline: posix, the SDK, a pipeline), which
	// checks nothing, over the same single pass: where it is under the
	// bound too, the medium, not the integrity code, is what a keyed
	// store cannot pass.
	PlainPublishVsTagBound *spread `json:"plain_publish_vs_tag_bound,omitempty"`
	PlainFetchVsTagBound   *spread `json:"plain_fetch_vs_tag_bound,omitempty"`
}

type latency struct {
	Store string `json:"store"`
	// PublishesElsewhere: the publish streams went to a second deployment
	// of the store (-latency-publish-elsewhere).
	PublishesElsewhere bool          `json:"publishes_elsewhere,omitempty"`
	Samples            int           `json:"samples_per_phase"` // the fewest a phase took (see plan.latencyBudget)
	IdleP50            time.Duration `json:"idle_p50_ns"`
	IdleP99            time.Duration `json:"idle_p99_ns"`
	LoadedP50          time.Duration `json:"loaded_p50_ns"`
	LoadedP99          time.Duration `json:"loaded_p99_ns"`
	P99LoadedVsIdle    spread        `json:"p99_loaded_vs_idle"`
	// Collections that ran during the idle and the loaded phases, over
	// every rep: a collection's mark phase takes a core of two, so a
	// phase it falls in has a slower tail, and the reader should know.
	IdleGCs   uint32 `json:"idle_gcs"`
	LoadedGCs uint32 `json:"loaded_gcs"`
	// The wake-up of a parked goroutine (a channel round trip), timed
	// after each fetch in each phase: the floor under a fetch's two
	// hand-offs. Idle, the process sleeps between fetches and the machine
	// may take longer to run it again than while it is busy, which makes
	// an idle phase slower than a loaded one; these show it when it does.
	// StreamPublishGBs is each publish stream's bandwidth while the
	// loaded phase's fetches ran (a publish's bytes over its time), over
	// streams and reps: what the fetches cost the publishes.
	StreamPublishGBs spread `json:"stream_publish_gb_s"`
	// PublishLoadedVsAlone is, per rep, both streams' bandwidth next to
	// the fetches over the same streams' alone for as long right after:
	// the share of publish throughput the fetches leave.
	PublishLoadedVsAlone spread `json:"publish_loaded_vs_alone"`
	// LoadedFetchGBs is the loaded phase's fetch bandwidth (fetches back
	// to back): the fetch load the publishes shared the store with.
	LoadedFetchGBs spread        `json:"loaded_fetch_gb_s"`
	IdleWakeP50    time.Duration `json:"idle_wake_p50_ns"`
	IdleWakeP99    time.Duration `json:"idle_wake_p99_ns"`
	LoadedWakeP50  time.Duration `json:"loaded_wake_p50_ns"`
	LoadedWakeP99  time.Duration `json:"loaded_wake_p99_ns"`
}

type rowOps struct {
	Store     string `json:"store"`
	RowBytes  int64  `json:"row_bytes"`
	Rows      int    `json:"rows_per_view"`
	ViewsPer  int    `json:"round_trips_per_rep"`
	Workers   int    `json:"workers"`
	PerSecond spread `json:"row_ops_per_s"`
	// RepSeconds is the median time of a rep: the round trips it timed.
	RepSeconds float64 `json:"rep_seconds"`
	// MemcpyPerSecond is the same bytes copied 4 KiB at a time, src
	// slots into a buffer of the view's size on as many goroutines as may
	// publish at once (backend.PublishWorkers) and back into the dst slots
	// on as many as the backend has workers, in the same rep: the ceiling
	// the copies alone set at the same parallelism.
	MemcpyPerSecond spread `json:"memcpy_row_ops_per_s"`
	VsMemcpy        spread `json:"row_ops_vs_memcpy"`
}

// scaling is the backend's cost per row-op as its work grows (package
// scalebench): at each count of outstanding attempts and each count of
// one-row batches per view, in ns, and per rep the largest cost over the
// smallest, which a flat cost keeps near 1.
type scaling struct {
	Store          string         `json:"store"`
	RowBytes       int64          `json:"row_bytes"`
	Workers        int            `json:"workers"`
	OpsPerRep      int            `json:"row_ops_per_size_per_rep"`
	Attempts       []scalingPoint `json:"outstanding_attempts"`
	AttemptsMaxMin spread         `json:"outstanding_attempts_max_vs_min"`
	Batches        []scalingPoint `json:"batches_per_view"`
	BatchesMaxMin  spread         `json:"batches_per_view_max_vs_min"`
	// HandoffNs is scalebench.Handoff per round trip: the two goroutine
	// hand-offs under every attempt, the floor under a one-batch view.
	HandoffNs spread `json:"handoff_ns"`
}

type scalingPoint struct {
	N       int    `json:"n"`
	NsPerOp spread `json:"ns_per_row_op"`
}

// ratios are a store's ratios line: every ratio at every row size, at the
// ratio workers (2, or the nearest count measured below it), then the
// store's latency and, for the memory store, its row-ops and cost figures.
type ratios struct {
	Store                string       `json:"store"`
	PlainName            string       `json:"plain_name,omitempty"`
	SessionName          string       `json:"session_name,omitempty"`
	CheckedName          string       `json:"checked_name,omitempty"`
	Workers              int          `json:"workers"`
	Sizes                []sizeRatios `json:"sizes"`
	FetchP99LoadedVsIdle spread       `json:"fetch_p99_loaded_vs_idle"`
	// PublishLoadedVsAlone is the latency phase's publish streams next
	// to the fetches over alone (latency.PublishLoadedVsAlone).
	PublishLoadedVsAlone spread  `json:"publish_loaded_vs_alone"`
	RowOpsPerSecond      *spread `json:"row_ops_per_s,omitempty"`
	RowOpsVsMemcpy       *spread `json:"row_ops_vs_memcpy,omitempty"`
	AttemptsMaxVsMin     *spread `json:"outstanding_attempts_cost_max_vs_min,omitempty"`
	BatchesMaxVsMin      *spread `json:"batches_per_view_cost_max_vs_min,omitempty"`
}

// sizeRatios are a store's ratios at one row size.
type sizeRatios struct {
	RowBytes        int64  `json:"row_bytes"`
	PublishVsMemcpy spread `json:"publish_vs_memcpy"`
	FetchVsMemcpy   spread `json:"fetch_vs_memcpy"`
	// The store's own client doing the same work at the same concurrency,
	// over the publish's and fetch's times (stores that have one).
	PublishVsPlain *spread `json:"publish_vs_plain,omitempty"`
	FetchVsPlain   *spread `json:"fetch_vs_plain,omitempty"`
	// The store's client putting the same bytes the driver's way, over the
	// publish's time (stores with such a path: the Mooncake SDK's
	// sessions).
	PublishVsSession *spread `json:"publish_vs_session,omitempty"`
	// The store's client getting the same bytes with the check a raw
	// client needs to trust a row, over the fetch's time (fs: pread and
	// the trailer's CRC32 over the payload).
	FetchVsChecked *spread `json:"fetch_vs_checked,omitempty"`
	integrityRatios
}

// ratioWorkers is the worker count the ratios lines are at: 2 (the
// machine the figures are quoted from has two cores), or the largest
// count measured below it, or the smallest measured.
func ratioWorkers(ws []int) int {
	best := 0
	for _, w := range ws {
		if w <= 2 && w > best {
			best = w
		}
	}
	if best == 0 && len(ws) > 0 {
		best = slices.Min(ws)
	}
	return best
}

// extraStores are stores a build adds (the real Mooncake SDK, with
// -tags mooncake), each opened when the run selects it.
var extraStores []struct {
	name string
	open func(log io.Writer) (store, error)
}

// plainTimes are what a store's own client took for the work of a
// publish and a fetch.
type plainTimes struct {
	put, get time.Duration
	// session is the same puts made the way the driver makes them, with
	// no kvblob in the way (Mooncake: session start, scatter, end), 0 for
	// a store whose plain put is already the driver's way.
	session time.Duration
	// checked is the same gets with the check a raw client must make
	// before it trusts a row on a medium others can write (fs: the
	// trailer's CRC32 over the payload), 0 for a store with none.
	checked time.Duration
}

// fastest is t's rounds' figure: each of its times the shortest of any
// round's (store.rounds), the zero times for no rounds.
func fastest(t []plainTimes) plainTimes {
	if len(t) == 0 {
		return plainTimes{}
	}
	f := t[0]
	for _, u := range t[1:] {
		f = plainTimes{put: min(f.put, u.put), get: min(f.get, u.get), session: min(f.session, u.session), checked: min(f.checked, u.checked)}
	}
	return f
}

// store makes a fresh driver of one store, and forgets objects.
type store struct {
	name   string
	target bool // a Redis deployment the user runs (-redis, -redis-cluster)
	// make makes a driver with integrity off: no row key (for fs, S3 and
	// Redis that is the unkeyed trailer, which they always write; the
	// memory store and Mooncake then write none).
	make func() (driver.Driver, error)
	// unkeyed makes one with the unkeyed trailer where off writes none
	// and the store has one (Mooncake: Options.Trailer); nil otherwise.
	unkeyed func() (driver.Driver, error)
	// keyed makes one with the row key on (Options.Integrity); nil: the
	// store takes none. A bandwidth rep measures each way the store has,
	// side by side (measureBandwidth).
	keyed   func(in *trailer.Integrity) (driver.Driver, error)
	forget  func(d driver.Driver, keys []string)
	stop    func()
	prefix  string   // the backend's key prefix ("" is the backend's default)
	written *written // records every key before it is written, when the run must delete them
	// plain times the work of a rep's publish and fetch (w) done by the
	// store's own client with no kvblob in the way (nil: no such
	// baseline); d is the rig's driver. plainName names it in the ratios
	// line ("pipeline": go-redis pipelines; "raw_sdk": the Mooncake SDK's
	// batch_put_from and batch_get_into).
	plain     func(d driver.Driver, w plainWork) (plainTimes, error)
	plainName string
	// plainFromSlots: plain moves the rig's slots (plainWork.src and
	// dst), not objects, and gets no plainWork.objs.
	plainFromSlots bool
	// sessionName names plainTimes.session in the ratios line ("" when
	// the store's plain has none).
	sessionName string
	// checkedName names plainTimes.checked in the ratios line ("" when
	// the store's plain has none).
	checkedName string
	// rowsInFlight is how many rows one driver call sends at once (1: one
	// after another); the store's client runs at the concurrency the
	// driver reaches (reached).
	rowsInFlight int
	// settle, when set, brings the store to a rest before a timed
	// publish, the driver's and (inside plain) the raw one's alike (fs:
	// the disk's pending writes).
	settle func()
	// rowsPerCall and bytesPerCall are the store's own batching, its
	// spec's config (0: the plan's): a rig of the store cuts views at
	// them unless -rows-per-call or -bytes-per-call is given (plan.batching).
	rowsPerCall  int
	bytesPerCall int64
	// elsewhere opens a second deployment of the same store, on the same
	// machine, which the latency phase's publish streams go to with
	// -latency-publish-elsewhere (nil: the store has none).
	elsewhere func() (store, error)
	// rounds is how many times a bandwidth rep runs the driver's publish
	// and fetch and, alternating with them, the store's own client's
	// (0: once each); each side's figure in the rep is its fastest
	// round's (a step's noise on a shared machine only adds time).
	rounds int
}

// shortStepRounds is store.rounds for the stores whose timed steps are
// short (Redis and Valkey over loopback, fs from the page cache): a rep
// runs three rounds of the driver's steps and its own client's,
// alternating which goes first, and each side counts its fastest. One
// step of a 64 MiB view is 20-80 ms over a loopback Redis and 5-8 ms for
// an fs fetch, and on two shared cores a step's time is bimodal: the
// same Redis step took about 30 or about 60 ms, on the driver's side and
// the pipeline's alike, with no other process running (the client's
// workers and the server's thread share two cores), so one round a rep
// compared a fast step with a slow one as often as not (two whole runs of
// one build minutes apart gave Redis medians from 0.53 to 2.07). The
// fastest of three rounds of each side is a step that had the cores, and
// with the order alternating neither side gets more chances at one, nor
// always runs second (the second side of a round was about 4% faster).
// Three, not more: the rounds took the Redis part of a make bench from
// 124 s to 201 s (docs/operating.md).
const shortStepRounds = 3

// plainWork is the work of a rep's publish and fetch, for a store's own
// client to do as the driver did it: the same keys, cut into calls of
// perCall keys as the backend cut the driver's (Backend.BatchSize, so the
// fact has one place), putConc of them in flight putting and getConc
// getting (reached).
type plainWork struct {
	keys []string
	// objs are each key's object as a driver that writes the object
	// trailer stores it (plainObject); nil for a store.plainFromSlots.
	objs [][]byte
	// src and dst are the rig's slots, registered with the rig's driver
	// (for a client that moves registered memory, as the driver does):
	// src holds row i of the publish at i*rowBytes, dst is where the fetch
	// read them. A baseline that puts from src and gets into dst moves the
	// driver's own bytes through memory the driver's calls warmed.
	src, dst                  []byte
	rowBytes                  int64
	perCall, putConc, getConc int
}

// batching is the rows and bytes per driver call a rig of s cuts views
// at: the store's own (store.rowsPerCall, store.bytesPerCall) where it
// has them and the flag was not given, else the plan's.
func (p plan) batching(s store) (rows int, bytes int64) {
	rows, bytes = p.rowsPerCall, p.bytesPerCall
	if s.rowsPerCall > 0 && !p.rowsPerCallSet {
		rows = s.rowsPerCall
	}
	if s.bytesPerCall > 0 && !p.bytesPerCallSet {
		bytes = s.bytesPerCall
	}
	return rows, bytes
}

// rows cuts mem (w.src or w.dst) into one slot per key, for a client
// that moves each row's payload from the slot the driver's publish sent
// it from, or into the one its fetch read it into, as the driver does (fs,
// S3): a reused buffer of one row per goroutine stays in cache and
// flatters the baseline (at 256 KiB rows, a pread into one ran at twice
// the speed of a pread into the slots), and a write from 64 MiB of heap
// the bench had just allocated took 1.7x as long per 4 MiB as one from
// the slots.
func (w plainWork) rows(mem []byte) [][]byte {
	out := make([][]byte, len(w.keys))
	for k := range out {
		out[k] = mem[int64(k)*w.rowBytes : int64(k+1)*w.rowBytes]
	}
	return out
}

// reached is the store calls a backend of workers workers has in flight
// at once, publishing and fetching a view of rows rows, when each driver
// call holds perCall rows and sends up to rowsInFlight of them at once: a
// call holds no more rows than it was cut with (a 4 MiB call of 4 MiB
// rows is one request whatever RowsInFlight says), a publish runs on
// backend.PublishWorkers of the workers, and no more workers than the
// view has calls (a view of one call is one worker's). A store's own
// client does the same work at these, so that the ratio compares the
// driver with the client at the concurrency the driver reaches, not at
// one it cannot.
func reached(rowsInFlight, perCall, rows, workers int) (publish, fetch int) {
	each := max(1, min(rowsInFlight, perCall))
	calls := (rows + perCall - 1) / max(1, perCall)
	return min(backend.PublishWorkers(workers), calls) * each, min(workers, calls) * each
}

func memoryStore() store {
	return store{name: "memory",
		make: func() (driver.Driver, error) { return memory.New(memory.Options{}), nil },
		keyed: func(in *trailer.Integrity) (driver.Driver, error) {
			return memory.New(memory.Options{Integrity: in}), nil
		},
		forget: func(d driver.Driver, keys []string) {
			for _, k := range keys {
				d.(*memory.Driver).Store().Delete(k)
			}
		}}
}

func mooncakeStore() store {
	return store{name: "mooncake-fake",
		make: func() (driver.Driver, error) {
			return mooncake.New(fakesdk.NewClient(fakesdk.NewMaster(0), fakesdk.Version))
		},
		unkeyed: func() (driver.Driver, error) {
			return mooncake.NewWith(fakesdk.NewClient(fakesdk.NewMaster(0), fakesdk.Version), mooncake.Options{Trailer: true})
		},
		keyed: func(in *trailer.Integrity) (driver.Driver, error) {
			return mooncake.NewWith(fakesdk.NewClient(fakesdk.NewMaster(0), fakesdk.Version), mooncake.Options{Integrity: in})
		},
		forget: func(d driver.Driver, keys []string) {
			m := d.(*mooncake.Driver).SDK().(*fakesdk.Client).Master()
			for _, k := range keys {
				m.Delete(k)
			}
		}}
}

// rig is a backend over a fresh driver with src and dst views of n rows.
type rig struct {
	s      store
	lender *hostmem.Lender
	be     *backend.Backend
	d      driver.Driver
	stem   driver.Stem
	slots  *driver.Region
	n      int
	mu     sync.Mutex
	seq    int
	closed bool
}

func newRig(s store, p plan, rowBytes int64, rows, workers int) (*rig, error) {
	d, err := s.make()
	if err != nil {
		return nil, err
	}
	lender, err := hostmem.NewLender("bench", driver.Layout{SlotBytes: rowBytes, Slots: 2 * rows})
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	fail := func(err error) (*rig, error) {
		_ = d.Close()
		_ = lender.Close()
		return nil, err
	}
	hold, err := lender.Hold()
	if err != nil {
		return fail(err)
	}
	bind, err := backend.Bind(context.Background(), hold.Regions(), d, hold)
	if err != nil {
		return fail(err)
	}
	prefix := s.prefix
	if prefix == "" {
		prefix = "kvblob"
	}
	stem, err := driver.KeyStem(prefix)
	if err != nil {
		return fail(err)
	}
	rowsPerCall, bytesPerCall := p.batching(s)
	be, err := backend.New(bind, backend.Config{Workers: workers, RowsPerBatch: rowsPerCall, BytesPerBatch: bytesPerCall, Prefix: prefix})
	if err != nil {
		return fail(err)
	}
	r := &rig{s: s, lender: lender, be: be, d: d, stem: stem, slots: hold.Regions()[0], n: rows}
	active.add(r)
	scalebench.Fill(r.slots.Mem[:int64(rows)*rowBytes])
	return r, nil
}

// views returns a fresh batch of names over the src (first n) and dst
// (last n) slots; names are new each call, so every publish writes.
func (r *rig) views(first, n int) (src, dst backend.View) {
	r.mu.Lock()
	r.seq++
	seq := r.seq
	r.mu.Unlock()
	src, dst = make(backend.View, n), make(backend.View, n)
	for i := 0; i < n; i++ {
		name := []byte(fmt.Sprintf("r%d-%d", seq, i))
		src[i] = backend.ViewRow{Name: name, Spans: []driver.Span{r.slots.Slot(first + i)}}
		dst[i] = backend.ViewRow{Name: name, Spans: []driver.Span{r.slots.Slot(r.n + first + i)}}
	}
	if r.s.written != nil {
		r.s.written.add(r.keys(src))
	}
	return src, dst
}

// keys are a view's keys in the store.
func (r *rig) keys(v backend.View) []string {
	keys := make([]string, len(v))
	for i, row := range v {
		keys[i], _ = r.stem.Key(row.Name)
	}
	return keys
}

// forget deletes a view's objects from the store, outside the timed part,
// so the store's footprint stays steady from rep to rep.
func (r *rig) forget(v backend.View) { r.s.forget(r.d, r.keys(v)) }

// close shuts the backend down and closes the driver and the lender; a
// measurement defers it, so a failed one leaves nothing running, and calls
// it at the end to see its error. Only the first call acts.
func (r *rig) close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	active.remove(r)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.be.Shutdown(ctx); err != nil {
		return err // the lender keeps its memory: a store may still touch it
	}
	_ = r.d.Close()
	return r.lender.Close()
}

// finish waits until the attempt delivered every row and quiesced. For a
// driver whose access ends when its call returns (every store measured
// here), an attempt is quiesced once done, and WaitQuiesced returns at
// once without allocating.
func (r *rig) finish(a *backend.Attempt, err error) error {
	if err != nil {
		return err
	}
	o, err := a.Wait(context.Background())
	if err != nil {
		return err
	}
	if o.InOrder != len(o.Results) {
		// A row that is not READY without an error (a MISS, a NOT_READY)
		// leaves o.Err nil: its status is the reason.
		why := fmt.Errorf("row %d answered %v", o.InOrder, o.Results[o.InOrder].Status)
		if o.Err != nil {
			why = o.Err
		}
		return fmt.Errorf("attempt delivered %d of %d rows: %w", o.InOrder, len(o.Results), why)
	}
	return a.WaitQuiesced(context.Background())
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func medianDur(ds []time.Duration) time.Duration { return percentile(ds, 0.5) }

func gbs(bytes int64, d time.Duration) float64 { return float64(bytes) / d.Seconds() / 1e9 }

func measure(p plan, log io.Writer) (*report, error) {
	clock := readCPUClock()
	rep := &report{Plan: planJSON{Reps: p.reps, ViewBytes: p.viewBytes, BytesPerCall: p.bytesPerCall, RowsPerCall: p.rowsPerCall, GOMAXPROCS: runtime.GOMAXPROCS(0), LoadAvg: loadAvg()}}
	defer func() {
		others, own, ok := othersSince(clock)
		rep.Plan.OwnCPUSeconds = own.Seconds()
		if ok {
			o := others.Seconds()
			rep.Plan.OthersCPUSeconds = &o
		}
	}()
	ss := []store{memoryStore(), mooncakeStore()}
	// The stores on files: the shared filesystem always (a directory on
	// this machine's disk), S3 when versitygw is installed.
	for _, open := range []struct {
		name string
		open func() (store, error)
	}{{"fs", fsStore}, {"s3", s3Store}} {
		if p.stores != nil && !slices.Contains(p.stores, open.name) || p.stores == nil && p.target != nil {
			continue
		}
		s, err := open.open()
		if err != nil {
			fmt.Fprintf(log, "blobbench: %s skipped: %v\n", open.name, err)
			rep.Skipped = append(rep.Skipped, open.name+": "+err.Error())
			continue
		}
		defer s.stop()
		ss = append(ss, s)
	}
	for _, open := range extraStores {
		if p.stores != nil && !slices.Contains(p.stores, open.name) {
			continue
		}
		s, err := open.open(log)
		if err != nil {
			fmt.Fprintf(log, "blobbench: %s skipped: %v\n", open.name, err)
			rep.Skipped = append(rep.Skipped, open.name+": "+err.Error())
			continue
		}
		if s.stop != nil {
			defer s.stop()
		}
		ss = append(ss, s)
	}
	if p.target != nil {
		rs, err := openRedis(*p.target, log)
		if err != nil {
			return nil, err
		}
		rs.target = true
		defer rs.stop()
		ss = append(ss, rs)
	} else if p.redis {
		// Every server build the Redis driver serves, side by side.
		for _, b := range rediskit.Builds {
			name := b.Store
			if p.stores != nil && !slices.Contains(p.stores, name) {
				continue
			}
			rs, err := redisStore(b, "blobbench", log)
			if err != nil {
				fmt.Fprintf(log, "blobbench: %s skipped: %v\n", name, err)
				rep.Skipped = append(rep.Skipped, name+": "+err.Error())
				continue
			}
			defer rs.stop()
			ss = append(ss, rs)
		}
	}
	if p.stores != nil {
		var keep []store
		for _, s := range ss {
			// A Redis the user runs answers to -stores redis whatever
			// build it turns out to be.
			if slices.Contains(p.stores, s.name) || s.target && slices.Contains(p.stores, "redis") {
				keep = append(keep, s)
			}
		}
		ss = keep
	}
	for _, s := range ss {
		for _, rowBytes := range p.rowSizes {
			rows := int(max(1, p.viewBytes/rowBytes))
			for _, w := range p.workers {
				fmt.Fprintf(log, "blobbench: %s %s rows x%d, %d workers, %d reps\n", s.name, size(rowBytes), rows, w, p.reps)
				b, err := measureBandwidth(s, p, rowBytes, rows, w)
				if err != nil {
					return nil, fmt.Errorf("%s %s %d workers: %w", s.name, size(rowBytes), w, err)
				}
				rep.Bandwidth = append(rep.Bandwidth, b)
			}
		}
		fmt.Fprintf(log, "blobbench: %s fetch latency, %d samples per phase, %d reps\n", s.name, p.latencyFetches, p.reps)
		l, err := measureLatency(s, p, log)
		if err != nil {
			return nil, fmt.Errorf("%s latency: %w", s.name, err)
		}
		rep.Latency = append(rep.Latency, l)
	}
	fmt.Fprintf(log, "blobbench: memory row-ops end to end, 4 KiB rows x%d, %d round trips per rep, %d reps\n", p.rowOpsRows, p.rowOpsViews, p.reps)
	ro, err := measureRowOps(memoryStore(), p)
	if err != nil {
		return nil, fmt.Errorf("row-ops: %w", err)
	}
	rep.RowOps = ro
	fmt.Fprintf(log, "blobbench: memory cost per row-op as work grows, %d row-ops per size, %d reps\n", p.scalingOps, p.reps)
	sc, err := measureScaling(p)
	if err != nil {
		return nil, fmt.Errorf("scaling: %w", err)
	}
	rep.Scaling = sc
	rw := ratioWorkers(p.workers)
	for _, s := range ss {
		rt := ratios{Store: s.name, PlainName: s.plainName, SessionName: s.sessionName, CheckedName: s.checkedName, Workers: rw}
		for _, b := range rep.Bandwidth {
			if b.Store == s.name && b.Workers == rw {
				rt.Sizes = append(rt.Sizes, sizeRatios{RowBytes: b.RowBytes, PublishVsMemcpy: b.PublishVsMemcpy, FetchVsMemcpy: b.FetchVsMemcpy,
					PublishVsPlain: b.PublishVsPipeline, FetchVsPlain: b.FetchVsPipeline, PublishVsSession: b.PublishVsSession, FetchVsChecked: b.FetchVsChecked,
					integrityRatios: b.integrityRatios})
			}
		}
		for _, l := range rep.Latency {
			if l.Store == s.name {
				rt.FetchP99LoadedVsIdle, rt.PublishLoadedVsAlone = l.P99LoadedVsIdle, l.PublishLoadedVsAlone
			}
		}
		if s.name == ro.Store {
			rt.RowOpsPerSecond, rt.RowOpsVsMemcpy = &ro.PerSecond, &ro.VsMemcpy
		}
		if s.name == sc.Store {
			rt.AttemptsMaxVsMin, rt.BatchesMaxVsMin = &sc.AttemptsMaxMin, &sc.BatchesMaxMin
		}
		rep.Ratios = append(rep.Ratios, rt)
	}
	return rep, nil
}

// measureBandwidth publishes and fetches a view of many batches, and in
// the same rep copies the same bytes with memcpy on as many goroutines as
// the backend has workers (the publish's memcpy on as many as may publish
// at once, backend.PublishWorkers) and (when the store has one) moves
// them through its own client at the concurrency the driver reaches; each
// rep's ratio is taken side by side. A rep runs store.rounds rounds of
// the driver's steps and its client's, which goes first alternating
// (plainFirst), and takes each side's fastest round; the memcpys run
// once, after the rounds. After the store's reps it copies the same bytes
// into a fresh heap allocation per row, on as many goroutines as the
// backend has workers, as many reps again.
//
// Every baseline starts from the same state whatever ran before it: the
// memcpy copies between slots the rig faulted in (src filled, dst written
// by the last fetch), each timed step (the store's publish and fetch, its
// client's work, each memcpy) starts with the caches emptied of what ran
// before (coldCaches), the allocate-then-copy starts from a heap whose
// free pages went back to the system (coldHeap), in reps of its own after
// the store's, so that no step of the store's starts from that heap, the
// driver and the store's client each start after a collection, on a store
// that holds none of the rep's objects (each side forgets its own before
// the other runs), and the client on objects and buffers written before
// its clock starts.
func measureBandwidth(s store, p plan, rowBytes int64, rows, workers int) (bandwidth, error) {
	r, err := newRig(s, p, rowBytes, rows, workers)
	if err != nil {
		return bandwidth{}, err
	}
	defer r.close()
	total := int64(rows) * rowBytes
	var pubs, gets, cps, allocs []time.Duration
	var pubR, getR, pubP, getP, pubS, getC []float64
	srcMem := r.slots.Mem[:total]
	dstMem := r.slots.Mem[total : 2*total]
	batches := 0
	// The rows of each driver call, as the backend cuts them: the store's
	// own client makes calls of as many keys.
	perCall := rows
	if n, _, bounded := r.be.BatchSize(r.slots); bounded {
		perCall = min(n, rows)
	}
	pubConc, conc := reached(s.rowsInFlight, perCall, rows, workers)
	// The store's own client's objects, kept from rep to rep.
	objs := make([][]byte, rows)
	rounds := max(1, s.rounds)
	// The store with the unkeyed trailer (where off writes none) and
	// with the row key on, each a rig of its own over the same bytes,
	// measured in every rep beside integrity off; and the integrity
	// code's own pass over the same rows (tagBound).
	modes, err := newModeRigs(s, p, rowBytes, rows, workers)
	if err != nil {
		return bandwidth{}, err
	}
	defer func() {
		for _, m := range modes {
			_ = m.r.close()
		}
	}()
	var modeSteps func(r *rig, pubT, getT *[]time.Duration, busy *busyTally) error
	var offBusy busyTally
	var tagFetchR, tagPubR []float64
	// The store's own client's times over the integrity code's pass.
	var plainTagPubR, plainTagFetchR []float64
	for i := 0; i <= p.reps; i++ { // rep 0 warms the store up and is not counted
		// The driver's steps: a publish and a fetch of a fresh view, each
		// from cold caches; its objects forgotten after.
		var pubT, getT []time.Duration
		driverSteps := func() error { return modeSteps(r, &pubT, &getT, &offBusy) }
		modeSteps = func(r *rig, pubT, getT *[]time.Duration, busy *busyTally) error {
			src, dst := r.views(0, rows)
			before := r.be.Stats().BatchesQueued
			if s.settle != nil {
				s.settle()
			}
			coldCaches()
			c0, t0 := readCPUClock(), time.Now()
			if err := r.finish(r.be.Publish(context.Background(), src)); err != nil {
				return err
			}
			*pubT = append(*pubT, time.Since(t0))
			if i > 0 {
				busy.add(c0, readCPUClock(), (*pubT)[len(*pubT)-1], false)
			}
			coldCaches()
			c0, t0 = readCPUClock(), time.Now()
			if err := r.finish(r.be.Fetch(context.Background(), dst)); err != nil {
				return err
			}
			*getT = append(*getT, time.Since(t0))
			if i > 0 {
				busy.add(c0, readCPUClock(), (*getT)[len(*getT)-1], true)
			}
			batches = (r.be.Stats().BatchesQueued - before) / 2
			r.forget(src)
			runtime.GC()
			return nil
		}
		// The store's own client doing the same work, on fresh names.
		var plainT []plainTimes
		plainSteps := func() error {
			pv, _ := r.views(0, rows) // fresh names, recorded as written
			keys := r.keys(pv)
			// Each key's own bytes, as the driver stores them: one
			// object for every key would send the same cached megabyte
			// again and flatter the baseline. They are built in the
			// buffers of the rep before, as a driver's pool keeps its
			// object buffers from call to call. A baseline that moves the
			// slots has none (nil).
			var repObjs [][]byte
			if !s.plainFromSlots {
				for k, key := range keys {
					objs[k] = plainObject(objs[k], key, srcMem[int64(k)*rowBytes:int64(k+1)*rowBytes])
				}
				repObjs = objs[:len(keys)]
			}
			// The driver's publish starts on a collected heap: so does
			// the baseline, not amid the collection of what ran before.
			runtime.GC()
			coldCaches()
			w := plainWork{keys: keys, objs: repObjs, src: srcMem, dst: dstMem, rowBytes: rowBytes, perCall: perCall, putConc: pubConc, getConc: conc}
			pt, err := s.plain(r.d, w)
			if err != nil {
				return fmt.Errorf("plain %s: %w", s.plainName, err)
			}
			plainT = append(plainT, pt)
			r.forget(pv)
			runtime.GC()
			return nil
		}
		// Rounds alternate which side goes first (plainFirst), so that
		// neither always runs on the store and machine the other left.
		for k := 0; k < rounds; k++ {
			steps := []func() error{driverSteps}
			if s.plain != nil {
				steps = append(steps, plainSteps)
				if plainFirst(i, k) {
					steps[0], steps[1] = steps[1], steps[0]
				}
			}
			for _, step := range steps {
				if err := step(); err != nil {
					return bandwidth{}, err
				}
			}
		}
		// Each other way of the store, as many rounds, alternating with
		// integrity off's order from round to round.
		for _, m := range modes {
			m.pubT, m.getT = nil, nil
			for k := 0; k < rounds; k++ {
				if err := modeSteps(m.r, &m.pubT, &m.getT, &m.busy); err != nil {
					return bandwidth{}, fmt.Errorf("%s: %w", m.name, err)
				}
			}
		}
		var tagGet, tagPub, tagOnly time.Duration
		if len(modes) > 0 && modes[len(modes)-1].name == "keyed" {
			timed := func(pass tagPass, n int) time.Duration {
				coldCaches()
				t0 := time.Now()
				parallelTag(rowKey, dstMem, srcMem, rowBytes, n, pass)
				return time.Since(t0)
			}
			tagGet = timed(verifyCopy, workers)
			tagPub = timed(sealCopy, backend.PublishWorkers(workers))
			tagOnly = timed(sealOnly, workers)
		}
		coldCaches()
		t0 := time.Now()
		parallelCopy(dstMem, srcMem, rowBytes, workers)
		cp := time.Since(t0)
		// A publish runs on at most PublishWorkers of the workers (one
		// is kept for fetches): its memcpy runs on as many goroutines.
		cpPub := cp
		if pw := backend.PublishWorkers(workers); pw != workers {
			coldCaches()
			t0 = time.Now()
			parallelCopy(dstMem, srcMem, rowBytes, pw)
			cpPub = time.Since(t0)
		}
		// Each side's figure is its fastest round: see store.rounds.
		pub, get, plain := slices.Min(pubT), slices.Min(getT), fastest(plainT)
		if p.steps != nil {
			printSteps(p.steps, s, rowBytes, workers, i, pubT, getT, plainT)
		}
		if i == 0 {
			continue
		}
		for _, m := range modes {
			mp, mg := slices.Min(m.pubT), slices.Min(m.getT)
			m.pubR, m.getR = append(m.pubR, float64(pub)/float64(mp)), append(m.getR, float64(get)/float64(mg))
			if m.name == "keyed" {
				tagPubR, tagFetchR = append(tagPubR, float64(tagPub)/float64(mp)), append(tagFetchR, float64(tagGet)/float64(mg))
				if s.plain != nil {
					plainTagPubR = append(plainTagPubR, float64(tagPub)/float64(plain.put))
					plainTagFetchR = append(plainTagFetchR, float64(tagGet)/float64(plain.get))
				}
				m.gbs = append(m.gbs, gbs(total, mp), gbs(total, mg))
				m.tagGBs = append(m.tagGBs, gbs(total, tagGet))
				m.tagOnlyGBs = append(m.tagOnlyGBs, gbs(total, tagOnly))
			}
		}
		pubs, gets, cps = append(pubs, pub), append(gets, get), append(cps, cp)
		pubR, getR = append(pubR, float64(cpPub)/float64(pub)), append(getR, float64(cp)/float64(get))
		if s.plain != nil {
			pubP, getP = append(pubP, float64(plain.put)/float64(pub)), append(getP, float64(plain.get)/float64(get))
			if s.sessionName != "" {
				pubS = append(pubS, float64(plain.session)/float64(pub))
			}
			if s.checkedName != "" {
				getC = append(getC, float64(plain.checked)/float64(get))
			}
		}
	}
	// The allocate-then-copy, in reps of its own after the store's last
	// step: coldHeap gives every free page of the heap back to the system,
	// and in the rep before a store's publish it made the publish fault in
	// the pages its submission allocates (memory store, 256 KiB rows: 12
	// faults, submission 67 -> 161 µs, publish/memcpy 0.90 -> 0.78), a
	// cost no engine that keeps its heap pays and the memcpy, which
	// allocates nothing, never did.
	for i := 0; i <= p.reps; i++ { // rep 0 is not counted, as above
		coldHeap()
		t0 := time.Now()
		_ = allocCopy(srcMem, rowBytes, workers)
		alloc := time.Since(t0)
		runtime.GC()
		if i > 0 {
			allocs = append(allocs, alloc)
		}
	}
	if err := r.close(); err != nil {
		return bandwidth{}, err
	}
	b := bandwidth{Store: s.name, RowBytes: rowBytes, Workers: workers, PublishWorkers: backend.PublishWorkers(workers), PublishConcurrency: pubConc, Concurrency: conc, RowsPerCall: perCall, BatchesPerView: batches,
		PublishGBs: gbs(total, medianDur(pubs)), FetchGBs: gbs(total, medianDur(gets)),
		MemcpyGBs: gbs(total, medianDur(cps)), AllocCopyGBs: gbs(total, medianDur(allocs)),
		PublishVsMemcpy: spreadOf(pubR), FetchVsMemcpy: spreadOf(getR)}
	if c, ok := offBusy.cores("off"); ok {
		b.BusyCores = append(b.BusyCores, c)
	}
	for _, m := range modes {
		if c, ok := m.busy.cores(m.name); ok {
			b.BusyCores = append(b.BusyCores, c)
		}
		pr, gr := spreadOf(m.pubR), spreadOf(m.getR)
		switch m.name {
		case "unkeyed":
			b.PublishUnkeyedVsOff, b.FetchUnkeyedVsOff = &pr, &gr
		case "keyed":
			b.PublishKeyedVsOff, b.FetchKeyedVsOff = &pr, &gr
			tp, tf := spreadOf(tagPubR), spreadOf(tagFetchR)
			b.PublishKeyedVsTagBound, b.FetchKeyedVsTagBound = &tp, &tf
			tg, to := spreadOf(m.tagGBs), spreadOf(m.tagOnlyGBs)
			b.TagBoundGBs, b.TagOnlyGBs = &tg, &to
			if len(plainTagPubR) > 0 {
				pp, pf := spreadOf(plainTagPubR), spreadOf(plainTagFetchR)
				b.PlainPublishVsTagBound, b.PlainFetchVsTagBound = &pp, &pf
			}
		}
	}
	if s.plain != nil {
		pp, gp := spreadOf(pubP), spreadOf(getP)
		b.PublishVsPipeline, b.FetchVsPipeline = &pp, &gp
		if s.sessionName != "" {
			ps := spreadOf(pubS)
			b.PublishVsSession = &ps
		}
		if s.checkedName != "" {
			gc := spreadOf(getC)
			b.FetchVsChecked = &gc
		}
	}
	return b, nil
}

// printSteps writes a bandwidth rep's timed steps, each round's, in ms:
// the driver's publish and fetch, and its store's own client's put and get.
func printSteps(w io.Writer, s store, rowBytes int64, workers, rep int, pubT, getT []time.Duration, plainT []plainTimes) {
	ms := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1e3, 'f', 3, 64) }
	fmt.Fprintf(w, "steps %s %s %dw rep %d:", s.name, strings.ReplaceAll(size(rowBytes), " ", ""), workers, rep)
	for k := range pubT {
		fmt.Fprintf(w, " [publish %s fetch %s", ms(pubT[k]), ms(getT[k]))
		if k < len(plainT) {
			fmt.Fprintf(w, " %s put %s get %s", s.plainName, ms(plainT[k].put), ms(plainT[k].get))
		}
		fmt.Fprint(w, "]")
	}
	fmt.Fprintln(w)
}

// plainFirst is whether, in round k of rep i, the store's own client
// runs before the driver: every other round, starting one later in every
// other rep, so that over two reps each side goes first as often.
func plainFirst(i, k int) bool { return (i+k)%2 == 1 }

// measureLatency times fetches of one 1 MiB row with 2 workers, idle and
// next to two publish streams, p.latencyFetches samples per phase and
// p.reps reps; each rep's p99 ratio is taken side by side. The streams
// forget what they published, so the store's footprint stays steady.
func measureLatency(s store, p plan, log io.Writer) (latency, error) {
	const rowBytes = 1 << 20
	const streamRows = 16
	r, err := newRig(s, p, rowBytes, p.latencyRows+2*streamRows, 2)
	if err != nil {
		return latency{}, err
	}
	defer r.close()
	// The publish streams' rig: r's own, or one over a second deployment
	// of the store (plan.latencyElsewhere).
	pubRig := r
	if p.latencyElsewhere {
		if s.elsewhere == nil {
			return latency{}, fmt.Errorf("-latency-publish-elsewhere: %s has no second deployment to publish to", s.name)
		}
		s2, err := s.elsewhere()
		if err != nil {
			return latency{}, fmt.Errorf("a second deployment for the publish streams: %w", err)
		}
		if pubRig, err = newRig(s2, p, rowBytes, p.latencyRows+2*streamRows, 2); err != nil {
			return latency{}, err
		}
		defer pubRig.close()
	}
	src, dst := r.views(0, p.latencyRows)
	if err := r.finish(r.be.Publish(context.Background(), src)); err != nil {
		return latency{}, err
	}
	// After each fetch, a wake-up of a parked goroutine is timed: the
	// floor every fetch pays twice (the caller's to a worker and back).
	// When the idle phase is the slower one, this shows why: with nothing
	// else to run, the process's threads sleep between fetches and the
	// machine (shared, and a VM) takes its time to run them again.
	ping, pong := make(chan struct{}), make(chan struct{})
	defer close(ping)
	go func() {
		// On a thread of its own, so that each ping wakes a thread, as a
		// fetch wakes a worker's, not a goroutine on the caller's.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for range ping {
			pong <- struct{}{}
		}
	}()
	var wakes []time.Duration
	fetches := func() ([]time.Duration, error) {
		ds := make([]time.Duration, 0, p.latencyFetches)
		wakes = make([]time.Duration, 0, p.latencyFetches)
		start := time.Now()
		for i := 0; i < p.latencyFetches; i++ {
			// A slow store (S3 next to two publish streams: ~150 ms a
			// fetch) stops at the phase's time budget, past a floor of
			// samples that still has a p99.
			if i >= minLatencySamples && time.Since(start) > p.latencyBudget {
				break
			}
			if p.latencyGap > 0 {
				time.Sleep(time.Until(start.Add(time.Duration(i) * p.latencyGap))) // the schedule, not a wait for an event
			}
			t0 := time.Now()
			if err := r.finish(r.be.Fetch(context.Background(), dst)); err != nil {
				return nil, err
			}
			t1 := time.Now()
			ds = append(ds, t1.Sub(t0))
			ping <- struct{}{}
			<-pong
			wakes = append(wakes, time.Since(t1))
		}
		return ds, nil
	}
	var idleWakes, loadedWakes []time.Duration
	var pubGBs []float64     // each stream's publish bandwidth, per rep
	var pubVsAlone []float64 // both streams' bandwidth next to the fetches over alone, per rep
	var fetchGBs []float64   // the loaded phase's fetch bandwidth, per rep
	samples := p.latencyFetches
	var allIdle, allLoaded []time.Duration
	var rs []float64
	var idleGCs, loadedGCs uint32
	for rep := 0; rep < p.reps; rep++ {
		runtime.GC()
		gc0 := numGC()
		idle, err := fetches()
		if err != nil {
			return latency{}, err
		}
		idleGCs += numGC() - gc0
		idleWakes = append(idleWakes, wakes...)
		stop, streamsDone := publishStreams(pubRig, p, rowBytes, streamRows)
		runtime.GC()
		gc0 = numGC()
		t0 := time.Now()
		loaded, err := fetches()
		took := time.Since(t0)
		loadedGCs += numGC() - gc0
		loadedWakes = append(loadedWakes, wakes...)
		close(stop)
		loadedGBs, serr := streamsDone()
		if err == nil {
			err = serr
		}
		if err != nil {
			return latency{}, err
		}
		// The same two streams alone for as long as the loaded phase
		// took: what the fetches cost the publishes is this rep's
		// loaded bandwidth over this.
		stop, streamsDone = publishStreams(pubRig, p, rowBytes, streamRows)
		time.Sleep(took) // the length of the measurement, not a wait for an event
		close(stop)
		aloneGBs, err := streamsDone()
		if err != nil {
			return latency{}, err
		}
		pubGBs = append(pubGBs, loadedGBs...)
		if a, l := sum(aloneGBs), sum(loadedGBs); a > 0 && l > 0 {
			pubVsAlone = append(pubVsAlone, l/a)
		}
		fetchGBs = append(fetchGBs, gbs(int64(len(loaded))*rowBytes*int64(p.latencyRows), took))
		samples = min(samples, len(idle), len(loaded))
		ratio := float64(percentile(loaded, 0.99)) / float64(percentile(idle, 0.99))
		fmt.Fprintf(log, "blobbench: %s latency rep %d: p99 idle %v loaded %v (%.2fx)\n", s.name, rep+1, percentile(idle, 0.99), percentile(loaded, 0.99), ratio)
		rs = append(rs, ratio)
		allIdle, allLoaded = append(allIdle, idle...), append(allLoaded, loaded...)
	}
	if err := pubRig.close(); err != nil {
		return latency{}, err
	}
	if err := r.close(); err != nil {
		return latency{}, err
	}
	return latency{Store: s.name, PublishesElsewhere: pubRig != r, Samples: samples, IdleP50: percentile(allIdle, 0.5), IdleP99: percentile(allIdle, 0.99),
		LoadedP50: percentile(allLoaded, 0.5), LoadedP99: percentile(allLoaded, 0.99), P99LoadedVsIdle: spreadOf(rs),
		IdleGCs: idleGCs, LoadedGCs: loadedGCs, IdleWakeP50: percentile(idleWakes, 0.5), LoadedWakeP50: percentile(loadedWakes, 0.5),
		IdleWakeP99: percentile(idleWakes, 0.99), LoadedWakeP99: percentile(loadedWakes, 0.99), StreamPublishGBs: spreadOf(pubGBs),
		PublishLoadedVsAlone: spreadOf(pubVsAlone), LoadedFetchGBs: spreadOf(fetchGBs)}, nil
}

// publishStreams starts the latency phase's two publish streams, each
// publishing its own view of streamRows rows of rowBytes over and over
// until stop is closed; done waits for them and returns each stream's
// bandwidth (a publish's bytes over its time) or the first error.
func publishStreams(r *rig, p plan, rowBytes int64, streamRows int) (stop chan struct{}, done func() ([]float64, error)) {
	stop = make(chan struct{})
	var wg sync.WaitGroup
	errs := make([]error, 2)
	var pubTime [2]time.Duration
	var pubBytes [2]int64
	for k := 0; k < 2; k++ {
		first := p.latencyRows + k*streamRows
		// One view per stream, its objects deleted after each publish,
		// so that each publish inserts its keys afresh and the harness
		// allocates nothing while it runs: its garbage would bring
		// collections into the loaded phase and count against the store.
		v, _ := r.views(first, streamRows)
		keys := r.keys(v)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				if err := r.finish(r.be.Publish(context.Background(), v)); err != nil {
					errs[k] = err
					return
				}
				pubTime[k] += time.Since(t0)
				pubBytes[k] += int64(streamRows) * rowBytes
				r.s.forget(r.d, keys)
			}
		}()
	}
	return stop, func() ([]float64, error) {
		wg.Wait()
		var out []float64
		for k := range pubTime {
			if errs[k] != nil {
				return nil, errs[k]
			}
			if pubTime[k] > 0 {
				out = append(out, gbs(pubBytes[k], pubTime[k]))
			}
		}
		return out, nil
	}
}

func sum(xs []float64) (s float64) {
	for _, x := range xs {
		s += x
	}
	return s
}

// minLatencySamples is the fewest fetches a latency phase times, whatever
// its time budget.
const minLatencySamples = 100

// numGC is the number of collections completed so far.
func numGC() uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC
}

// measureRowOps times row-ops end to end through Publish and Fetch: each
// rep is p.rowOpsViews round trips (a publish of a view of 4 KiB rows, many
// batches, and a fetch of it back), with 2 workers, counting each row of
// each as one row-op. Only the round trips are timed: building the views
// and forgetting what they published (which keeps the store's footprint
// steady) are not. Rep 0 warms the store and the heap up and is not
// counted.
func measureRowOps(s store, p plan) (rowOps, error) {
	const rowBytes = 4 << 10
	const workers = 2
	r, err := newRig(s, p, rowBytes, p.rowOpsRows, workers)
	if err != nil {
		return rowOps{}, err
	}
	defer r.close()
	var per, secs, cps, vs []float64
	n := int64(p.rowOpsRows) * rowBytes
	srcMem, dstMem := r.slots.Mem[:n], r.slots.Mem[n:2*n]
	scratch := make([]byte, n)
	clear(scratch) // faulted in now, not in rep 1's copy
	for i := 0; i <= p.reps; i++ {
		var el time.Duration
		for k := 0; k < p.rowOpsViews; k++ {
			src, dst := r.views(0, p.rowOpsRows)
			t0 := time.Now()
			if err := r.finish(r.be.Publish(context.Background(), src)); err != nil {
				return rowOps{}, err
			}
			if err := r.finish(r.be.Fetch(context.Background(), dst)); err != nil {
				return rowOps{}, err
			}
			el += time.Since(t0)
			r.forget(src)
		}
		t0 := time.Now()
		for k := 0; k < p.rowOpsViews; k++ {
			// A publish runs on backend.PublishWorkers of the workers
			// (one is kept for fetches): its half of the copy runs on
			// as many goroutines, the fetch's on all of them.
			parallelCopy(scratch, srcMem, rowBytes, backend.PublishWorkers(workers))
			parallelCopy(dstMem, scratch, rowBytes, workers)
		}
		cp := time.Since(t0)
		runtime.GC()
		if i > 0 {
			ops := float64(2 * p.rowOpsRows * p.rowOpsViews)
			per = append(per, ops/el.Seconds())
			secs = append(secs, el.Seconds())
			cps = append(cps, ops/cp.Seconds())
			vs = append(vs, cp.Seconds()/el.Seconds())
		}
	}
	if err := r.close(); err != nil {
		return rowOps{}, err
	}
	return rowOps{Store: s.name, RowBytes: rowBytes, Rows: p.rowOpsRows, ViewsPer: p.rowOpsViews, Workers: workers,
		PerSecond: spreadOf(per), RepSeconds: spreadOf(secs).Median, MemcpyPerSecond: spreadOf(cps), VsMemcpy: spreadOf(vs)}, nil
}

// measureScaling times the backend's cost per row-op over the memory store
// at each size of package scalebench, every size once per rep, so that a
// rep's sizes run side by side under the same noise.
func measureScaling(p plan) (scaling, error) {
	const workers = 2
	sc := scaling{Store: "memory", RowBytes: scalebench.RowBytes, Workers: workers, OpsPerRep: p.scalingOps}
	type workload struct {
		n   int
		rig *scalebench.Rig
		run func(*scalebench.Rig) (time.Duration, int, error)
		ns  []float64
	}
	outstanding := func(r *scalebench.Rig) (time.Duration, int, error) {
		el, err := r.Outstanding(p.scalingOps)
		return el, p.scalingOps, err
	}
	views := func(r *scalebench.Rig) (time.Duration, int, error) { return r.Views(p.scalingOps) }
	var attempts, batches []*workload
	for _, n := range scalebench.Attempts {
		attempts = append(attempts, &workload{n: n, run: outstanding})
	}
	for _, n := range scalebench.BatchesPerView {
		batches = append(batches, &workload{n: n, run: views})
	}
	all := append(append([]*workload(nil), attempts...), batches...)
	defer func() {
		for _, z := range all {
			if z.rig != nil {
				_ = z.rig.Close()
			}
		}
	}()
	var err error
	for _, z := range attempts {
		if z.rig, err = scalebench.New(z.n, backend.Config{Workers: workers}); err != nil {
			return scaling{}, err
		}
	}
	for _, z := range batches {
		if z.rig, err = scalebench.New(z.n, backend.Config{Workers: workers, RowsPerBatch: 1}); err != nil {
			return scaling{}, err
		}
	}
	maxMin := func(zs []*workload, rep int) float64 {
		lo, hi := math.Inf(1), 0.0
		for _, z := range zs {
			lo, hi = min(lo, z.ns[rep]), max(hi, z.ns[rep])
		}
		return hi / lo
	}
	var attemptsMM, batchesMM, handoff []float64
	for i := 0; i <= p.reps; i++ { // rep 0 warms up and is not counted
		h := scalebench.Handoff(p.scalingOps)
		if i > 0 {
			handoff = append(handoff, float64(h.Nanoseconds())/float64(p.scalingOps))
		}
		for _, z := range all {
			el, ops, err := z.run(z.rig)
			if err != nil {
				return scaling{}, fmt.Errorf("%d: %w", z.n, err)
			}
			if i > 0 {
				z.ns = append(z.ns, float64(el.Nanoseconds())/float64(ops))
			}
		}
		runtime.GC()
		if i > 0 {
			attemptsMM = append(attemptsMM, maxMin(attempts, i-1))
			batchesMM = append(batchesMM, maxMin(batches, i-1))
		}
	}
	for _, z := range all {
		if err := z.rig.Close(); err != nil {
			return scaling{}, err
		}
		z.rig = nil
	}
	for _, z := range attempts {
		sc.Attempts = append(sc.Attempts, scalingPoint{N: z.n, NsPerOp: spreadOf(z.ns)})
	}
	for _, z := range batches {
		sc.Batches = append(sc.Batches, scalingPoint{N: z.n, NsPerOp: spreadOf(z.ns)})
	}
	sc.AttemptsMaxMin, sc.BatchesMaxMin, sc.HandoffNs = spreadOf(attemptsMM), spreadOf(batchesMM), spreadOf(handoff)
	return sc, nil
}

// rowKey is the row key of every store measured with the key on: a fixed
// key, as the bench's rows are its own.
var rowKey = func() *trailer.Integrity {
	in, err := trailer.NewIntegrity([]byte("blobbench row key, 32 bytes long"), nil)
	if err != nil {
		panic(err)
	}
	return in
}()

// modeRig is one other way of a store a bandwidth rep measures beside
// integrity off: "unkeyed" (the unkeyed trailer, where off writes none)
// or "keyed" (the row key on), always in that order.
type modeRig struct {
	name        string
	r           *rig
	pubT, getT  []time.Duration // this rep's rounds
	pubR, getR  []float64       // per rep: integrity off's time over this way's
	gbs, tagGBs []float64
	tagOnlyGBs  []float64
	busy        busyTally // its timed steps' busy cores, every counted rep
}

// newModeRigs makes s's other ways' rigs (store.unkeyed, store.keyed).
func newModeRigs(s store, p plan, rowBytes int64, rows, workers int) ([]*modeRig, error) {
	var out []*modeRig
	add := func(name string, make func() (driver.Driver, error)) error {
		ms := s
		ms.make = make
		r, err := newRig(ms, p, rowBytes, rows, workers)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out = append(out, &modeRig{name: name, r: r})
		return nil
	}
	var err error
	if s.unkeyed != nil {
		err = add("unkeyed", s.unkeyed)
	}
	if err == nil && s.keyed != nil {
		err = add("keyed", func() (driver.Driver, error) { return s.keyed(rowKey) })
	}
	if err != nil {
		for _, m := range out {
			_ = m.r.close()
		}
		return nil, err
	}
	return out, nil
}

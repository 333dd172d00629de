// Command blobbench measures kvblob against a memcpy of the same bytes in
// the same run, over the memory store, the fake Mooncake 0.3.13 SDK, the
// shared-filesystem store (a directory on this machine's disk), S3 (when
// versitygw is installed; it starts one on loopback, HTTPS) and Redis 7 and
// Valkey 8.1 (when installed; it starts each on loopback), each store with
// a client of its own also against that client doing the same work at the
// same concurrency: a durable write and a pread (fs), PutObject and
// GetObject (S3), pipelined SET and GET (Redis):
//
//   - publish and fetch of views of many driver calls (-view-bytes, cut at
//     -bytes-per-call) at 256 KiB, 1 MiB and 4 MiB rows with 1, 2 and 4
//     workers, beside a memcpy and an allocate-then-copy of the same bytes
//     on as many goroutines as there are workers (the machine's limit for
//     that many workers), and, for a store with a client of its own, that
//     client doing the same work at the concurrency the driver reaches
//     (its puts at the publish's: backend.PublishWorkers of the workers);
//   - fetch latency of one 1 MiB row, idle and next to two publish streams,
//     -latency-samples samples per phase (fewer, but at least 100, once a
//     phase took -latency-budget), and what those fetches cost the
//     publishes: the two streams' bandwidth next to the fetches over the
//     same streams alone for as long, right after (publish_loaded_vs_alone);
//   - row-ops per second end to end through Publish and Fetch over the
//     memory store at 4 KiB rows: each rep is 8 round trips of a view of
//     4,096 rows (tens of milliseconds, so a rep is steady state, not a
//     few wake-ups), beside a memcpy of the same bytes 4 KiB at a time on
//     as many goroutines as the backend has workers;
//   - the backend's cost per row-op as its work grows (package
//     internal/scalebench): with 16, 256 and 4,096 one-row fetches
//     outstanding, and over views of 1, 16, 256 and 1,024 one-row
//     batches, each size in every rep; a flat cost keeps each rep's
//     largest over smallest near 1.
//
// Every baseline starts from the same state whatever ran before it (see
// measureBandwidth). Every figure is the median over -reps reps, with its
// range; a ratio is taken inside each rep, side by side, then its median
// reported. It prints a table, writes blobbench.json and bandwidth.svg
// into -out, and ends with one ratios line per store, at 2 workers, with
// every ratio at every row size (name@size):
//
//	ratios[memory]: workers=2 publish_vs_memcpy@256KiB=X (min–max) fetch_vs_memcpy@256KiB=Y (min–max) ... fetch_p99_loaded_vs_idle=Z (min–max) publish_loaded_vs_alone=P (min–max) row_ops_per_s=N (min–max) row_ops_vs_memcpy=R (min–max) row_op_cost_max_vs_min_over_attempts=A (min–max) over_batches_per_view=B (min–max)
//
// Every store that takes a row key is measured three ways in the same
// rep, each on a rig of its own over the same bytes: integrity off (for
// fs, S3 and Redis the unkeyed trailer, which they always write; the
// memory store and Mooncake then write none), the unkeyed trailer where
// off writes none (Mooncake's Options.Trailer), and the row key on
// (Options.Integrity). Each store's ratios line adds, at each size,
// publish_keyed_vs_off and fetch_keyed_vs_off (Mooncake also
// publish_unkeyed_vs_off and fetch_unkeyed_vs_off), and
// publish_keyed_vs_tag_bound and fetch_keyed_vs_tag_bound: the integrity
// code's own single pass over the same rows (each row copied and, a
// chunk at a time while in cache, checksummed and tagged as a writer does
// (trailer.Sealer.Copy) or verified as a reader does (trailer.Verifier):
// the least any publish or fetch that moves a row and tags or verifies it
// does) on as many goroutines as the publish's and the fetch's workers,
// over the store's time with the key on; then the reader's pass's
// bandwidth (tag_bound_gb_s) and a writer's CRC32 and tag alone, nothing
// copied (tag_only_gb_s). A store measured beside its own client also
// gets that client's time over the same pass (for fs:
// posix_publish_vs_tag_bound and posix_fetch_vs_tag_bound): the client
// checks nothing, so where it is under the bound too, what a keyed store
// cannot pass is the medium's cost, not the integrity code's.
//
// With -redis host:port (or -redis-cluster host:port,...) it benches a
// Redis deployment you run instead of starting one: it refuses a store
// that holds any key under -prefix/ unless -force is given, and deletes
// every key it wrote, at the end, on failure and on Ctrl-C. The redis
// ratios line adds publish_vs_pipeline and fetch_vs_pipeline at each size:
// a plain go-redis pipelined SET and GET of the same bytes over the
// publish's and fetch's times, like for like (deploy.go, pipeline): on
// the driver's own connections, a driver call's rows per pipeline, as
// many pipelines at once as the driver has calls in flight, and replies
// read into buffers kept from rep to rep. A Redis rep (and an fs one) runs
// three rounds of the driver's steps and its client's, which goes first
// alternating, and takes each side's fastest round (shortStepRounds);
// -steps prints every round's times.
//
// Built with -tags mooncake (against an installed SDK: see
// stores/mooncake/cgosdk/doc.go), it also measures "mooncake-real", the
// driver over the real SDK and a mooncake_master it starts on loopback, and
// adds publish_vs_raw_sdk and fetch_vs_raw_sdk: the SDK's own
// batch_put_from and batch_get_into of the same bytes through the same
// client; and publish_vs_raw_session: the same puts made the driver's way
// (session start, scatter, end) through the same client without kvblob,
// which tells kvblob's cost from the session path's. Each baseline moves
// the driver's own rows from and into the slots the driver registered,
// in calls of as many keys as the backend cut the driver's, as many in
// flight. Its views are cut at its store file's default batching (the
// spec's config) unless -rows-per-call or -bytes-per-call is given.
//
// Progress goes to stderr. Machines are noisy: read the ratios, not the
// absolute figures.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
)

func main() {
	// On Ctrl-C (or SIGTERM) stop the backends, wait for the store calls
	// in flight, and delete what the run wrote before exiting.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		interrupted.Store(true)
		fmt.Fprintf(os.Stderr, "blobbench: %v: waiting for the calls in flight, then deleting what the run wrote\n", s)
		active.shutdown(30 * time.Second)
		cleanupAll()
		os.Exit(130)
	}()
	code := run(os.Args[1:], os.Stdout, os.Stderr)
	if interrupted.Load() {
		select {} // the handler deletes what the run wrote, then exits
	}
	os.Exit(code)
}

// renamed are flags an older blobbench had, by the name that replaced
// them: an old command line is refused with the new name, never read
// with another meaning.
var renamed = map[string]string{
	"rows": "-row-kib (comma-separated row sizes in KiB: -rows 1024 meant rows of 1 MiB, not 1,024 rows)",
}

// refuseRenamed fails on a flag of renamed among args (up to the first
// argument that is not a flag, as package flag reads them).
func refuseRenamed(args []string) error {
	for _, a := range args {
		if a == "--" || !strings.HasPrefix(a, "-") {
			return nil
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if now, ok := renamed[name]; ok {
			return fmt.Errorf("blobbench: -%s was renamed %s", name, now)
		}
	}
	return nil
}

// interrupted is set when a signal arrived: the handler, not run, then
// deletes what the run wrote, once the calls in flight ended.
var interrupted atomic.Bool

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("blobbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "bench-out", "folder for blobbench.json and bandwidth.svg")
	reps := fs.Int("reps", 5, "repetitions per measurement (the median is reported, with its range)")
	viewBytes := fs.Int64("view-bytes", 64<<20, "bytes moved per round trip")
	bytesPerCall := fs.Int64("bytes-per-call", 4<<20, "the backend's BytesPerBatch: a view is many calls (mooncake-real: its spec's bytes_per_batch unless given)")
	rowsPerCall := fs.Int("rows-per-call", 256, "the backend's RowsPerBatch (mooncake-real: its spec's rows_per_batch unless given)")
	samples := fs.Int("latency-samples", 2000, "fetches per latency phase")
	budget := fs.Duration("latency-budget", 10*time.Second, "a latency phase stops at this time once it has 100 samples (a slow store's phases would take minutes)")
	fsDir := fs.String("fs-dir", "", "fs: make the store's directory in this folder, e.g. a tmpfs such as /dev/shm to measure it without a disk's fsyncs (default: the system's temporary folder)")
	rif := fs.Int("rows-in-flight", 0, "fs and S3: the rows a driver call sends at once (Options.RowsInFlight; 0: each store's default), to tune it")
	elsewhere := fs.Bool("latency-publish-elsewhere", false, "Redis: the latency phase's publish streams go to a second server of the same build, started for the run, so the fetches share the machine with them but not the server (a control: the tail left is the machine's)")
	gap := fs.Duration("latency-gap", 0, "space a latency phase's fetches this far apart (0: back to back), to compare drivers at the same fetch load")
	noRedis := fs.Bool("no-redis", false, "skip Redis even when redis-server is installed")
	quick := fs.Bool("quick", false, "tiny sizes, for a smoke test")
	only := fs.String("stores", "", "comma-separated stores to measure (default: all)")
	rowKiB := fs.String("row-kib", "", "comma-separated row sizes to measure, in KiB each (default: 256,1024,4096)")
	workersFlag := fs.String("workers", "", "comma-separated worker counts (default: 1,2,4)")
	redisAddr := fs.String("redis", "", "bench the Redis server you run at host:port instead of starting one (user: -redis-user, password: $BLOBBENCH_REDIS_PASSWORD)")
	redisCluster := fs.String("redis-cluster", "", "bench the Redis Cluster you run, given comma-separated seed host:ports")
	redisUser := fs.String("redis-user", "", "ACL user for -redis or -redis-cluster")
	prefix := fs.String("prefix", "blobbench", "key prefix in a store you run: it must hold no key under prefix/ (unless -force); every key the run writes is deleted")
	force := fs.Bool("force", false, "bench a store that holds keys under -prefix; only the keys the run wrote are deleted")
	redisShared := fs.Bool("redis-shared-conns", false, "Redis: gets on the publishes' connections (redis.Options.FetchesShareConns), to compare with the default")
	redisYieldFlag := fs.Bool("redis-yield", false, "Redis: publish connections yield to the driver's gets (redis.Options.PublishesYield), to compare with the default")
	steps := fs.Bool("steps", false, "print every timed step of every bandwidth rep to stderr (each round's driver and baseline times, in ms)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof reads it)")
	if err := refuseRenamed(args); err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *reps < 1 || *viewBytes < 1 || *bytesPerCall < 1 || *rowsPerCall < 1 || *samples < 1 {
		fmt.Fprintln(stderr, "blobbench: -reps, -view-bytes, -bytes-per-call, -rows-per-call and -latency-samples must be positive")
		return 2
	}
	p := plan{reps: *reps, viewBytes: *viewBytes, bytesPerCall: *bytesPerCall, rowsPerCall: *rowsPerCall,
		rowSizes: []int64{256 << 10, 1 << 20, 4 << 20}, workers: []int{1, 2, 4},
		latencyFetches: *samples, latencyBudget: *budget, latencyRows: 1, rowOpsRows: 4096, rowOpsViews: 8, scalingOps: 50000, redis: !*noRedis}
	defer func() { redisSharedConns, redisYield = false, false }()
	if *quick {
		p = plan{reps: 1, viewBytes: 4 << 20, bytesPerCall: 1 << 20, rowsPerCall: 256, rowSizes: []int64{64 << 10, 1 << 20}, workers: []int{1, 2},
			latencyFetches: 20, latencyBudget: *budget, latencyRows: 1, rowOpsRows: 256, rowOpsViews: 1, scalingOps: 8192, redis: !*noRedis}
	}
	fs.Visit(func(f *flag.Flag) {
		p.bytesPerCallSet = p.bytesPerCallSet || f.Name == "bytes-per-call"
		p.rowsPerCallSet = p.rowsPerCallSet || f.Name == "rows-per-call"
	})
	redisSharedConns, redisYield = *redisShared, *redisYieldFlag
	p.latencyGap, p.latencyElsewhere = *gap, *elsewhere
	if *steps {
		p.steps = stderr
	}
	rowsInFlightFlag = *rif
	defer func() { rowsInFlightFlag = 0 }()
	if *fsDir != "" {
		if st, err := os.Stat(*fsDir); err != nil || !st.IsDir() {
			fmt.Fprintf(stderr, "blobbench: -fs-dir %s is not a folder that exists: give one the fs store may make its directory in\n", *fsDir)
			return 2
		}
	}
	fsDirFlag = *fsDir
	defer func() { fsDirFlag = "" }()
	if *only != "" {
		p.stores = strings.Split(*only, ",")
		known := []string{"memory", "mooncake-fake", "fs", "s3"}
		for _, b := range rediskit.Builds {
			known = append(known, b.Store)
		}
		for _, e := range extraStores {
			known = append(known, e.name)
		}
		for _, name := range p.stores {
			switch {
			case slices.Contains(known, name):
			case name == "mooncake-real":
				fmt.Fprintln(stderr, "blobbench: -stores mooncake-real needs a blobbench built with -tags mooncake against an installed SDK (stores/mooncake/cgosdk/doc.go)")
				return 2
			default:
				fmt.Fprintf(stderr, "blobbench: -stores: unknown store %q; want one of %s\n", name, strings.Join(known, ", "))
				return 2
			}
		}
	}
	if *rowKiB != "" {
		p.rowSizes = nil
		for _, f := range strings.Split(*rowKiB, ",") {
			n, err := strconv.ParseInt(f, 10, 64)
			if err != nil || n < 1 {
				fmt.Fprintf(stderr, "blobbench: -row-kib: %q is not a size in KiB\n", f)
				return 2
			}
			p.rowSizes = append(p.rowSizes, n<<10)
		}
	}
	if *workersFlag != "" {
		p.workers = nil
		for _, f := range strings.Split(*workersFlag, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				fmt.Fprintf(stderr, "blobbench: -workers: %q is not a worker count\n", f)
				return 2
			}
			p.workers = append(p.workers, n)
		}
	}
	if *redisAddr != "" && *redisCluster != "" {
		fmt.Fprintln(stderr, "blobbench: give -redis or -redis-cluster, not both")
		return 2
	}
	if *redisAddr != "" || *redisCluster != "" {
		t := &redisTarget{opt: redis.Options{Addrs: []string{*redisAddr}, Username: *redisUser, Password: os.Getenv("BLOBBENCH_REDIS_PASSWORD"), FetchesShareConns: *redisShared, PublishesYield: *redisYieldFlag},
			prefix: *prefix, force: *force}
		if *redisCluster != "" {
			t.opt.Addrs, t.opt.Cluster = strings.Split(*redisCluster, ","), true
		}
		if _, err := driver.KeyStem(*prefix); err != nil {
			fmt.Fprintf(stderr, "blobbench: -prefix: %v\n", err)
			return 2
		}
		p.target = t
		if p.stores == nil {
			p.stores = []string{"redis"}
		}
	}
	defer func() {
		if !interrupted.Load() {
			cleanupAll()
		}
	}()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "blobbench:", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "blobbench: -cpuprofile:", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	rep, err := measure(p, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "blobbench:", err)
		return 1
	}
	printTable(stdout, rep)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(stderr, "blobbench:", err)
		return 1
	}
	js, _ := json.MarshalIndent(rep, "", "  ")
	if err := os.WriteFile(filepath.Join(*out, "blobbench.json"), append(js, '\n'), 0o644); err != nil {
		fmt.Fprintln(stderr, "blobbench:", err)
		return 1
	}
	if err := os.WriteFile(filepath.Join(*out, "bandwidth.svg"), chart(rep), 0o644); err != nil {
		fmt.Fprintln(stderr, "blobbench:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s and %s\n", filepath.Join(*out, "blobbench.json"), filepath.Join(*out, "bandwidth.svg"))
	for _, r := range rep.Ratios {
		printRatios(stdout, r)
	}
	return 0
}

// printRatios prints a store's ratios line: every ratio at every row size
// (name@size), then the figures measured once per store.
func printRatios(w io.Writer, r ratios) {
	fmt.Fprintf(w, "ratios[%s]: workers=%d", r.Store, r.Workers)
	for _, z := range r.Sizes {
		at := strings.ReplaceAll(size(z.RowBytes), " ", "")
		fmt.Fprintf(w, " publish_vs_memcpy@%s=%s fetch_vs_memcpy@%s=%s", at, z.PublishVsMemcpy, at, z.FetchVsMemcpy)
		if z.PublishVsPlain != nil {
			fmt.Fprintf(w, " publish_vs_%s@%s=%s fetch_vs_%s@%s=%s", r.PlainName, at, z.PublishVsPlain, r.PlainName, at, z.FetchVsPlain)
		}
		if z.PublishVsSession != nil {
			fmt.Fprintf(w, " publish_vs_%s@%s=%s", r.SessionName, at, z.PublishVsSession)
		}
		if z.FetchVsChecked != nil {
			fmt.Fprintf(w, " fetch_vs_%s@%s=%s", r.CheckedName, at, z.FetchVsChecked)
		}
		for _, x := range []struct {
			name string
			v    *spread
		}{
			{"publish_unkeyed_vs_off", z.PublishUnkeyedVsOff}, {"fetch_unkeyed_vs_off", z.FetchUnkeyedVsOff},
			{"publish_keyed_vs_off", z.PublishKeyedVsOff}, {"fetch_keyed_vs_off", z.FetchKeyedVsOff},
			{"publish_keyed_vs_tag_bound", z.PublishKeyedVsTagBound}, {"fetch_keyed_vs_tag_bound", z.FetchKeyedVsTagBound},
			{"tag_bound_gb_s", z.TagBoundGBs}, {"tag_only_gb_s", z.TagOnlyGBs},
		} {
			if x.v != nil {
				fmt.Fprintf(w, " %s@%s=%s", x.name, at, x.v)
			}
		}
		if z.PlainPublishVsTagBound != nil {
			fmt.Fprintf(w, " %s_publish_vs_tag_bound@%s=%s %s_fetch_vs_tag_bound@%s=%s", r.PlainName, at, z.PlainPublishVsTagBound, r.PlainName, at, z.PlainFetchVsTagBound)
		}
	}
	fmt.Fprintf(w, " fetch_p99_loaded_vs_idle=%s publish_loaded_vs_alone=%s", r.FetchP99LoadedVsIdle, r.PublishLoadedVsAlone)
	if r.RowOpsPerSecond != nil {
		s := r.RowOpsPerSecond
		fmt.Fprintf(w, " row_ops_per_s=%.0f (%.0f–%.0f) row_ops_vs_memcpy=%s", s.Median, s.Min, s.Max, r.RowOpsVsMemcpy)
	}
	if r.AttemptsMaxVsMin != nil {
		fmt.Fprintf(w, " row_op_cost_max_vs_min_over_attempts=%s over_batches_per_view=%s", r.AttemptsMaxVsMin, r.BatchesMaxVsMin)
	}
	fmt.Fprintln(w)
}

// othersLine says how much CPU the run took and other processes took
// meanwhile: the figures are only as good as the machine was quiet.
func othersLine(p planJSON) string {
	if p.OthersCPUSeconds == nil {
		return fmt.Sprintf("the run took %.1f s of CPU (others' unknown: no /proc/stat)", p.OwnCPUSeconds)
	}
	return fmt.Sprintf("the run took %.1f s of CPU and other processes %.1f s meanwhile", p.OwnCPUSeconds, *p.OthersCPUSeconds)
}

func printTable(w io.Writer, rep *report) {
	fmt.Fprintf(w, "GOMAXPROCS=%d, load average %s at the start, %s, %d reps (median, range), views of %s cut at %s or %d rows per call (a store with batching of its own, at that: the rows/call column)\n",
		rep.Plan.GOMAXPROCS, rep.Plan.LoadAvg, othersLine(rep.Plan), rep.Plan.Reps, size(rep.Plan.ViewBytes), size(rep.Plan.BytesPerCall), rep.Plan.RowsPerCall)
	fmt.Fprintln(w, "memcpy and alloc+copy run on as many goroutines as the backend has workers (publish/memcpy: as many as may publish at once, the pub column); alloc+copy starts from a heap returned to the system;")
	fmt.Fprintln(w, "own client: the store's client doing the same work at the concurrency the driver reaches (publishing or fetching workers x the rows a call sends at once), same objects")
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\trow\tworkers\tpub\tin flight pub/fetch\trows/call\tcalls/view\tpublish GB/s\tfetch GB/s\tmemcpy GB/s\talloc+copy GB/s\tpublish/memcpy\tfetch/memcpy\tpublish/own client\tfetch/own client\t")
	for _, r := range rep.Bandwidth {
		pp, fp := "-", "-"
		if r.PublishVsPipeline != nil {
			pp, fp = r.PublishVsPipeline.String(), r.FetchVsPipeline.String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d/%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%s\t\n", r.Store, size(r.RowBytes), r.Workers, r.PublishWorkers, r.PublishConcurrency, r.Concurrency, r.RowsPerCall, r.BatchesPerView,
			r.PublishGBs, r.FetchGBs, r.MemcpyGBs, r.AllocCopyGBs, r.PublishVsMemcpy, r.FetchVsMemcpy, pp, fp)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tsamples/phase\tfetch p50 idle\tp99 idle\tp50 loaded\tp99 loaded\tp99 loaded/idle\tcollections idle/loaded\twake-up p50/p99 idle\tloaded\tpublish GB/s per stream, loaded\tpublish loaded/alone\tfetch GB/s, loaded\t")
	for _, l := range rep.Latency {
		fmt.Fprintf(tw, "%s\t%d\t%v\t%v\t%v\t%v\t%s\t%d/%d\t%v/%v\t%v/%v\t%s\t%s\t%s\t\n", l.Store, l.Samples, l.IdleP50, l.IdleP99, l.LoadedP50, l.LoadedP99, l.P99LoadedVsIdle, l.IdleGCs, l.LoadedGCs,
			l.IdleWakeP50, l.IdleWakeP99, l.LoadedWakeP50, l.LoadedWakeP99, l.StreamPublishGBs, l.PublishLoadedVsAlone, l.LoadedFetchGBs)
	}
	tw.Flush()
	for _, l := range rep.Latency {
		// Slower by more than a tenth: the noise of two phases of the
		// same work on a shared machine.
		if float64(l.IdleP50) > 1.1*float64(l.LoadedP50) || float64(l.IdleP99) > 1.1*float64(l.LoadedP99) {
			fmt.Fprintf(w, "%s: the idle phase was slower than the loaded one (p50 %v vs %v, p99 %v vs %v); a thread's wake-up took p50 %v, p99 %v idle against %v, %v loaded: "+
				"idle, the process's threads sleep between fetches and the machine (shared, a VM) takes longer to run them again\n",
				l.Store, l.IdleP50, l.LoadedP50, l.IdleP99, l.LoadedP99, l.IdleWakeP50, l.IdleWakeP99, l.LoadedWakeP50, l.LoadedWakeP99)
		}
	}
	fmt.Fprintln(w)
	ro := rep.RowOps
	fmt.Fprintf(w, "row-ops end to end (%s, %s rows, views of %d rows, %d round trips per rep of %.1f ms, %d workers): %.0f/s (%.0f–%.0f)\n",
		ro.Store, size(ro.RowBytes), ro.Rows, ro.ViewsPer, 1000*ro.RepSeconds, ro.Workers, ro.PerSecond.Median, ro.PerSecond.Min, ro.PerSecond.Max)
	fmt.Fprintf(w, "  memcpy of the same bytes, 4 KiB at a time, %d goroutines (the publish's half on %d): %.0f/s (%.0f–%.0f); row-ops vs memcpy %s\n",
		ro.Workers, backend.PublishWorkers(ro.Workers), ro.MemcpyPerSecond.Median, ro.MemcpyPerSecond.Min, ro.MemcpyPerSecond.Max, ro.VsMemcpy)
	sc := rep.Scaling
	fmt.Fprintf(w, "cost per row-op as work grows (%s, %s rows, %d workers, %d row-ops per size per rep), ns:\n", sc.Store, size(sc.RowBytes), sc.Workers, sc.OpsPerRep)
	for _, line := range []struct {
		what   string
		points []scalingPoint
		maxMin spread
	}{{"outstanding attempts", sc.Attempts, sc.AttemptsMaxMin}, {"one-row batches per view", sc.Batches, sc.BatchesMaxMin}} {
		fmt.Fprintf(w, "  %s:", line.what)
		for _, pt := range line.points {
			fmt.Fprintf(w, " %d: %.0f (%.0f–%.0f);", pt.N, pt.NsPerOp.Median, pt.NsPerOp.Min, pt.NsPerOp.Max)
		}
		fmt.Fprintf(w, " largest/smallest %s\n", line.maxMin)
	}
	fmt.Fprintf(w, "  two goroutine hand-offs alone (to a parked worker and back to the waiter), the floor under a one-batch view: %.0f (%.0f–%.0f)\n",
		sc.HandoffNs.Median, sc.HandoffNs.Min, sc.HandoffNs.Max)
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "skipped: %s\n", s)
	}
}

func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

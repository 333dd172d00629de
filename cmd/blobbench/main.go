// Command blobbench measures kvblob against a memcpy of the same bytes in
// the same run: publish and fetch round trips through the backend at
// 256 KiB, 1 MiB and 4 MiB rows with 1, 2 and 4 workers, over the memory
// store and the fake Mooncake 0.3.13 SDK; fetch latency idle and next to two
// publish streams; and rows per second through admission and mapping.
//
// It prints a table, writes blobbench.json and bandwidth.svg into -out, and
// ends with one line of ratios at 1 MiB rows and 2 workers:
//
//	ratios: publish_vs_memcpy=X fetch_vs_memcpy=Y fetch_p99_loaded_vs_idle=Z rows_per_s=N
//
// Machines are noisy: read the ratios, not the absolute figures.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("blobbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "bench-out", "folder for blobbench.json and bandwidth.svg")
	reps := fs.Int("reps", 5, "repetitions per measurement (the median is reported)")
	viewBytes := fs.Int64("view-bytes", 64<<20, "bytes moved per round trip")
	quick := fs.Bool("quick", false, "tiny sizes, for a smoke test")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *reps < 1 || *viewBytes < 1 {
		fmt.Fprintln(stderr, "blobbench: -reps and -view-bytes must be positive")
		return 2
	}
	p := plan{reps: *reps, viewBytes: *viewBytes, rowSizes: []int64{256 << 10, 1 << 20, 4 << 20}, workers: []int{1, 2, 4},
		latencyFetches: 200, latencyRows: 4, admissionRows: 1 << 20}
	if *quick {
		p = plan{reps: 1, viewBytes: 1 << 20, rowSizes: []int64{64 << 10, 1 << 20}, workers: []int{1, 2},
			latencyFetches: 20, latencyRows: 2, admissionRows: 1 << 14}
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
	fmt.Fprintf(stdout, "ratios: publish_vs_memcpy=%.3f fetch_vs_memcpy=%.3f fetch_p99_loaded_vs_idle=%.2f rows_per_s=%.0f\n",
		rep.Ratios.PublishVsMemcpy, rep.Ratios.FetchVsMemcpy, rep.Ratios.FetchP99LoadedVsIdle, rep.Ratios.RowsPerSecond)
	return 0
}

func printTable(w io.Writer, rep *report) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\trow\tworkers\tpublish GB/s\tfetch GB/s\tmemcpy GB/s\tpublish/memcpy\tfetch/memcpy\t")
	for _, r := range rep.Bandwidth {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.3f\t%.3f\t\n", r.Store, size(r.RowBytes), r.Workers,
			r.PublishGBs, r.FetchGBs, r.MemcpyGBs, r.PublishVsMemcpy, r.FetchVsMemcpy)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tfetch p50 idle\tp99 idle\tp50 loaded\tp99 loaded\tp99 loaded/idle\t")
	for _, l := range rep.Latency {
		fmt.Fprintf(tw, "%s\t%v\t%v\t%v\t%v\t%.2f\t\n", l.Store, l.IdleP50, l.IdleP99, l.LoadedP50, l.LoadedP99, l.P99LoadedVsIdle)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(w, "admission+mapping (mooncake, 4 KiB rows): %.0f rows/s, %.0f ns/row\n", rep.Admission.RowsPerSecond, rep.Admission.NsPerRow)
	fmt.Fprintf(w, "backend per-row overhead (memory, 4 KiB rows, 1 worker): %.0f ns/row over memcpy\n", rep.Overhead.NsPerRow)
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

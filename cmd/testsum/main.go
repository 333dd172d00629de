// Command testsum reads `go test -json` on stdin, prints each package's
// result as go test would (and the output of every failed test), then
// every skipped test grouped by the reason it gave, and ends with one
// line counting the tests:
//
//	skipped 2: redis-server not found (apt-get install redis-server)
//	    stores/redis: TestDriver, TestFaults
//	tests: 612 passed, 0 failed, 14 skipped
//
// The totals line is always the last: CI reads it. It exits 1 when a
// test, a package or a build failed. make test pipes go test through it,
// so a run always closes with its skips and its totals.
//
// A fresh -race build of the tree takes minutes before the first package
// reports, and some packages run for minutes, so testsum says on stderr
// that it is waiting as soon as it starts, and again every 30 s in which
// it printed nothing else: how long the run has taken, how many packages
// are done and which are running.
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	Elapsed    float64
	ImportPath string
}

type tally struct {
	passed, failed, skipped int
	packagesFailed          int
	buildFailed             int
	skips                   map[string][]skip // by reason
}

// skip is one skipped test.
type skip struct{ pkg, test string }

// progressEvery is how long testsum stays silent at most.
const progressEvery = 30 * time.Second

func main() {
	// No Stop: os.Exit ends the process, and runs no deferred call.
	tick := time.NewTicker(progressEvery)
	os.Exit(summarize(lines(os.Stdin), os.Stdout, progress{w: os.Stderr, tick: tick.C, start: time.Now()}))
}

// progress is where and when testsum says how far the run is: at each
// time tick sends, counted from start.
type progress struct {
	w     io.Writer
	tick  <-chan time.Time
	start time.Time
}

// run summarizes with no progress lines (its tests' form).
func run(in io.Reader, out io.Writer) int {
	return summarize(lines(in), out, progress{w: io.Discard})
}

// lines sends each line of in, then closes the channel.
func lines(in io.Reader) <-chan []byte {
	ch := make(chan []byte)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(in)
		sc.Buffer(nil, 1<<24) // lines of up to 16 MiB; the buffer grows as they need
		for sc.Scan() {
			ch <- append([]byte(nil), sc.Bytes()...)
		}
		if err := sc.Err(); err != nil {
			ch <- []byte(fmt.Sprintf("testsum: reading go test's output: %v", err))
		}
	}()
	return ch
}

// summarize reads go test's events from src until it closes, printing
// results to out and progress to pr.w at each of pr's ticks.
func summarize(src <-chan []byte, out io.Writer, pr progress) int {
	t := tally{skips: map[string][]skip{}}
	outputs := map[string][]string{} // package/test -> output lines
	fmt.Fprintf(pr.w, "testsum: waiting for go test (a fresh -race build takes minutes before the first package reports); a line every %s\n", progressEvery)
	running := map[string]bool{}
	done := 0
	quiet := true // nothing printed since the last tick
	for {
		var line []byte
		select {
		case at := <-pr.tick:
			if quiet {
				fmt.Fprintln(pr.w, progressLine(at.Sub(pr.start), done, running))
			}
			quiet = true
			continue
		case l, ok := <-src:
			if !ok {
				return t.finish(out)
			}
			line = l
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			fmt.Fprintln(out, string(line)) // not an event: pass it through
			continue
		}
		key := e.Package + "/" + e.Test
		switch e.Action {
		case "start":
			running[e.Package] = true
		case "output":
			trimmed := strings.TrimLeft(e.Output, " ")
			if e.Test != "" {
				if !strings.HasPrefix(trimmed, "=== ") && !strings.HasPrefix(trimmed, "--- ") {
					outputs[key] = append(outputs[key], e.Output)
				}
			} else if !strings.HasPrefix(e.Output, "=== ") && !strings.HasPrefix(e.Output, "PASS") && !strings.HasPrefix(e.Output, "FAIL\n") && !strings.HasPrefix(e.Output, "ok  ") && !strings.HasPrefix(e.Output, "FAIL\t") && !strings.HasPrefix(e.Output, "?   ") && !strings.HasPrefix(e.Output, "coverage:") {
				outputs[key] = append(outputs[key], e.Output)
			}
		case "build-output":
			fmt.Fprint(out, e.Output)
		case "build-fail":
			t.buildFailed++
		case "pass", "fail", "skip":
			if e.Test == "" {
				printPackage(out, e, outputs[key])
				quiet = false
				delete(running, e.Package)
				done++
				if e.Action == "fail" {
					t.packagesFailed++
				}
				delete(outputs, key)
				continue
			}
			switch e.Action {
			case "pass":
				t.passed++
			case "skip":
				t.skipped++
				reason := skipReason(outputs[key])
				t.skips[reason] = append(t.skips[reason], skip{e.Package, e.Test})
			case "fail":
				t.failed++
				fmt.Fprintf(out, "--- FAIL: %s (%s)\n%s", e.Test, e.Package, strings.Join(outputs[key], ""))
			}
			delete(outputs, key)
		}
	}
}

// progressLine says how far a run is: its time, the packages done and
// those running, by name (the first few).
func progressLine(took time.Duration, done int, running map[string]bool) string {
	names := make([]string, 0, len(running))
	for p := range running {
		names = append(names, p)
	}
	sort.Strings(names)
	const show = 3
	list := strings.Join(names[:min(show, len(names))], ", ")
	if len(names) > show {
		list += fmt.Sprintf(" and %d more", len(names)-show)
	}
	if len(names) == 0 {
		list = "none yet: go test is still building"
	}
	return fmt.Sprintf("testsum: %s: %d packages done; running: %s", took.Round(time.Second), done, list)
}

// finish prints the skips and the totals line, and returns the exit code.
func (t *tally) finish(out io.Writer) int {
	printSkips(out, t.skips)
	failed := t.failed > 0 || t.packagesFailed > 0 || t.buildFailed > 0
	if failed && t.failed == 0 {
		// go test follows each failed build with a fail line of every
		// package it broke, so those lines count the packages; the builds
		// count when go test's output ended before them.
		fmt.Fprintf(out, "testsum: %d packages failed (a build error, a panic, or a TestMain that failed)\n", max(t.packagesFailed, t.buildFailed))
	}
	fmt.Fprintf(out, "tests: %d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped)
	if failed {
		return 1
	}
	return 0
}

// noReason stands for a skip that logged nothing (t.SkipNow).
const noReason = "(no reason given)"

// logLine is the head of a line a test logged: "    file_test.go:12: ".
var logLine = regexp.MustCompile(`^\s*[\w.-]+\.go:\d+: `)

// skipReason is what a skipped test logged last: its t.Skip message,
// with the file:line head cut and any continuation lines joined.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if logLine.MatchString(lines[i]) {
			return joinLogged(lines[i:])
		}
	}
	return noReason
}

// joinLogged is one logged message on one line: its first line without
// the file:line head, then its continuation lines, each trimmed.
func joinLogged(lines []string) string {
	parts := append([]string{logLine.ReplaceAllString(lines[0], "")}, lines[1:]...)
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	if r := strings.TrimSpace(strings.Join(parts, " ")); r != "" {
		return r
	}
	return noReason
}

// printSkips prints the skipped tests grouped by reason, the largest
// group first (then by reason), each group's tests by package.
func printSkips(out io.Writer, skips map[string][]skip) {
	reasons := slices.SortedFunc(maps.Keys(skips), func(a, b string) int {
		return cmp.Or(cmp.Compare(len(skips[b]), len(skips[a])), strings.Compare(a, b))
	})
	for _, r := range reasons {
		fmt.Fprintf(out, "skipped %d: %s\n", len(skips[r]), r)
		byPkg := map[string][]string{}
		var pkgs []string
		for _, s := range skips[r] {
			if byPkg[s.pkg] == nil {
				pkgs = append(pkgs, s.pkg)
			}
			byPkg[s.pkg] = append(byPkg[s.pkg], s.test)
		}
		sort.Strings(pkgs)
		for _, p := range pkgs {
			tests := byPkg[p]
			sort.Strings(tests)
			fmt.Fprintf(out, "    %s: %s\n", p, strings.Join(tests, ", "))
		}
	}
}

func printPackage(out io.Writer, e event, lines []string) {
	switch e.Action {
	case "pass":
		fmt.Fprintf(out, "ok  \t%s\t%.3fs\n", e.Package, e.Elapsed)
	case "skip":
		fmt.Fprintf(out, "?   \t%s\t[no test files]\n", e.Package)
	case "fail":
		fmt.Fprint(out, strings.Join(lines, ""))
		fmt.Fprintf(out, "FAIL\t%s\t%.3fs\n", e.Package, e.Elapsed)
	}
}

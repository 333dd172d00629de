// Command testsum reads `go test -json` on stdin, prints each package's
// result as go test would (and the output of every failed test), and ends
// with one line counting the tests:
//
//	tests: 612 passed, 0 failed, 14 skipped
//
// It exits 1 when a test, a package or a build failed. make test pipes
// go test through it, so a run always closes with its totals.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
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
}

func main() { os.Exit(run(os.Stdin, os.Stdout)) }

func run(in io.Reader, out io.Writer) int {
	var t tally
	outputs := map[string][]string{} // package/test -> output lines
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			fmt.Fprintln(out, string(line)) // not an event: pass it through
			continue
		}
		key := e.Package + "/" + e.Test
		switch e.Action {
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
			case "fail":
				t.failed++
				fmt.Fprintf(out, "--- FAIL: %s (%s)\n%s", e.Test, e.Package, strings.Join(outputs[key], ""))
			}
			delete(outputs, key)
		}
	}
	fmt.Fprintf(out, "tests: %d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped)
	if t.failed > 0 || t.packagesFailed > 0 || t.buildFailed > 0 {
		if t.failed == 0 {
			fmt.Fprintf(out, "testsum: %d packages failed (a build error, a panic, or a TestMain that failed)\n", t.packagesFailed+t.buildFailed)
		}
		return 1
	}
	return 0
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

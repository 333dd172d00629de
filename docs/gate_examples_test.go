package docs_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The gate's examples run the gate itself on this machine's servers: the
// README's `make run` output, and docs/sdk-ci.md's --json report. Their
// times differ from run to run, and the stores finish in any order, so
// those are compared through gateShape, never byte for byte; everything
// else (every row, count, SDK, skip reason and unwitnessed rule) is.
func init() {
	examples["make-run"] = func(t *testing.T, w *workspace) string {
		return gateRun(t, w).out
	}
	examples["gate-json"] = func(t *testing.T, w *workspace) string {
		r := gateRun(t, w)
		return "$ gate --json report.json\n$ cat report.json\n" + abridge(t, r.json, 2)
	}
	shapes["make-run"] = gateShape
	shapes["gate-json"] = gateShape
}

type gateResult struct{ out, json string }

var (
	gateMu   sync.Mutex
	gateDone *gateResult
)

// gateRun builds and runs the gate over every store in the repository,
// once per test binary (both examples show that one run), and skips the
// example when this machine cannot give the documented run: a store's
// server missing, or not root (the fs row then runs in a temporary
// folder, not a tmpfs).
func gateRun(t *testing.T, w *workspace) gateResult {
	t.Helper()
	gateMu.Lock()
	defer gateMu.Unlock()
	if gateDone != nil {
		return *gateDone
	}
	if os.Geteuid() != 0 {
		t.Skip("the documented gate run is root's (its fs row runs on a tmpfs); run as root to compare it")
	}
	gate := filepath.Join(w.bin, "gate")
	if _, err := os.Stat(gate); err != nil {
		build := exec.Command("go", "build", "-o", gate, "./cmd/gate")
		build.Dir = w.root
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/gate: %v\n%s", err, out)
		}
	}
	report := filepath.Join(t.TempDir(), "report.json")
	args := []string{"-C", w.root, "--json", report}
	cmd := exec.Command(gate, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("gate %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	if m := regexp.MustCompile(`(?m)^  (\S+) skipped \d+: did not run: .*|^  (\S+) skipped: .*`).FindString(out.String()); m != "" {
		t.Skipf("a store did not run here, so the documented output cannot be compared:\n%s", m)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	r := gateResult{out: out.String(), json: string(b)}
	gateDone = &r
	return r
}

var (
	aDuration = regexp.MustCompile(`\b\d+(\.\d+)?(ns|µs|ms|s|m\d+(\.\d+)?s)\b`)
	aSeconds  = regexp.MustCompile(`"seconds": [0-9.e+-]+`)
	spaces    = regexp.MustCompile(` {2,}`)
	doneLine  = regexp.MustCompile(`^gate: \S+ done in `)
)

// gateShape is the gate's output with what no two runs share taken out:
// durations (a TIME column, a round trip, a "done in"), JSON seconds, the
// padding that aligns the table (its width follows the durations), and
// the order in which the stores' "done" lines arrive.
func gateShape(s string) string {
	s = aDuration.ReplaceAllString(s, "<t>")
	s = aSeconds.ReplaceAllString(s, `"seconds": <t>`)
	s = spaces.ReplaceAllString(s, "  ")
	lines := strings.Split(s, "\n")
	for i := 0; i < len(lines); {
		j := i
		for j < len(lines) && doneLine.MatchString(lines[j]) {
			j++
		}
		sort.Strings(lines[i:j])
		i = j + 1
	}
	return strings.Join(lines, "\n")
}

// abridge re-indents a JSON document as the gate writes it, keeping only
// the first keep elements of every array: the documented report shows
// each field once, not every check.
func abridge(t *testing.T, doc string, keep int) string {
	t.Helper()
	var b strings.Builder
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := writeJSON(&b, dec, "", keep); err != nil {
		t.Fatalf("the gate's --json report does not parse: %v", err)
	}
	return b.String() + "\n"
}

// writeJSON copies the next value of dec to b, indented two spaces a
// level, its objects' keys in the order dec gives them.
func writeJSON(b *strings.Builder, dec *json.Decoder, indent string, keep int) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	in := indent + "  "
	switch tok {
	case json.Delim('{'):
		b.WriteString("{")
		for n := 0; dec.More(); n++ {
			k, err := dec.Token()
			if err != nil {
				return err
			}
			if n > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(b, "\n%s%q: ", in, k)
			if err := writeJSON(b, dec, in, keep); err != nil {
				return err
			}
		}
		b.WriteString("\n" + indent + "}")
	case json.Delim('['):
		b.WriteString("[")
		n := 0
		for ; dec.More(); n++ {
			if n >= keep {
				var skip json.RawMessage
				if err := dec.Decode(&skip); err != nil {
					return err
				}
				continue
			}
			if n > 0 {
				b.WriteString(",")
			}
			b.WriteString("\n" + in)
			if err := writeJSON(b, dec, in, keep); err != nil {
				return err
			}
		}
		if n > keep {
			fmt.Fprintf(b, "\n%s(%d more)", in, n-keep)
		}
		if n > 0 {
			b.WriteString("\n" + indent)
		}
		b.WriteString("]")
	default:
		out, err := json.Marshal(tok)
		if err != nil {
			return err
		}
		b.Write(out)
		return nil
	}
	_, err = dec.Token() // the closing delimiter
	return err
}

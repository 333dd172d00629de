package docs_test

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the example outputs in the docs from what the commands print now")

// outputMarker, on the line before a fence, names the example whose output
// the block shows: the block is what examples[ID] prints, compared byte for
// byte (and rewritten with -update). A block without one is prose.
var outputMarker = regexp.MustCompile(`^\s*<!-- output: ([\w-]+) -->\s*$`)

// example runs the commands of one documented example and returns what a
// terminal shows: each command after "$ ", then its output.
type example func(t *testing.T, w *workspace) string

// examples are the docs' example outputs, by the ID their marker gives.
var examples = map[string]example{
	// docs/sdk-ci.md's walk through a new Mooncake version: copy the spec,
	// check it against the new release's header, which renumbered a code
	// the copy still has at its old value, then diff it after two edits.
	"new-version": func(t *testing.T, w *workspace) string {
		return w.run(t, "drivergen", "new", "--from", "spec/mooncake-0.3.13.yaml", "--version", "0.3.14")
	},
	"validate-header": func(t *testing.T, w *workspace) string {
		w.run(t, "drivergen", "new", "--from", "spec/mooncake-0.3.13.yaml", "--version", "0.3.14")
		w.header(t, "spec/mooncake-0.3.13.yaml", map[string]string{"LEASE_EXPIRED": "-715"})
		return w.run(t, "drivergen", "validate", "-header", "<sdk>/include", "-enum", "ErrorCode", "spec/mooncake-0.3.14.yaml")
	},
	"diff-new-version": func(t *testing.T, w *workspace) string {
		w.run(t, "drivergen", "new", "--from", "spec/mooncake-0.3.13.yaml", "--version", "0.3.14")
		w.edit(t, "spec/mooncake-0.3.14.yaml", leaseExpiredRenumbered, absentIsAFault)
		return w.run(t, "drivergen", "diff", "spec/mooncake-0.3.13.yaml", "spec/mooncake-0.3.14.yaml")
	},
	"diff-redis-valkey": func(t *testing.T, w *workspace) string {
		return w.run(t, "drivergen", "diff", "spec/redis-7.yaml", "spec/redis-valkey-8.1.yaml")
	},
}

// shapes are, for the examples whose output differs from run to run in
// parts (times, order), what of it a doc is compared by; the others are
// compared byte for byte.
var shapes = map[string]func(string) string{}

// same reports whether a doc's block shows what example id printed.
func same(id, doc, got string) bool {
	if shape := shapes[id]; shape != nil {
		return shape(doc) == shape(got)
	}
	return doc == got
}

// The two edits the walk-through makes to the new version's spec.
var (
	leaseExpiredRenumbered = [2]string{"LEASE_EXPIRED: {value: -707,", "LEASE_EXPIRED: {value: -715,"}
	absentIsAFault         = [2]string{"OBJECT_NOT_FOUND: {result: MISS, written: \"no\", stageable: true}", "OBJECT_NOT_FOUND: {result: FAULT, written: \"no\", stageable: true}"}
)

// TestExampleOutputsAreWhatTheCommandsPrint runs every example a doc
// marks and compares the block with what the commands print now; a doc
// that shows an output no run gives fails, naming the file and line.
// -update rewrites the blocks.
func TestExampleOutputsAreWhatTheCommandsPrint(t *testing.T) {
	if testing.Short() {
		t.Skip("builds drivergen and runs the docs' examples")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "drivergen"), "./cmd/drivergen")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/drivergen: %v\n%s", err, out)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, doc := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		rel, _ := filepath.Rel(root, doc)
		src, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		blocks := outputBlocks(t, rel, src)
		for _, b := range blocks {
			used[b.id] = true
			ex, ok := examples[b.id]
			if !ok {
				t.Errorf("%s:%d: no example named %q (examples_test.go's examples)", rel, b.line, b.id)
				continue
			}
			// A subtest each, so an example this machine cannot run
			// (t.Skip) skips alone.
			t.Run(b.id, func(t *testing.T) {
				got := ex(t, newWorkspace(t, root, bin))
				if !same(b.id, b.text, got) {
					if !*update {
						t.Errorf("%s:%d: example %q differs from what the commands print now (run go test ./docs -run TestExampleOutputs -update):\n--- doc\n%s--- run\n%s", rel, b.line, b.id, b.text, got)
					}
					b.text = got
				}
			})
		}
		if *update {
			if out := rewrite(src, blocks); !bytes.Equal(out, src) {
				if err := os.WriteFile(doc, out, 0o644); err != nil {
					t.Fatal(err)
				}
				t.Logf("rewrote %s", rel)
			}
		}
	}
	for id := range examples {
		if !used[id] {
			t.Errorf("example %q is shown by no doc: mark its block with <!-- output: %s -->, or drop it", id, id)
		}
	}
}

// outputBlock is one marked fence of a doc: its lines' span, the indent
// they share and their text, unindented.
type outputBlock struct {
	id          string
	line        int // of the first line inside the fence, from 1
	first, last int // the lines inside the fence, as indexes [first, last)
	indent      string
	text        string
}

func outputBlocks(t *testing.T, file string, src []byte) []*outputBlock {
	t.Helper()
	lines := strings.SplitAfter(string(src), "\n")
	var blocks []*outputBlock
	for i := 0; i < len(lines); i++ {
		m := outputMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		j := i + 1
		for j < len(lines) && strings.TrimSpace(lines[j]) == "" {
			j++
		}
		if j == len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[j]), "```") {
			t.Errorf("%s:%d: the output marker is not followed by a ``` block", file, i+1)
			continue
		}
		indent := lines[j][:len(lines[j])-len(strings.TrimLeft(lines[j], " "))]
		b := &outputBlock{id: m[1], line: j + 2, first: j + 1, indent: indent}
		k := j + 1
		var text strings.Builder
		for ; k < len(lines) && strings.TrimSpace(lines[k]) != "```"; k++ {
			text.WriteString(strings.TrimPrefix(lines[k], indent))
		}
		if k == len(lines) {
			t.Errorf("%s:%d: the block never closes", file, j+1)
			continue
		}
		b.last, b.text = k, text.String()
		blocks = append(blocks, b)
		i = k
	}
	return blocks
}

// rewrite puts each block's text back into src, indented as it was.
func rewrite(src []byte, blocks []*outputBlock) []byte {
	lines := strings.SplitAfter(string(src), "\n")
	var out strings.Builder
	at := 0
	for _, b := range blocks {
		out.WriteString(strings.Join(lines[at:b.first], ""))
		sc := bufio.NewScanner(strings.NewReader(b.text))
		for sc.Scan() {
			if sc.Text() == "" {
				out.WriteString("\n")
				continue
			}
			out.WriteString(b.indent + sc.Text() + "\n")
		}
		at = b.last
	}
	out.WriteString(strings.Join(lines[at:], ""))
	return []byte(out.String())
}

// workspace is a folder holding a copy of the repository's specs, where an
// example's commands run as a user runs them from a checkout's root.
// "<sdk>" in a command names the workspace's SDK folder, and the output
// says "<sdk>" where it names that folder.
type workspace struct {
	dir, bin, root string
}

func newWorkspace(t *testing.T, root, bin string) *workspace {
	t.Helper()
	w := &workspace{dir: t.TempDir(), bin: bin, root: root}
	specs, err := filepath.Glob(filepath.Join(root, "spec", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(w.dir, "spec"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(w.dir, "spec", filepath.Base(s)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

func (w *workspace) sdk() string { return filepath.Join(w.dir, "sdk") }

// run runs a command of the repository's (drivergen) in the workspace and
// returns "$ command" and what it printed, whatever its exit code.
func (w *workspace) run(t *testing.T, name string, args ...string) string {
	t.Helper()
	real := make([]string, len(args))
	for i, a := range args {
		real[i] = strings.ReplaceAll(a, "<sdk>", w.sdk())
	}
	cmd := exec.Command(filepath.Join(w.bin, name), real...)
	cmd.Dir = w.dir
	out, err := cmd.CombinedOutput()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return "$ " + name + " " + strings.Join(args, " ") + "\n" + strings.ReplaceAll(string(out), w.sdk(), "<sdk>")
}

// edit makes each replacement in the workspace's file, each exactly once.
func (w *workspace) edit(t *testing.T, file string, edits ...[2]string) {
	t.Helper()
	path := filepath.Join(w.dir, file)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, e := range edits {
		if strings.Count(s, e[0]) != 1 {
			t.Fatalf("%s holds %q %d times; the example edits it once", file, e[0], strings.Count(s, e[0]))
		}
		s = strings.Replace(s, e[0], e[1], 1)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// specCode matches a code of a spec's code table.
var specCode = regexp.MustCompile(`(?m)^  ([A-Z][A-Z0-9_]*): (?:\{value: )?(-?\d+)`)

// header writes <sdk>/include/types.h, declaring enum class ErrorCode with
// the codes of spec, values changed as given: the SDK's header as a new
// release ships it.
func (w *workspace) header(t *testing.T, spec string, changed map[string]string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.dir, spec))
	if err != nil {
		t.Fatal(err)
	}
	var h strings.Builder
	h.WriteString("#pragma once\n#include <cstdint>\n\nnamespace mooncake {\n\nenum class ErrorCode : int32_t {\n")
	for _, m := range specCode.FindAllStringSubmatch(string(b), -1) {
		v := m[2]
		if c, ok := changed[m[1]]; ok {
			v = c
		}
		fmt.Fprintf(&h, "    %s = %s,\n", m[1], v)
	}
	h.WriteString("};\n\n}  // namespace mooncake\n")
	dir := filepath.Join(w.sdk(), "include")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "types.h"), []byte(h.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

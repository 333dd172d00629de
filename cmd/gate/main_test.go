package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/gen"
	"github.com/kvblob/kvblob/generated/memory/memorycases"
	"github.com/kvblob/kvblob/internal/bound"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// base are the flags every test run gives: the spec and generated folders
// from here.
var base = []string{"-spec", "../../spec", "-out", "../../generated"}

// runCLI runs the gate as its command line does, with a real go test.
func runCLI(args ...string) (int, string, string) {
	return runGate(execGoTest, args...)
}

// runWith runs the gate over the go test that goTest plays (a recorded
// stream, in milliseconds), and fails t when it has not returned within a
// minute: a reader that never sees its stream end (the pipe left open)
// fails its test in a minute rather than at the binary's timeout.
func runWith(t *testing.T, goTest goTester, args ...string) (code int, out, stderr string) {
	t.Helper()
	bound.Within(t, time.Minute, "the gate over a played go test", func() { code, out, stderr = runGate(goTest, args...) })
	return code, out, stderr
}

func runGate(goTest goTester, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := gate{goTest: goTest, generate: generateOnce}.run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// generated holds what gen.Generate returned for a spec folder, by the
// folder and a digest of every file in it, for generateOnce.
var generated = struct {
	sync.Mutex
	files map[string]map[string][]byte
}{files: map[string]map[string][]byte{}}

// generateOnce is gen.Generate with gen.DefaultOptions, called once per
// spec folder and content: the gate's tests run it on the same spec/
// dozens of times, and its output depends on the specs alone. What the
// gate checks against the generated folder (gen.Drift) still runs every
// time.
func generateOnce(specDir string, specs []*gen.Spec) (map[string][]byte, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\n", specDir)
	if err := filepath.WalkDir(specDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		fmt.Fprintf(h, "%s %d\n", p, len(b))
		h.Write(b)
		return err
	}); err != nil {
		return nil, err
	}
	key := string(h.Sum(nil))
	generated.Lock()
	defer generated.Unlock()
	if files, ok := generated.files[key]; ok {
		return files, nil
	}
	files, err := gen.Generate(specs, gen.DefaultOptions)
	if err == nil {
		generated.files[key] = files
	}
	return files, err
}

// stream is a go test -json stream the tests write by hand, event by
// event, and the go test that answers with it (recording how it was run).
type stream struct {
	raw       []string // lines go itself prints before the events
	events    []event
	args, env []string
}

func (s *stream) goTest(_ string, args, env []string, out io.Writer) error {
	s.args, s.env = args, env
	for _, l := range s.raw {
		fmt.Fprintln(out, l)
	}
	for _, e := range s.events {
		b, _ := json.Marshal(e)
		fmt.Fprintf(out, "%s\n", b)
	}
	return nil
}

const pkg = "github.com/kvblob/kvblob/stores/memory"

// store starts a store's test as Run does: its name announced, its facts.
func (s *stream) store(name string, facts ...string) *stream {
	s.out(conformanceTest, conformance.FactLine(conformance.FactStore, name))
	s.events = append(s.events, event{Action: "run", Package: pkg, Test: conformanceTest + "/" + name})
	for i := 0; i+1 < len(facts); i += 2 {
		s.out(conformanceTest+"/"+name, conformance.FactLine(facts[i], facts[i+1]))
	}
	return s
}

// out is a t.Log line of test.
func (s *stream) out(test, line string) *stream {
	s.events = append(s.events, event{Action: "output", Package: pkg, Test: test, Output: "    suite.go:1: " + line + "\n"})
	return s
}

// check is a check of store that ends with action (pass, fail, skip),
// having logged lines (facts among them, written as conformance.FactLine lines).
func (s *stream) check(store, name, action string, lines ...string) *stream {
	test := conformanceTest + "/" + store + "/" + name
	s.events = append(s.events, event{Action: "run", Package: pkg, Test: test}, event{Action: "output", Package: pkg, Test: test, Output: "=== RUN   " + test + "\n"})
	for _, l := range lines {
		if raw, ok := strings.CutPrefix(l, "raw:"); ok { // the process's own output, at the margin
			s.events = append(s.events, event{Action: "output", Package: pkg, Test: test, Output: raw + "\n"})
			continue
		}
		if strings.HasPrefix(l, "  ") { // a continuation line, as go test indents it
			s.events = append(s.events, event{Action: "output", Package: pkg, Test: test, Output: "        " + strings.TrimLeft(l, " ") + "\n"})
			continue
		}
		s.out(test, l)
	}
	s.events = append(s.events, event{Action: "output", Package: pkg, Test: test, Output: "--- " + strings.ToUpper(action) + ": " + test + " (0.01s)\n"},
		event{Action: action, Package: pkg, Test: test, Elapsed: 0.01})
	return s
}

// end ends a store's test, and its package.
func (s *stream) end(store, action string) *stream {
	s.events = append(s.events, event{Action: action, Package: pkg, Test: conformanceTest + "/" + store, Elapsed: 0.25})
	return s
}

func kind(k string) string { return conformance.FactLine(conformance.FactKind, k) }
func spec(p string) string { return conformance.FactLine(conformance.FactSpec, p) }

func TestUsage(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-help"}, 0, "usage: gate"},
		{[]string{"--sdk-enum", "E"}, 2, "--sdk-enum needs --sdk-include DIR"},
		{[]string{"--sdk-include", "x", "--sdk-enum", "E"}, 2, "select that store with --store NAME"},
		{[]string{"--sdk", "other"}, 2, `--sdk "other"; want fake or real`},
		{[]string{"extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--junit", filepath.Join("no", "such", "dir", "gate.xml")}, 2, "gate: writing the report: cannot write no/such/dir/gate.xml: no folder no/such/dir"},
		{[]string{"--json", t.TempDir()}, 2, "gate: writing the report: cannot write " + os.TempDir()},
		{[]string{"--junit", "/proc/gate.xml"}, 2, "gate: writing the report: cannot write /proc/gate.xml: folder /proc takes no new file"},
		{[]string{"--json", "/dev/null/gate.json"}, 2, "cannot write /dev/null/gate.json: no folder /dev/null"},
		{[]string{"-spec", "no-such-spec"}, 2, "gate: -spec no-such-spec is no folder; run the gate from the root of a kvblob checkout"},
		{append(base[:2:2], "-out", "no-such-out"), 2, "gate: -out no-such-out is no folder"},
		{[]string{"-C", filepath.Join("no", "such", "dir")}, 2, "gate: -C no/such/dir: chdir no/such/dir: no such file or directory"},
	}
	for _, c := range cases {
		never := func(string, []string, []string, io.Writer) error {
			t.Errorf("%v: go test ran; a usage error is found before the run", c.args)
			return nil
		}
		code, _, stderr := runWith(t, never, c.args...)
		assert.Equal(t, c.code, code, "%v", c.args)
		assert.Contains(t, stderr, c.want, "%v", c.args)
	}
}

// TestOutsideTheCheckoutIsASetUpError: run outside kvblob's module (in
// no module, or in another), the gate exits 2 before it runs anything.
func TestOutsideTheCheckoutIsASetUpError(t *testing.T) {
	never := func(string, []string, []string, io.Writer) error {
		t.Error("go test ran outside the checkout")
		return nil
	}
	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n\ngo 1.24\n"), 0o644))
	for dir, want := range map[string]string{
		t.TempDir(): "the gate runs inside kvblob's module (no go.mod above",
		other:       `is module "example.com/other"; run it from a kvblob checkout`,
	} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			t.Chdir(dir)
			code, _, stderr := runWith(t, never, "--junit", filepath.Join(dir, "gate.xml"), "--json", filepath.Join(dir, "gate.json"))
			assert.Equal(t, 2, code)
			assert.Contains(t, stderr, want)
			assertSetupReports(t, dir, want)
		})
	}
}

// assertSetupReports checks that dir holds the reports of a gate that
// could not set up: one error entry saying want, and exit code 2.
func assertSetupReports(t *testing.T, dir, want string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "gate.xml"))
	require.NoError(t, err, "a set-up error still writes the JUnit report")
	assertValidJUnit(t, b)
	assert.Contains(t, string(b), "<error")
	assert.Contains(t, string(b), xmlEscaped(want))
	b, err = os.ReadFile(filepath.Join(dir, "gate.json"))
	require.NoError(t, err, "a set-up error still writes the JSON report")
	var got report
	require.NoError(t, json.Unmarshal(b, &got))
	assert.Equal(t, 2, got.ExitCode)
	require.Len(t, got.Stores, 1)
	require.Len(t, got.Stores[0].Checks, 1)
	assert.Equal(t, statusError, got.Stores[0].Checks[0].Status)
	assert.Contains(t, got.Stores[0].Checks[0].Message, want)
}

func xmlEscaped(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// TestAStoreIsARowOfTheTable: --store takes any row a package announces,
// one no spec names included (s3-large is the S3 package's second suite);
// a name no package announces is refused after the run, naming every row,
// and the reports carry the refusal as an error entry.
func TestAStoreIsARowOfTheTable(t *testing.T) {
	announce := func() *stream {
		s := &stream{}
		s.out(conformanceTest, conformance.FactLine(conformance.FactStore, "s3"))
		s.out(conformanceTest, conformance.FactLine(conformance.FactStore, "s3-large"))
		return s
	}
	s := announce()
	s.store("s3-large").check("s3-large", "a_check", "pass", kind("check")).end("s3-large", "pass")
	code, out, stderr := runWith(t, s.goTest, append(base, "--store", "s3-large")...)
	assert.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, strings.Join(s.args, " "), "-run ^(TestConformance|TestWitness)$/^(s3-large)$")
	assert.Regexp(t, `(?m)^s3-large\s`, out)

	dir := t.TempDir()
	code, _, stderr = runWith(t, announce().goTest, append(base, "--store", "nosuch", "--junit", filepath.Join(dir, "gate.xml"), "--json", filepath.Join(dir, "gate.json"))...)
	assert.Equal(t, 2, code)
	want := `unknown store "nosuch"; want one of s3, s3-large`
	assert.Contains(t, stderr, want)
	assertSetupReports(t, dir, want)
}

// TestDashCRunsInTheCheckoutGiven: -C DIR runs the gate as if started in
// DIR, a kvblob checkout, from anywhere (here: a folder outside any
// module), and takes relative paths from there.
func TestDashCRunsInTheCheckoutGiven(t *testing.T) {
	root, err := moduleRoot()
	require.NoError(t, err)
	t.Chdir(t.TempDir())
	s := &stream{}
	s.store("memory").check("memory", "a_check", "pass", kind("check")).end("memory", "pass")
	code, out, stderr := runWith(t, s.goTest, "-C", root, "--store", "memory")
	assert.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, stderr, "gate: checking generated against spec")
	assert.Regexp(t, `(?m)^memory\s`, out)
}

// TestGoTestArgs: every store's TestConformance, or the stores named (by
// -run's second level, their names quoted), and the real SDK's build.
func TestGoTestArgs(t *testing.T) {
	assert.Equal(t, []string{"-count=1", "-json", "-timeout", "30m0s", "-run", "^(TestConformance|TestWitness)$", "./a"}, testArgs([]string{"./a"}, nil, nil, false, 30*time.Minute))
	assert.Equal(t, []string{"-count=1", "-json", "-timeout", "1h0m0s", "-run", `^(TestConformance|TestWitness)$/^(redis|redis-valkey-8\.1|redis-7)$`, "-tags", "mooncake", "./a", "./b"},
		testArgs([]string{"./a", "./b"}, []string{"redis", "redis-valkey-8.1"}, []string{"redis-7", "redis-valkey-8.1"}, true, time.Hour))

	s := (&stream{}).store("memory", conformance.FactSDK, "kvblob-memory 1").check("memory", "x", "pass").end("memory", "pass")
	code, _, stderr := runWith(t, s.goTest, append(base, "--store", "memory", "--packages", "./stores/memory")...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{"-count=1", "-json", "-timeout", "30m0s", "-run", "^(TestConformance|TestWitness)$/^(memory)$", "./stores/memory"}, s.args, "the gate's default bound")
	code, _, stderr = runWith(t, s.goTest, append(base, "--store", "memory", "--packages", "./stores/memory", "--timeout", "45m")...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, []string{"-count=1", "-json", "-timeout", "45m0s", "-run", "^(TestConformance|TestWitness)$/^(memory)$", "./stores/memory"}, s.args)
	assert.Empty(t, s.env)

	// A path from the module root is one, not a standard library package.
	code, _, stderr = runWith(t, s.goTest, append(base, "--store", "memory", "--packages", "stores/memory")...)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "./stores/memory", s.args[len(s.args)-1])
}

// TestTheStreamBecomesTheTable feeds the gate go test streams written by
// hand and checks what it makes of each: the table's counts, round trip
// and skip lines, the exit code, what stderr says.
func TestTheStreamBecomesTheTable(t *testing.T) {
	cases := []struct {
		name   string
		stream *stream
		args   []string
		code   int
		out    []string // in stdout, in this order
		stderr []string
	}{{
		name: "a passing store",
		stream: (&stream{}).store("memory", conformance.FactSDK, "kvblob-memory 1", conformance.FactChecks, "3").
			check("memory", "round_trip_is_byte_for_byte", "pass", kind("check")).
			check("memory", "store_get/NOT_FOUND", "pass", kind("case"), spec("spec/memory.yaml:40:5")).
			check("memory", "backend_round_trip", "pass", kind("check"), conformance.FactLine(conformance.FactRoundTrip, "16 x 256 KiB in 9.2ms")).
			end("memory", "pass"),
		code:   0,
		out:    []string{"memory  kvblob-memory 1  3       0       0        -          250ms  16 x 256 KiB in 9.2ms", "gate: ok"},
		stderr: []string{"gate: memory done in 250ms: 3 passed, 0 failed, 0 skipped"},
	}, {
		name: "go's download progress on a fresh machine is not a set-up error",
		stream: (&stream{raw: []string{"go: downloading go.uber.org/goleak v1.3.0"}}).store("memory", conformance.FactSDK, "kvblob-memory 1").
			check("memory", "round_trip_is_byte_for_byte", "pass", kind("check")).
			end("memory", "pass"),
		code:   0,
		out:    []string{"gate: ok"},
		stderr: []string{"go: downloading go.uber.org/goleak v1.3.0", "gate: memory done in 250ms: 1 passed"},
	}, {
		name: "skips grouped by reason, the skip's reason alone",
		stream: (&stream{}).store("fs", conformance.FactSDK, "posix").
			check("fs", "a", "skip", kind("check"), "the store stages no HoldAccess scenario (Scenarios.HoldAccess is nil)").
			check("fs", "b", "skip", kind("check"), "get of row \"a\": MISS, tolerated", "the store stages no HoldAccess scenario (Scenarios.HoldAccess is nil)").
			check("fs", "c", "skip", kind("check"), "known failure (a reason): put of row \"a\": READY,", "  but a get answered FAULT").
			end("fs", "pass"),
		code: 0,
		out: []string{"fs     posix  0       0       3        -          250ms  failed",
			"  fs skipped 1: known failure (a reason): put of row \"a\": READY,\nbut a get answered FAULT",
			"  fs skipped 2: the store stages no HoldAccess scenario (Scenarios.HoldAccess is nil)"},
	}, {
		// The real Mooncake SDK logs through glog to the process's stderr,
		// which go test hands to the check running at the time.
		name: "the SDK's own log lines are no part of a passed or skipped check's message, and follow a failure's",
		stream: (&stream{}).store("mooncake", conformance.FactSDK, "mooncake-store 0.3.12.post1 (real SDK)").
			check("mooncake", "a", "pass", kind("check"), "raw:I20261204 15:44:01.946811 30665 client_metric.cpp:102] Client metrics enabled").
			check("mooncake", "b", "skip", kind("case"), "raw:I20261204 15:45:33.1 4036 real_client.cpp:1] setup", "spec/mooncake-0.3.13.yaml:193:23: a real server cannot stage this case",
				"raw:I20261204 15:45:34.440981 4036 transfer_metadata.cpp:583] removeSegmentDesc 127.0.0.1:15491 finish").
			check("mooncake", "c", "skip", kind("case"), "spec/mooncake-0.3.13.yaml:204:20: a real server cannot stage this case", "  on two lines",
				"raw:I20261204 15:45:48.923389 4036 transfer_metadata.cpp:583] removeSegmentDesc 127.0.0.1:16339 finish").
			check("mooncake", "d", "fail", kind("check"), "get of row \"a\": got FAULT, want READY", "raw:E20261204 15:46:00.1 4036 transfer_task.cpp:830] transfer failed").
			end("mooncake", "fail"),
		code: 1,
		out: []string{"  mooncake skipped 1: spec/mooncake-0.3.13.yaml:193:23: a real server cannot stage this case\n",
			"  mooncake skipped 1: spec/mooncake-0.3.13.yaml:204:20: a real server cannot stage this case\non two lines\n",
			"  mooncake FAILED d: get of row \"a\": got FAULT, want READY\nE20261204 15:46:00.1 4036 transfer_task.cpp:830] transfer failed"},
	}, {
		name: "a failing check, with its spec position and every message",
		stream: (&stream{}).store("broken", conformance.FactSDK, "kvblob-memory 1 (broken)").
			check("broken", "store_get/NOT_FOUND", "fail", kind("case"), spec("spec/memory.yaml:40:5"), "store_get/NOT_FOUND (spec/memory.yaml:40:5): get of row \"case\": got FAULT, want MISS", "harness: the driver did not drain").
			end("broken", "fail"),
		code:   1,
		out:    []string{"broken  kvblob-memory 1 (broken)  0       1", "  broken FAILED store_get/NOT_FOUND: store_get/NOT_FOUND (spec/memory.yaml:40:5): get of row \"case\": got FAULT, want MISS\nharness: the driver did not drain", "gate: FAILED"},
		stderr: []string{"gate: broken      1/0 FAILED store_get/NOT_FOUND"},
	}, {
		name: "a store whose server is not installed",
		stream: (&stream{}).store("s3", conformance.FactSDK, "aws-sdk-go-v2", conformance.FactSkip, "versitygw is not installed (go install x)").
			check("s3", "a", "skip", kind("check"), "versitygw is not installed (go install x)").
			end("s3", "pass"),
		code:   0,
		out:    []string{"s3     aws-sdk-go-v2  0       0       1        -          250ms  -", "  s3 skipped: versitygw is not installed (go install x)"},
		stderr: []string{"gate: s3 skipped: versitygw is not installed (go install x)"},
	}, {
		name: "a set-up that fails",
		stream: (&stream{}).store("redis", conformance.FactSDK, "redis-server 7.x", conformance.FactSetup, "port in use").
			out(conformanceTest+"/redis", "setting up redis: port in use").
			end("redis", "fail"),
		code: 2,
		out:  []string{"redis  redis-server 7.x  0       1       0        -          250ms  -", "  redis skipped: set-up failed: port in use", "  redis ERROR setup: port in use", "gate: ERROR"},
	}, {
		name:   "a package that does not build",
		stream: &stream{events: []event{{Action: "output", Package: pkg, Output: "stores/memory/x_test.go:3:1: syntax error\n"}, {Action: "fail", Package: pkg}}},
		code:   2,
		out:    []string{"stores/memory", "  stores/memory ERROR setup: stores/memory/x_test.go:3:1: syntax error"},
		stderr: []string{"gate: stores/memory did not run: stores/memory/x_test.go:3:1: syntax error"},
	}, {
		// What the conformance test logs before any store runs (a Run
		// refused before its first store) is why its package failed;
		// go test's own framing lines and the events that carry no
		// output are not.
		name: "a conformance run that fails before its first store says why",
		stream: &stream{events: []event{
			{Action: "run", Package: pkg, Test: conformanceTest},
			{Action: "output", Package: pkg, Test: conformanceTest, Output: "=== RUN   " + conformanceTest + "\n"},
			{Action: "output", Package: pkg, Test: conformanceTest, Output: "    suite.go:1: no store to run: register one\n"},
			{Action: "output", Package: pkg, Test: conformanceTest, Output: "--- FAIL: " + conformanceTest + " (0.00s)\n"},
			{Action: "fail", Package: pkg, Test: conformanceTest},
			{Action: "fail", Package: pkg},
		}},
		code: 2,
		out:  []string{"  stores/memory ERROR setup: ", "suite.go:1: no store to run: register one\n"},
	}, {
		name:   "a store nobody runs",
		stream: (&stream{}).store("memory").store("fs"),
		args:   []string{"--store", "nosuch"},
		code:   2,
		stderr: []string{`gate: unknown store "nosuch"; want one of fs, memory`},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, stderr := runWith(t, c.stream.goTest, append(append(base, "--packages", "./stores/memory"), c.args...)...)
			assert.Equal(t, c.code, code, "%s\n%s", out, stderr)
			rest := out
			for _, w := range c.out {
				i := strings.Index(rest, w)
				if !assert.GreaterOrEqual(t, i, 0, "%q not in (what is left of) stdout:\n%s", w, out) {
					break
				}
				rest = rest[i+len(w):]
			}
			for _, w := range c.stderr {
				assert.Contains(t, stderr, w)
			}
		})
	}
}

// TestTheRealSDKsStoreReplacesTheFakes: with --sdk real, a store that a
// package built with the real SDK's tag runs replaces the store of the
// same name the default build runs.
func TestTheRealSDKsStoreReplacesTheFakes(t *testing.T) {
	rows := []*storeRow{
		{storeResult: storeResult{Store: "memory"}, pkg: "m"},
		{storeResult: storeResult{Store: "mooncake", SDK: "fake"}, pkg: "mooncake"},
		{storeResult: storeResult{Store: "mooncake", SDK: "real"}, pkg: "cgosdk"},
	}
	got := realReplacesFake(rows, map[string]bool{"cgosdk": true})
	require.Len(t, got, 2)
	assert.Equal(t, "memory", got[0].Store)
	assert.Equal(t, "real", got[1].SDK)
	assert.Len(t, realReplacesFake(rows[:2], nil), 2, "without --sdk real nothing is replaced")
}

func TestAStoreFlagReportsOnlyTheRowsItNames(t *testing.T) {
	rows := []*storeRow{
		{storeResult: storeResult{Store: "redis"}, pkg: "redis"},
		{storeResult: storeResult{Store: "redis-valkey-8.1"}, pkg: "redis"},
		{storeResult: storeResult{Store: "memory"}, pkg: "memory"},
	}
	names := func(rs []*storeRow) (out []string) {
		for _, r := range rs {
			out = append(out, r.Store)
		}
		return out
	}
	for _, tc := range []struct {
		stores, want []string
	}{
		{nil, []string{"redis", "redis-valkey-8.1", "memory"}},
		{[]string{"redis"}, []string{"redis"}},
		{[]string{"redis-valkey-8.1"}, []string{"redis-valkey-8.1"}},
		{[]string{"memory", "redis"}, []string{"redis", "memory"}},
	} {
		assert.Equal(t, tc.want, names(onlyNamed(rows, tc.stores)), "--store %v", tc.stores)
	}
}

func TestGateRefusesStaleGeneratedCode(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(filepath.Join(dir, "generated"), os.DirFS("../../generated")))
	p := filepath.Join(dir, "generated", "memory", "memory_calls.go")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(p, append(b, []byte("\n// edited by hand\n")...), 0o644))
	never := func(string, []string, []string, io.Writer) error {
		t.Error("go test ran over a stale generated/")
		return nil
	}
	code, _, stderr := runWith(t, never, "-spec", "../../spec", "-out", filepath.Join(dir, "generated"), "--store", "memory")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, p+" differs")
	assert.Contains(t, stderr, "run 'make generate'")
}

// TestSDKHeadersAgainstTheSpec: a header that declares the spec's codes
// passes; one where a release renumbered a code fails (exit 1), naming the
// spec's position and the header's; a folder without the enum is an error
// (exit 2); so is --sdk-include with no store that names its enum.
func TestSDKHeadersAgainstTheSpec(t *testing.T) {
	memory := func() *stream {
		return (&stream{}).store("memory", conformance.FactSDK, "kvblob-memory 1", conformance.FactSpecFile, "spec/memory.yaml").
			check("memory", "x", "pass", kind("check")).end("memory", "pass")
	}
	args := append(base, "--packages", "./stores/memory", "--store", "memory", "--sdk-enum", "MemoryCode")
	code, out, stderr := runWith(t, memory().goTest, append(args, "--sdk-include", "testdata/headers-ok")...)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Equal(t, [3]int{2, 0, 0}, tableCounts(t, out)["memory"], "the header check is one more passed check")

	xmlFile := filepath.Join(t.TempDir(), "gate.xml")
	code, out, _ = runWith(t, memory().goTest, append(args, "--sdk-include", "testdata/headers-renumbered", "--junit", xmlFile)...)
	assert.Equal(t, 1, code)
	full := lineOf(t, "../../spec/memory.yaml", "  FULL:")
	want := "spec/memory.yaml:" + strconv.Itoa(full) + ":3: code FULL is -3 here, but testdata/headers-renumbered/memory_codes.h:7 declares FULL = -30"
	assert.Contains(t, out, "memory FAILED codes_match_sdk_headers: "+want)
	b, err := os.ReadFile(xmlFile)
	require.NoError(t, err)
	assert.Contains(t, string(b), want)

	code, out, _ = runWith(t, memory().goTest, append(args, "--sdk-include", t.TempDir())...)
	assert.Equal(t, 2, code)
	assert.Contains(t, out, "memory ERROR codes_match_sdk_headers")
	assert.Contains(t, out, "no header")

	code, _, stderr = runWith(t, memory().goTest, append(base, "--packages", "./stores/memory", "--sdk-include", "testdata/headers-ok")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no selected store names the enum of its codes")
}

// TestTheGateFailsOnABrokenStore runs the gate, through a real go test,
// over testdata/brokenstore: the sound memory store and the broken one
// beside it. The gate exits 1, the JUnit XML parses, each store's counts
// are the table's, and the broken store's failing generated case is a
// <failure> carrying its spec position (in system-out and at the end of
// the failure text, the suite naming the spec file); the report is valid
// against junit-10.xsd; the JSON report holds the same facts.
func TestTheGateFailsOnABrokenStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs a store's test")
	}
	dir := t.TempDir()
	xmlFile, jsonFile := filepath.Join(dir, "gate.xml"), filepath.Join(dir, "gate.json")
	code, out, stderr := runCLI(append(base, "--packages", "./cmd/gate/testdata/brokenstore",
		"--junit", xmlFile, "--json", jsonFile)...)
	require.Equal(t, 1, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "gate: FAILED")
	assert.Regexp(t, `memory\s+kvblob-memory 1\s+\d+\s+0\s+\d+\s+-\s+\S+\s+16 x 256 KiB in \S+`, out)

	b, err := os.ReadFile(xmlFile)
	require.NoError(t, err)
	assertValidJUnit(t, b)
	var got xmlSuites
	require.NoError(t, xml.Unmarshal(b, &got))

	table := tableCounts(t, out)
	require.Contains(t, table, "memory")
	require.Contains(t, table, "broken")
	suites := map[string]xmlSuite{}
	sum := 0
	for _, s := range got.Suites {
		suites[s.Name] = s
		sum += len(s.Cases)
		if s.Name == "generated" {
			continue
		}
		row := table[s.Name]
		assert.Equal(t, [3]int{s.Tests - s.Failures - s.Errors - s.Skipped, s.Failures + s.Errors, s.Skipped}, row, "suite %s against the table", s.Name)
		assert.Len(t, s.Cases, s.Tests, "suite %s", s.Name)
	}
	assert.Equal(t, sum, got.Tests)
	assert.Zero(t, suites["memory"].Failures)

	// The broken store fails the check its twin breaks, and the generated
	// case that pins NOT_FOUND => MISS, at that rule's spec position.
	pos := storekit.SpecPos(memorycases.Memory(), "store_get/NOT_FOUND")
	var sawCheck, sawCase bool
	for _, c := range suites["broken"].Cases {
		assert.Equal(t, "broken", c.Classname)
		switch c.Name {
		case "absent_keys_answer_as_AbsentIsMiss_says":
			sawCheck = c.Failure != nil
			assert.Equal(t, "check", c.property("kind"))
		case "store_get/NOT_FOUND":
			require.NotNil(t, c.Failure, "the failing case is no <failure>")
			assert.Equal(t, pos, c.property("spec"))
			assert.Equal(t, "case", c.property("kind"))
			file, _, _ := strings.Cut(pos, ":")
			assert.Equal(t, file, suites["broken"].File, "the suite names its spec file, as annotators read it")
			assert.True(t, strings.HasSuffix(c.Failure.Text, "\nspec: "+pos), "the failure text ends with its rule's position: %q", c.Failure.Text)
			assert.Contains(t, c.Failure.Text, "want MISS")
			sawCase = true
		}
	}
	assert.True(t, sawCheck, "the broken check is not a failure in the report")
	assert.True(t, sawCase, "the failing case is not in the report")

	jb, err := os.ReadFile(jsonFile)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(jb, &rep))
	assert.Equal(t, 1, rep.ExitCode)
	assert.Equal(t, got.Failures, rep.Failed)
	skipped := 0
	for _, s := range got.Suites {
		skipped += s.Skipped
	}
	assert.Equal(t, skipped, rep.Skipped)
	for _, s := range rep.Stores {
		assert.Equal(t, [3]int{s.Passed, s.Failed + s.Errors, s.Skipped}, table[s.Store], "JSON store %s against the table", s.Store)
		assert.NotEmpty(t, s.RoundTrip, "store %s", s.Store)
		for _, c := range s.Checks {
			if c.Name == "store_get/NOT_FOUND" && s.Store == "broken" {
				assert.Equal(t, statusFailed, c.Status)
				assert.Equal(t, pos, c.Spec)
			}
		}
	}
}

// TestTheSDKsOwnLogIsInNoReportMessage: in the JSON report, a passed
// check carries none of the lines the SDK wrote to the process's stderr,
// a skipped one only its reason, and a failure its messages then those
// lines (they may say why), so its first line is its own.
func TestTheSDKsOwnLogIsInNoReportMessage(t *testing.T) {
	glog := "raw:I20261204 15:44:01.946811 30665 client_metric.cpp:102] Client metrics enabled"
	s := (&stream{}).store("memory", conformance.FactSDK, "kvblob-memory 1").
		check("memory", "passed", "pass", kind("check"), glog).
		check("memory", "skipped", "skip", kind("check"), glog, "the reason", glog).
		check("memory", "failed", "fail", kind("check"), glog, "got FAULT", glog).
		end("memory", "fail")
	jsonFile := filepath.Join(t.TempDir(), "gate.json")
	code, out, stderr := runWith(t, s.goTest, append(base, "--packages", "./stores/memory", "--json", jsonFile)...)
	require.Equal(t, 1, code, "%s\n%s", out, stderr)
	jb, err := os.ReadFile(jsonFile)
	require.NoError(t, err)
	var rep report
	require.NoError(t, json.Unmarshal(jb, &rep))
	require.Len(t, rep.Stores, 1)
	got := map[string]string{}
	for _, c := range rep.Stores[0].Checks {
		got[c.Name] = c.Message
	}
	assert.Equal(t, map[string]string{
		"passed":  "",
		"skipped": "the reason",
		"failed":  "got FAULT\n" + glog[len("raw:"):] + "\n" + glog[len("raw:"):],
	}, got)
}

// TestEachRowIsOnePackagesSuite runs two packages whose TestConformance
// both run a store named "mooncake" (testdata/twosdks, as stores/mooncake
// and its cgosdk are) through a real go test -json with the real SDK's
// tag: the collector keeps one row per package and store, no check name
// twice in a row, and --sdk real's row is the real package's alone.
func TestEachRowIsOnePackagesSuite(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two packages' tests")
	}
	const dir = "github.com/kvblob/kvblob/cmd/gate/testdata/twosdks/"
	root, err := moduleRoot()
	require.NoError(t, err)
	var stream bytes.Buffer
	args := testArgs([]string{"./cmd/gate/testdata/twosdks/..."}, nil, nil, true, 5*time.Minute)
	require.NoError(t, execGoTest(root, args, nil, &stream))
	c := newCollector(io.Discard, false)
	require.NoError(t, c.read(&stream))
	rows, broken := c.rows()
	require.Empty(t, broken, "%s", stream.String())
	require.Len(t, rows, 2, "one row per package")
	for _, r := range rows {
		seen := map[string]bool{}
		for _, k := range r.Checks {
			assert.False(t, seen[k.Name], "%s (%s) holds check %s twice", r.Store, r.pkg, k.Name)
			seen[k.Name] = true
		}
		assert.Equal(t, r.total, len(r.Checks), "%s (%s): the suite announced %d checks", r.Store, r.pkg, r.total)
	}
	got := realReplacesFake(rows, map[string]bool{dir + "realsdk": true})
	require.Len(t, got, 1)
	assert.Equal(t, "twosdks real", got[0].SDK)
	assert.Equal(t, dir+"realsdk", got[0].pkg)
}

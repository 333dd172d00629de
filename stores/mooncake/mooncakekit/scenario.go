package mooncakekit

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kvblob/kvblob/stores/mooncake"
)

// Client A and client B. A runs in the recorder's process; B, in another.
const (
	A = 0
	B = 1
)

// Env is what a scenario runs in. FakeEnv implements it over fakesdk; a
// recorder implements it over a real mooncake_master and two real clients
// (B in another process), in real time.
type Env interface {
	// Open starts a master and cfg.Clients clients configured by cfg, and
	// returns the clients, A first.
	Open(cfg Config) ([]mooncake.SDK, error)
	// Alloc returns n bytes of host memory in client's process.
	Alloc(client int, n int64) (Memory, error)
	// Go runs call (one SDK call) in a goroutine; done is closed when it
	// returned.
	Go(call func()) (done <-chan struct{})
	// Settle returns once every call started by Go has returned or is
	// blocked on the environment (a real Env waits until a request can have
	// reached its peer, a few hundred milliseconds).
	Settle()
	// Await waits until done is closed, letting time pass (a fake moves its
	// clock to the next deadline a blocked call has). It fails when the call
	// cannot return without an environment action.
	Await(done <-chan struct{}) error
	// Advance lets d pass (a real Env sleeps).
	Advance(d time.Duration)
	// Now is the time since Open, on the Env's clock.
	Now() time.Duration
	KillMaster() error    // SIGKILL the master
	RestartMaster() error // start it again on the same address; returns once it listens
	FreezeMaster() error  // SIGSTOP the master
	ThawMaster() error    // SIGCONT the master
	FreezePeer() error    // SIGSTOP client B's process
	ThawPeer() error      // SIGCONT client B's process
	KillPeer() error      // SIGKILL client B's process
	// Close stops everything Open started.
	Close() error
}

// Memory is host memory of one client's process.
type Memory interface {
	// Buffer is the memory as its client's SDK takes it.
	Buffer() mooncake.Buffer
	Write(off int64, p []byte)
	Read(off, n int64) []byte
}

// Config is a scenario's deployment. Zero durations are the defaults.
type Config struct {
	Clients int // 1 or 2
	// PoolOn is the client whose segment holds every replica: A (A mounts
	// Segment), B (A mounts none: global_segment_size 0, B mounts Segment),
	// or Both (each mounts Segment; the master places replicas).
	PoolOn  int
	Segment int64 // global_segment_size; 0: 64 MiB

	RPCTimeout    time.Duration // client env MC_RPC_TIMEOUT_MS (30 s)
	StatusTimeout time.Duration // client env MC_TCP_STATUS_TIMEOUT_SEC (30 s)
	Lease         time.Duration // master --default_kv_lease_ttl (10 s)
	ClientTTL     time.Duration // master --client_ttl (10 s)
	Discard       time.Duration // master --put_start_discard_timeout_sec (30 s)
}

// Both is Config.PoolOn for a pool over both clients' segments.
const Both = -1

// Effective returns c with its defaults filled in.
func (c Config) Effective() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Clients == 0 {
		c.Clients = 1
	}
	if c.Segment == 0 {
		c.Segment = 64 << 20
	}
	def(&c.RPCTimeout, 30*time.Second)
	def(&c.StatusTimeout, 30*time.Second)
	def(&c.Lease, 10*time.Second)
	def(&c.ClientTTL, 10*time.Second)
	def(&c.Discard, 30*time.Second)
	return c
}

// TransferWait is a get's fixed transfer wait (transfer_task.cpp:830).
const TransferWait = 60 * time.Second

// Op is what a step does.
type Op string

const (
	// SDK calls, on Step.Client.
	OpRegister   Op = "register"   // RegisterBuffer(Ref)
	OpUnregister Op = "unregister" // UnregisterBuffer(Ref)
	OpStart      Op = "start"      // BatchPutSessionStart(Keys, Sizes)
	OpScatter    Op = "scatter"    // BatchPutFromMultiBufferRanges(Keys, From)
	OpEnd        Op = "end"        // BatchPutSessionEnd(Keys)
	OpRevoke     Op = "revoke"     // BatchPutSessionRevoke(Keys)
	OpGet        Op = "get"        // BatchGetInto(Keys, Into)
	OpExist      Op = "exist"      // BatchIsExist(Keys)
	OpClose      Op = "close"      // Close(): the client torn down (answers [0], or the error)

	// Runner steps.
	OpWait Op = "wait" // collect the async step named Of (recorded under that name)
	OpLook Op = "look" // record the bytes of Into now
	OpFill Op = "fill" // fill Ref with FillKey's bytes ("" : the canary)

	// Environment actions.
	OpAdvance       Op = "advance" // let D pass
	OpKillMaster    Op = "kill_master"
	OpRestartMaster Op = "restart_master"
	OpFreezeMaster  Op = "freeze_master"
	OpThawMaster    Op = "thaw_master"
	OpFreezePeer    Op = "freeze_peer"
	OpThawPeer      Op = "thaw_peer"
	OpKillPeer      Op = "kill_peer"
)

// Ref is a window of a scenario's buffer. Len 0: to the buffer's end.
type Ref struct {
	Buf      string
	Off, Len int64
}

// Buf is a scenario's buffer: Len bytes of Client's memory, filled with
// Fill's bytes (a key's name) or, when Fill is "", the canary.
type Buf struct {
	Name   string
	Client int
	Len    int64
	Fill   string
}

// Step is one step of a scenario.
type Step struct {
	Name    string // unique in its scenario; what the recording names
	Client  int
	Op      Op
	Keys    []string
	Sizes   []int64 // OpStart
	From    [][]Ref // OpScatter: each key's sources, in order
	Into    []Ref   // OpGet: each key's destination; OpLook: what to look at
	Ref     Ref     // OpRegister, OpUnregister, OpFill
	FillKey string  // OpFill
	Async   bool    // start the call and go on; an OpWait collects it
	Of      string  // OpWait
	D       time.Duration
}

// Scenario is a named script.
type Scenario struct {
	Name   string
	About  string // what it stages; the row of docs/mooncake-sdk.md it covers
	Config Config
	Bufs   []Buf
	Steps  []Step
	// FakeCannot says why fakesdk cannot model the scenario honestly: the
	// replay does not run it; a recorder does.
	FakeCannot string
}

// Timing classes, from a call's start to its return.
const (
	AtOnce             = "at_once"              // under 1 s
	AtThaw             = "at_thaw"              // within 1 s after a thaw that came while it was blocked
	AfterRPCTimeout    = "after_rpc_timeout"    // Config.RPCTimeout
	AfterStatusTimeout = "after_status_timeout" // Config.StatusTimeout
	AfterTransferWait  = "after_transfer_wait"  // TransferWait (60 s)
	AfterRetries       = "after_retries"        // 1-10 s otherwise: the master-down connect retries (~4.2 s)
	Slow               = "slow"                 // anything else
)

// Classify names the timing class of a call of op that took elapsed,
// given the time from the last thaw to its return (thawed reports whether
// a thaw came while it was blocked). Where two timeouts are equal (both 30 s
// by default), a data call (get, scatter) is taken to have met the status
// timeout, any other the RPC timeout.
func Classify(cfg Config, op Op, elapsed time.Duration, thawed bool, sinceThaw time.Duration) string {
	cfg = cfg.Effective()
	near := func(want time.Duration) bool {
		tol := max(want/5, 500*time.Millisecond)
		return elapsed >= want-tol && elapsed <= want+tol
	}
	switch {
	case elapsed < time.Second:
		return AtOnce
	case thawed && sinceThaw < time.Second:
		return AtThaw
	case (op == OpGet || op == OpScatter) && near(cfg.StatusTimeout):
		return AfterStatusTimeout
	case near(cfg.RPCTimeout):
		return AfterRPCTimeout
	case near(cfg.StatusTimeout):
		return AfterStatusTimeout
	case near(TransferWait):
		return AfterTransferWait
	case elapsed < 10*time.Second:
		return AfterRetries
	}
	return Slow
}

// ByteRun is a run of bytes in a destination.
type ByteRun struct {
	At  int64  `json:"at"`
	Len int64  `json:"len"`
	Is  string `json:"is"`
}

// StepRecord is what one step answered.
type StepRecord struct {
	Step    string      `json:"step"`
	Answers []int64     `json:"answers,omitempty"`
	Error   string      `json:"error,omitempty"`
	Bytes   [][]ByteRun `json:"bytes,omitempty"`
	Timing  Timings     `json:"timing,omitempty"`
}

// Timings is the set of timing classes a step took: one for a single run
// (Run's), every class seen for a recording of several (Merge). It is
// sorted, without repeats, and reads and writes one class as a JSON
// string, several as a list.
type Timings []string

// Has reports whether class is one of t.
func (t Timings) Has(class string) bool { return slices.Contains(t, class) }

// MarshalJSON writes one class as a string, several as a list.
func (t Timings) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		return json.Marshal(t[0])
	}
	return json.Marshal([]string(t))
}

// UnmarshalJSON reads a string or a list of strings.
func (t *Timings) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*t = Timings{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("timing: want a timing class or a list of them: %w", err)
	}
	*t = Timings(many)
	return nil
}

// MinRuns is the fewest runs a recorder merges into a recording: one run
// cannot tell a timing the SDK always takes from one it took once.
const MinRuns = 3

// Merge merges runs of one scenario into one recording: each step's
// timing is the set of classes seen (and the note says how often each was
// seen, when they differ), and its answers, raise and bytes must be the
// same in every run; each difference is returned, and a recorder writes
// nothing then. The first run's scenario, source, SDK and note are kept.
func Merge(runs []Recording) (Recording, []string) {
	if len(runs) == 0 {
		return Recording{}, []string{"no runs"}
	}
	out := runs[0]
	out.Steps = slices.Clone(runs[0].Steps)
	var diffs, varied []string
	for i := range out.Steps {
		st := &out.Steps[i]
		seen := map[string]int{}
		for r, run := range runs {
			if len(run.Steps) != len(out.Steps) || run.Steps[i].Step != st.Step {
				diffs = append(diffs, fmt.Sprintf("run %d: its steps differ from run 1's at step %s", r+1, st.Step))
				continue
			}
			o := run.Steps[i]
			if fmt.Sprint(o.Answers, o.Error, o.Bytes) != fmt.Sprint(st.Answers, st.Error, st.Bytes) {
				diffs = append(diffs, fmt.Sprintf("step %s: run %d answered %v%s bytes %v, run 1 %v%s bytes %v: the SDK does not answer alike every time",
					st.Step, r+1, o.Answers, errText(o.Error), o.Bytes, st.Answers, errText(st.Error), st.Bytes))
			}
			for _, c := range o.Timing {
				seen[c]++
			}
		}
		st.Timing = nil
		for c := range seen {
			st.Timing = append(st.Timing, c)
		}
		slices.Sort(st.Timing)
		if len(st.Timing) > 1 {
			var counts []string
			for _, c := range st.Timing {
				counts = append(counts, fmt.Sprintf("%s %d of %d", c, seen[c], len(runs)))
			}
			varied = append(varied, st.Step+": "+strings.Join(counts, ", "))
		}
	}
	note := fmt.Sprintf("%d runs", len(runs))
	if len(varied) > 0 {
		note += "; timings seen: " + strings.Join(varied, "; ")
	}
	if out.Note != "" {
		note = out.Note + "; " + note
	}
	out.Note = note
	return out, diffs
}

// Recording is what one scenario answered.
type Recording struct {
	Scenario string       `json:"scenario"`
	Source   string       `json:"source"`
	SDK      string       `json:"sdk,omitempty"`
	Note     string       `json:"note,omitempty"`
	Steps    []StepRecord `json:"steps"`
}

// Canary is the byte a destination holds before anything writes it.
const Canary = 0xEE

// Pattern is byte i of key's source: never 0 nor the canary.
func Pattern(key string, i int64) byte { return pattern(seed(key), i) }

func pattern(seed, i int64) byte {
	v := (seed + i*131 + (i>>8)*7) % 252
	b := byte(v + 1)
	if b >= Canary {
		b++
	}
	return b
}

func seed(key string) int64 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int64(h.Sum32() % 252)
}

// DescribeBytes labels the bytes of p as runs, against the keys whose bytes may
// be there.
func DescribeBytes(p []byte, keys []string) []ByteRun {
	seeds := map[string]int64{}
	for _, k := range keys {
		seeds[k] = seed(k)
	}
	label := func(i int64, prev string) string {
		b := p[i]
		ok := func(l string) bool {
			switch l {
			case "untouched":
				return b == Canary
			case "zero":
				return b == 0
			case "other", "":
				return false
			}
			return b == pattern(seeds[l], i)
		}
		if ok(prev) {
			return prev
		}
		for _, l := range append([]string{"untouched"}, append(keys, "zero")...) {
			if ok(l) {
				return l
			}
		}
		return "other"
	}
	var runs []ByteRun
	prev := ""
	for i := int64(0); i < int64(len(p)); i++ {
		l := label(i, prev)
		if l == prev && len(runs) > 0 {
			runs[len(runs)-1].Len++
			continue
		}
		runs = append(runs, ByteRun{At: i, Len: 1, Is: l})
		prev = l
	}
	return runs
}

// Write writes r as dir/<scenario>.json in the format above.
func Write(dir string, r Recording) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, r.Scenario+".json"), append(b, '\n'), 0o644)
}

// Read reads dir/<name>.json; ok is false when there is none.
func Read(dir, name string) (r Recording, ok bool, err error) {
	b, err := os.ReadFile(filepath.Join(dir, name+".json"))
	if os.IsNotExist(err) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, false, fmt.Errorf("%s.json: %w", name, err)
	}
	return r, true, nil
}

// Compare lists how got disagrees with want, on what want records.
func Compare(want, got Recording) []string {
	var diffs []string
	byName := map[string]StepRecord{}
	for _, s := range got.Steps {
		byName[s.Step] = s
	}
	for _, w := range want.Steps {
		g, ok := byName[w.Step]
		if !ok {
			diffs = append(diffs, fmt.Sprintf("step %s: recorded, but the run has no such step", w.Step))
			continue
		}
		if w.Error != "" && g.Error == "" {
			diffs = append(diffs, fmt.Sprintf("step %s: real raised (%s); got answers %v", w.Step, w.Error, g.Answers))
		}
		if w.Answers != nil && (g.Error != "" || fmt.Sprint(w.Answers) != fmt.Sprint(g.Answers)) {
			diffs = append(diffs, fmt.Sprintf("step %s: answers: real %v, got %v%s", w.Step, w.Answers, g.Answers, errText(g.Error)))
		}
		if w.Bytes != nil && fmt.Sprint(w.Bytes) != fmt.Sprint(g.Bytes) {
			diffs = append(diffs, fmt.Sprintf("step %s: bytes: real %v, got %v", w.Step, w.Bytes, g.Bytes))
		}
		if len(w.Timing) > 0 && !allIn(g.Timing, w.Timing) {
			diffs = append(diffs, fmt.Sprintf("step %s: timing: real %s, got %s", w.Step, timingText(w.Timing), timingText(g.Timing)))
		}
	}
	return diffs
}

// allIn reports whether got names a timing and every class of it is one
// of want's.
func allIn(got, want Timings) bool {
	for _, c := range got {
		if !want.Has(c) {
			return false
		}
	}
	return len(got) > 0
}

// timingText is t as a diff names it: "at_once", "one of [after_retries
// at_once]" or "none".
func timingText(t Timings) string {
	switch len(t) {
	case 0:
		return "none"
	case 1:
		return t[0]
	}
	return fmt.Sprintf("one of %v", []string(t))
}

func errText(e string) string {
	if e == "" {
		return ""
	}
	return " (raised: " + e + ")"
}

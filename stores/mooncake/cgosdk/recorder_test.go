//go:build mooncake

package cgosdk_test

// The recorder: mooncakekit's scenario script against the real SDK, a real
// mooncake_master on loopback and two real clients, B in another process,
// in the manner of go-cloud's drivertest record/replay. It runs only with
// MOONCAKE_REAL=1, and writes stores/mooncake/testdata/mcscenario/*.json
// only with -record. With the SDK's build in your environment (its
// headers, libraries and mooncake_master: see doc.go), from this folder:
//
//	MOONCAKE_REAL=1 go test -tags mooncake -count=1 -timeout 90m -parallel 3 \
//	    -run 'TestRecord$' . -args -record -runs 3
//
// Each scenario runs -runs times (at least mooncakekit.MinRuns, 3), and the
// runs are merged (mooncakekit.Merge): a recording holds what the SDK did in
// every run, each step's timing the set of classes seen, so a replay
// accepts any of them; a scenario whose answers differ between runs is an
// error, and nothing is written for it.
//
// Each scenario runs in a process of its own (this test binary, re-executed
// with -test.run=TestRecordScenario), because the client reads
// MC_RPC_TIMEOUT_MS and MC_TCP_STATUS_TIMEOUT_SEC from its environment;
// client B is another re-execution (TestRecordPeer) that serves its SDK and
// its memory over a line protocol on stdin/stdout.

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/cgosdk"
	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit"
	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit/realkit"
)

var (
	record = flag.Bool("record", false, "write the recordings to stores/mooncake/testdata/mcscenario")
	runs   = flag.Int("runs", mooncakekit.MinRuns, "run each scenario this many times (at least mooncakekit.MinRuns) and record what every run did")
)

const (
	envScenario = "KVB_MCREC_SCENARIO" // the scenario a child process runs
	envOut      = "KVB_MCREC_OUT"      // where it writes its recording
	envPeer     = "KVB_MCREC_PEER"     // set in client B's process: its config as JSON
)

// notRecordable names the scenarios this recorder does not run, and why.
var notRecordable = map[string]string{
	"s4-get-256mib-frozen-midway": "the freeze must land while the 256 MiB get is in flight, but Settle waits 300 ms " +
		"after starting it and a loopback get of 256 MiB is done by then (a run recorded it answering whole, at once, " +
		"so the peer was frozen after the transfer); staging it needs a freeze triggered by the transfer's first byte",
}

// TestRecord runs every scenario against the real SDK -runs times, each
// run in a child process, merges the runs, and with -record writes what
// every run answered.
func TestRecord(t *testing.T) {
	if os.Getenv("MOONCAKE_REAL") != "1" || os.Getenv(envScenario) != "" || os.Getenv(envPeer) != "" {
		t.Skip("set MOONCAKE_REAL=1 to record against a real mooncake_master")
	}
	if r := flag.Lookup("test.run"); !*record && (r == nil || !strings.Contains(r.Value.String(), "TestRecord")) {
		// A plain real run (the real suite: TestConformance) would
		// otherwise record every scenario, over an hour, past go test's
		// default 10 min timeout.
		t.Skip("the recorder runs every scenario at least 3 times (over an hour): give -record, or name TestRecord in -run for a run that only logs")
	}
	if _, err := exec.LookPath("mooncake_master"); err != nil {
		t.Fatalf("MOONCAKE_REAL=1 but mooncake_master is not on PATH: %v", err)
	}
	if *runs < mooncakekit.MinRuns {
		t.Fatalf("-runs %d: a recording merges at least %d runs, or a timing the SDK took once is pinned as what it always does", *runs, mooncakekit.MinRuns)
	}
	dir := filepath.Join("..", "testdata", "mcscenario")
	for _, s := range mooncakekit.All() {
		t.Run(s.Name, func(t *testing.T) {
			if why := notRecordable[s.Name]; why != "" {
				t.Skipf("not recordable: %s", why)
			}
			t.Parallel()
			t0 := time.Now()
			var recs []mooncakekit.Recording
			for i := 0; i < *runs; i++ {
				recs = append(recs, recordOnce(t, s))
			}
			rec, diffs := mooncakekit.Merge(recs)
			if len(diffs) > 0 {
				t.Fatalf("the real SDK did not answer alike in %d runs, so no recording states what it does:\n  %s", *runs, strings.Join(diffs, "\n  "))
			}
			rec.Source = "recorded from the real SDK by cgosdk's TestRecord"
			rec.SDK = cgosdk.SDKVersion
			rec.Note = fmt.Sprintf("took %v over %s; %s", time.Since(t0).Round(time.Second), rec.Note, s.About)
			pretty, _ := json.MarshalIndent(rec, "", "  ")
			t.Logf("%s", pretty)
			if *record {
				if err := mooncakekit.Write(dir, rec); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// recordOnce runs scenario s once, in a process of its own, and returns
// what it answered.
func recordOnce(t *testing.T, s mooncakekit.Scenario) mooncakekit.Recording {
	t.Helper()
	out := filepath.Join(t.TempDir(), "rec.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestRecordScenario$", "-test.v", "-test.timeout=20m")
	cmd.Env = append(os.Environ(), envScenario+"="+s.Name, envOut+"="+out)
	cmd.Env = append(cmd.Env, clientEnv(s.Config)...)
	var combined strings.Builder
	cmd.Stdout, cmd.Stderr = &combined, &combined
	t0 := time.Now()
	waited, err := storekit.StartTied(cmd) // it dies with the recorder, with its master and client B
	if err == nil {
		err = <-waited
	}
	b := []byte(combined.String())
	if err != nil {
		t.Fatalf("the scenario's process failed after %v: %v\n%s", time.Since(t0), err, tail(string(b), 6000))
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("no recording: %v\n%s", err, tail(string(b), 6000))
	}
	var rec mooncakekit.Recording
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// clientEnv is the client environment a scenario's Config asks for.
func clientEnv(c mooncakekit.Config) []string {
	var env []string
	if c.RPCTimeout != 0 {
		env = append(env, "MC_RPC_TIMEOUT_MS="+strconv.FormatInt(c.RPCTimeout.Milliseconds(), 10))
	}
	if c.StatusTimeout != 0 {
		env = append(env, "MC_TCP_STATUS_TIMEOUT_SEC="+strconv.FormatInt(int64(c.StatusTimeout/time.Second), 10))
	}
	return env
}

// TestRecordScenario is a child process of TestRecord: it runs one scenario.
func TestRecordScenario(t *testing.T) {
	name := os.Getenv(envScenario)
	if name == "" {
		t.Skip("run by TestRecord only")
	}
	var s mooncakekit.Scenario
	for _, sc := range mooncakekit.All() {
		if sc.Name == name {
			s = sc
		}
	}
	if s.Name == "" {
		t.Fatalf("no scenario %q", name)
	}
	env := &realEnv{t: t}
	rec, err := mooncakekit.Run(env, s)
	if err != nil {
		t.Errorf("run: %v", err)
	}
	b, _ := json.Marshal(rec)
	if werr := os.WriteFile(os.Getenv(envOut), b, 0o644); werr != nil {
		t.Fatal(werr)
	}
	if err != nil {
		t.FailNow()
	}
}

// realEnv is mooncakekit.Env over a real master and real clients.
type realEnv struct {
	t      *testing.T
	cfg    mooncakekit.Config
	master *storekit.Server
	a      *cgosdk.Client
	peer   *peer
	t0     time.Time
	alloc  [][]byte
}

var _ mooncakekit.Env = (*realEnv)(nil)

func secs(d time.Duration) string { return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10) }

func (e *realEnv) Open(cfg mooncakekit.Config) ([]mooncake.SDK, error) {
	e.cfg = cfg
	m, err := storekit.Start(realkit.MasterSpec(
		"--default_kv_lease_ttl="+strconv.FormatInt(cfg.Lease.Milliseconds(), 10),
		"--client_ttl="+secs(cfg.ClientTTL),
		"--put_start_discard_timeout_sec="+secs(cfg.Discard)))
	if err != nil {
		return nil, err
	}
	e.master = m
	if err := m.LoopbackOnly(); err != nil {
		return nil, err
	}
	mc := mooncake.DefaultConfig().Mooncake
	mc.Master = m.Addr
	mc.GlobalSegmentSize = 0
	if cfg.PoolOn == mooncakekit.A || cfg.PoolOn == mooncakekit.Both {
		mc.GlobalSegmentSize = cfg.Segment
	}
	a, err := cgosdk.Open(mc)
	if err != nil {
		return nil, err
	}
	e.a = a.(*cgosdk.Client)
	e.t0 = time.Now()
	out := []mooncake.SDK{a}
	if cfg.Clients == 2 {
		mc.GlobalSegmentSize = 0
		if cfg.PoolOn == mooncakekit.B || cfg.PoolOn == mooncakekit.Both {
			mc.GlobalSegmentSize = cfg.Segment
		}
		p, err := startPeer(e.t, mc)
		if err != nil {
			return nil, err
		}
		e.peer = p
		out = append(out, p)
	}
	e.t0 = time.Now()
	return out, nil
}

// Alloc maps memory off the Go heap (runtime/hostmem) in the client's
// process. It does not register it: the scenarios register explicitly
// (r-registration) or prove that unregistered memory works over tcp (a5).
func (e *realEnv) Alloc(client int, n int64) (mooncakekit.Memory, error) {
	if client == mooncakekit.B {
		return e.peer.alloc(n)
	}
	p, err := hostmem.Alloc(int(n))
	if err != nil {
		return nil, err
	}
	e.alloc = append(e.alloc, p)
	return mooncakekit.HostMemory(p), nil
}

func (e *realEnv) Go(call func()) <-chan struct{} {
	done := make(chan struct{})
	go func() { defer close(done); call() }()
	return done
}

// Settle waits until a request can have reached its peer.
func (e *realEnv) Settle() { time.Sleep(300 * time.Millisecond) }

// Await waits for done, up to well past the longest wait a call has (the
// 120 s status timeout of s3/s4).
func (e *realEnv) Await(done <-chan struct{}) error {
	select {
	case <-done:
		return nil
	case <-time.After(180 * time.Second):
		return errors.New("the call did not return within 180 s")
	}
}

func (e *realEnv) Advance(d time.Duration) { time.Sleep(d) }
func (e *realEnv) Now() time.Duration      { return time.Since(e.t0) }
func (e *realEnv) KillMaster() error       { e.master.Kill(); return nil }
func (e *realEnv) RestartMaster() error    { return e.master.Restart() }
func (e *realEnv) FreezeMaster() error {
	if err := e.master.Freeze(); err != nil {
		return err
	}
	return waitStopped(e.master.PID())
}
func (e *realEnv) ThawMaster() error { return e.master.Thaw() }

func (e *realEnv) FreezePeer() error {
	if err := e.peerSignal(syscall.SIGSTOP); err != nil {
		return err
	}
	return waitStopped(e.peer.cmd.Process.Pid)
}

// waitStopped returns once every thread of pid is stopped. kill(SIGSTOP)
// returns before the threads stop: under load a request sent right after
// it could still be served (a run of h5 and h11 saw the master answer a
// call made after the freeze at once).
func waitStopped(pid int) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return err
		}
		stopped := len(tasks) > 0
		for _, task := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
			if err != nil {
				continue // the thread exited
			}
			// The state follows the command's closing parenthesis.
			s := string(b)
			i := strings.LastIndexByte(s, ')')
			if i < 0 || i+2 >= len(s) || (s[i+2] != 'T' && s[i+2] != 't') {
				stopped = false
				break
			}
		}
		if stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not stop within 5 s of SIGSTOP", pid)
		}
		time.Sleep(time.Millisecond)
	}
}
func (e *realEnv) ThawPeer() error { return e.peerSignal(syscall.SIGCONT) }
func (e *realEnv) KillPeer() error { return e.peerSignal(syscall.SIGKILL) }

func (e *realEnv) peerSignal(sig syscall.Signal) error {
	if e.peer == nil {
		return errors.New("no client B")
	}
	return e.peer.cmd.Process.Signal(sig)
}

func (e *realEnv) Close() error {
	var err error
	if e.peer != nil {
		err = errors.Join(err, e.peer.Close())
	}
	if e.a != nil {
		err = errors.Join(err, e.a.Close())
	}
	if e.master != nil {
		if err != nil {
			e.t.Logf("mooncake_master log:\n%s", tail(e.master.Log(), 4000))
		}
		e.master.Stop()
	}
	for _, p := range e.alloc {
		err = errors.Join(err, hostmem.Free(p))
	}
	e.alloc = nil
	return err
}

// The line protocol between the recorder and client B: one JSON request a
// line on B's stdin, one JSON reply a line (prefixed, so that nothing else
// B prints is taken for one) on its stdout, matched by ID. B serves each
// request in a goroutine of its own, so a blocked call blocks nothing else.
type peerReq struct {
	ID    int64               `json:"id"`
	Op    string              `json:"op"` // alloc, write, read, version, close, or an mooncakekit.Op of an SDK call
	N     int64               `json:"n,omitempty"`
	Addr  uintptr             `json:"addr,omitempty"`
	Data  []byte              `json:"data,omitempty"`
	Keys  []string            `json:"keys,omitempty"`
	Sizes []int64             `json:"sizes,omitempty"`
	Bufs  [][]mooncake.Buffer `json:"bufs,omitempty"`
}

type peerResp struct {
	ID      int64   `json:"id"`
	Answers []int64 `json:"answers"`
	Addr    uintptr `json:"addr,omitempty"`
	Data    []byte  `json:"data,omitempty"`
	Text    string  `json:"text,omitempty"`
	Err     string  `json:"err,omitempty"`
}

const replyPrefix = "@@mcrec "

// TestRecordPeer is client B's process: it serves the line protocol until
// stdin closes or a close request came.
func TestRecordPeer(t *testing.T) {
	js := os.Getenv(envPeer)
	if js == "" {
		t.Skip("run by TestRecord only")
	}
	var mc mooncake.ClientConfig
	if err := json.Unmarshal([]byte(js), &mc); err != nil {
		t.Fatal(err)
	}
	sdk, err := cgosdk.Open(mc)
	out := bufio.NewWriter(os.Stdout)
	var mu sync.Mutex
	reply := func(r peerResp) {
		b, _ := json.Marshal(r)
		mu.Lock()
		defer mu.Unlock()
		out.WriteString(replyPrefix)
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	if err != nil {
		reply(peerResp{ID: 0, Err: err.Error()})
		return
	}
	reply(peerResp{ID: 0, Text: "ready"})
	mem := map[uintptr][]byte{}
	var memMu sync.Mutex
	find := func(addr uintptr, n int64) ([]byte, error) {
		memMu.Lock()
		defer memMu.Unlock()
		for base, p := range mem {
			if addr >= base && addr+uintptr(n) <= base+uintptr(len(p)) {
				off := addr - base
				return p[off : off+uintptr(n)], nil
			}
		}
		return nil, fmt.Errorf("no memory at %#x+%d", addr, n)
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<30)
	var wg sync.WaitGroup
	for in.Scan() {
		var q peerReq
		if err := json.Unmarshal(in.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		if q.Op == "close" {
			wg.Wait()
			r := peerResp{ID: q.ID}
			if err := sdk.Close(); err != nil {
				r.Err = err.Error()
			}
			reply(r)
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := peerResp{ID: q.ID}
			var err error
			switch q.Op {
			case "alloc":
				var p []byte
				if p, err = hostmem.Alloc(int(q.N)); err == nil {
					r.Addr = mooncake.BufferOf(p).Addr
					memMu.Lock()
					mem[r.Addr] = p
					memMu.Unlock()
				}
			case "write":
				var p []byte
				if p, err = find(q.Addr, int64(len(q.Data))); err == nil {
					copy(p, q.Data)
				}
			case "read":
				var p []byte
				if p, err = find(q.Addr, q.N); err == nil {
					r.Data = append([]byte(nil), p...)
				}
			case string(mooncakekit.OpRegister):
				var c int64
				c, err = sdk.RegisterBuffer(q.Bufs[0][0])
				r.Answers = []int64{c}
			case string(mooncakekit.OpUnregister):
				var c int64
				c, err = sdk.UnregisterBuffer(q.Bufs[0][0])
				r.Answers = []int64{c}
			case string(mooncakekit.OpStart):
				r.Answers, err = sdk.BatchPutSessionStart(q.Keys, q.Sizes)
			case string(mooncakekit.OpScatter):
				r.Answers, err = sdk.BatchPutFromMultiBufferRanges(q.Keys, q.Bufs)
			case string(mooncakekit.OpEnd):
				r.Answers, err = sdk.BatchPutSessionEnd(q.Keys)
			case string(mooncakekit.OpRevoke):
				r.Answers, err = sdk.BatchPutSessionRevoke(q.Keys)
			case string(mooncakekit.OpGet):
				var into []mooncake.Buffer
				for _, b := range q.Bufs {
					into = append(into, b[0])
				}
				r.Answers, err = sdk.BatchGetInto(q.Keys, into)
			case string(mooncakekit.OpExist):
				r.Answers, err = sdk.BatchIsExist(q.Keys)
			default:
				err = fmt.Errorf("unknown op %q", q.Op)
			}
			if err != nil {
				r.Err, r.Answers = err.Error(), nil
			}
			reply(r)
		}()
	}
	wg.Wait()
	_ = sdk.Close()
}

// peer is client B, in another process, as a mooncake.SDK.
type peer struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	mu   sync.Mutex
	next int64
	wait map[int64]chan peerResp
	dead chan struct{} // closed when B's stdout closed
}

var errPeerGone = errors.New("client B's process is gone")

func startPeer(t *testing.T, mc mooncake.ClientConfig) (*peer, error) {
	js, _ := json.Marshal(mc)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRecordPeer$", "-test.timeout=30m")
	cmd.Env = append(os.Environ(), envPeer+"="+string(js))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// B's stdout is a plain pipe read to its end: Wait, which StartTied
	// calls as soon as B exits, closes only pipes it made.
	outp, outw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = outw
	waited, err := storekit.StartTied(cmd) // B dies with the recorder
	outw.Close()
	if err != nil {
		outp.Close()
		return nil, err
	}
	p := &peer{cmd: cmd, in: in, wait: map[int64]chan peerResp{}, dead: make(chan struct{})}
	p.wait[0] = make(chan peerResp, 1)
	go func() {
		sc := bufio.NewScanner(outp)
		sc.Buffer(make([]byte, 1<<20), 1<<30)
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) < len(replyPrefix) || string(line[:len(replyPrefix)]) != replyPrefix {
				continue
			}
			var r peerResp
			if json.Unmarshal(line[len(replyPrefix):], &r) != nil {
				continue
			}
			p.mu.Lock()
			ch := p.wait[r.ID]
			delete(p.wait, r.ID)
			p.mu.Unlock()
			if ch != nil {
				ch <- r
			}
		}
		close(p.dead)
		outp.Close()
		<-waited
	}()
	select {
	case r := <-p.wait[0]:
		if r.Err != "" {
			return nil, fmt.Errorf("client B: %s", r.Err)
		}
	case <-p.dead:
		return nil, errPeerGone
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		return nil, errors.New("client B did not set up within 60 s")
	}
	t.Logf("client B: pid %d", cmd.Process.Pid)
	return p, nil
}

func (p *peer) do(q peerReq) (peerResp, error) {
	ch := make(chan peerResp, 1)
	p.mu.Lock()
	p.next++
	q.ID = p.next
	p.wait[q.ID] = ch
	b, _ := json.Marshal(q)
	_, err := p.in.Write(append(b, '\n'))
	p.mu.Unlock()
	if err != nil {
		return peerResp{}, errPeerGone
	}
	select {
	case r := <-ch:
		if r.Err != "" {
			return r, errors.New(r.Err)
		}
		return r, nil
	case <-p.dead:
		return peerResp{}, errPeerGone
	}
}

type peerMemory struct {
	p    *peer
	addr uintptr
	n    int64
}

func (m peerMemory) Buffer() mooncake.Buffer { return mooncake.Buffer{Addr: m.addr, Len: m.n} }
func (m peerMemory) Write(off int64, b []byte) {
	if _, err := m.p.do(peerReq{Op: "write", Addr: m.addr + uintptr(off), Data: b}); err != nil {
		panic(fmt.Sprintf("client B: write: %v", err))
	}
}
func (m peerMemory) Read(off, n int64) []byte {
	r, err := m.p.do(peerReq{Op: "read", Addr: m.addr + uintptr(off), N: n})
	if err != nil {
		panic(fmt.Sprintf("client B: read: %v", err))
	}
	return r.Data
}

func (p *peer) alloc(n int64) (mooncakekit.Memory, error) {
	r, err := p.do(peerReq{Op: "alloc", N: n})
	if err != nil {
		return nil, err
	}
	return peerMemory{p: p, addr: r.Addr, n: n}, nil
}

func (p *peer) call(op mooncakekit.Op, keys []string, sizes []int64, bufs [][]mooncake.Buffer) ([]int64, error) {
	r, err := p.do(peerReq{Op: string(op), Keys: keys, Sizes: sizes, Bufs: bufs})
	if err != nil {
		return nil, err
	}
	return r.Answers, nil
}

func (p *peer) Version() string { return cgosdk.SDKVersion }
func (p *peer) RegisterBuffer(b mooncake.Buffer) (int64, error) {
	a, err := p.call(mooncakekit.OpRegister, nil, nil, [][]mooncake.Buffer{{b}})
	if err != nil {
		return 0, err
	}
	return a[0], nil
}
func (p *peer) UnregisterBuffer(b mooncake.Buffer) (int64, error) {
	a, err := p.call(mooncakekit.OpUnregister, nil, nil, [][]mooncake.Buffer{{b}})
	if err != nil {
		return 0, err
	}
	return a[0], nil
}
func (p *peer) BatchPutSessionStart(keys []string, sizes []int64) ([]int64, error) {
	return p.call(mooncakekit.OpStart, keys, sizes, nil)
}
func (p *peer) BatchPutFromMultiBufferRanges(keys []string, bufs [][]mooncake.Buffer) ([]int64, error) {
	return p.call(mooncakekit.OpScatter, keys, nil, bufs)
}
func (p *peer) BatchPutSessionEnd(keys []string) ([]int64, error) {
	return p.call(mooncakekit.OpEnd, keys, nil, nil)
}
func (p *peer) BatchPutSessionRevoke(keys []string) ([]int64, error) {
	return p.call(mooncakekit.OpRevoke, keys, nil, nil)
}
func (p *peer) BatchGetInto(keys []string, bufs []mooncake.Buffer) ([]int64, error) {
	var bb [][]mooncake.Buffer
	for _, b := range bufs {
		bb = append(bb, []mooncake.Buffer{b})
	}
	return p.call(mooncakekit.OpGet, keys, nil, bb)
}
func (p *peer) BatchIsExist(keys []string) ([]int64, error) {
	return p.call(mooncakekit.OpExist, keys, nil, nil)
}

// Close tears B's client down and waits for its process to exit; a B that
// was killed is already gone.
func (p *peer) Close() error {
	select {
	case <-p.dead:
		return nil
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_, err := p.do(peerReq{Op: "close"})
	_ = p.in.Close()
	select {
	case <-p.dead:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		err = errors.Join(err, errors.New("client B did not exit within 30 s of its close"))
	}
	if errors.Is(err, errPeerGone) {
		err = nil
	}
	return err
}

//go:build mooncake

// Package realkit is the Mooncake test kit over the real SDK: a
// mooncake_master started on loopback, drivers over real clients of it, a
// second real client that stages what a real pool can stage (another
// writer, a full pool, planted objects of any length), a master killed for
// a failing call (and, for a failed put, restarted before the put returns,
// so that a retry can succeed), and a stager for every case the spec marks
// stageable. The real test (cgosdk's TestConformance) and 'gate --sdk real'
// both run on it. It builds only with the tag mooncake (see cgosdk's doc
// for the SDK).
package realkit

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/runtime/rules"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/cgosdk"
)

// MasterSpec runs mooncake_master on a free loopback port, its metrics on
// another, with no HTTP metadata server (clients use P2PHANDSHAKE), and the
// flags given.
func MasterSpec(flags ...string) storekit.Spec {
	return storekit.Spec{
		Binary:  "mooncake_master",
		Install: "install a Mooncake build whose mooncake_master matches the cgo SDK (stores/mooncake/cgosdk/doc.go)",
		Args: func(host string, port int, dir string) []string {
			metrics, _ := storekit.FreePort()
			return append([]string{"--rpc_address=" + host, "--port=" + strconv.Itoa(port),
				"--metrics_host=" + host, "--metrics_port=" + strconv.Itoa(metrics),
				"--enable_http_metadata_server=false"}, flags...)
		},
		Wait: 30 * time.Second,
	}
}

// Master is the kit's master: a 2 s put discard timeout, so that a check's
// leftovers age out quickly.
var Master = MasterSpec("--put_start_discard_timeout_sec=2")

// Deadline bounds each wait of a check over the real pool: with the master
// killed, each metadata call answers RPC_FAIL only after the client's
// connect retries (about 4.2 s), and a put makes more than one; a put
// FailPut stages also waits for the restarted master (restoreWait).
const Deadline = 30 * time.Second

// restoreWait bounds the wait for a restarted master to take a put again
// (restore). A restarted master answers a start NO_AVAILABLE_HANDLE until
// the client has mounted its segment on it again, about 1 s on a real
// build (docs/mooncake-sdk.md, Master faults); it leaves the rest of
// Deadline to the put's own call against the killed master.
const restoreWait = 20 * time.Second

// pollEvery paces the tries of a wait that polls the real pool: it spaces
// the calls; it synchronises nothing.
const pollEvery = 20 * time.Millisecond

// SkipReasons are the scenarios a real pool cannot stage here, each with
// why.
var SkipReasons = map[conformance.Scenario]string{
	conformance.HoldGet:    "a real get blocks only on a peer that stops answering mid-transfer, which needs the object on another process's segment; the checks' driver owns the only segment, so its gets are local copies (the recorder stages such stalls with a peer process: testdata/mcscenario/s1-get-peer-frozen.json)",
	conformance.Unprovable: "no real put leaves its access unproven: the scatter's return ends it, whatever it answers (the spec's batch_put_from_multi_buffer_ranges: access_end on_return); a get that answers TRANSFER_FAIL does, but that needs a peer frozen mid-transfer (testdata/mcscenario/s3-get-transfer-wait-lands-late.json)",
	conformance.HoldAccess: "the SDK's calls return only after every transfer they posted finished",
}

// Pool is a real mooncake_master and a helper client of it.
type Pool struct {
	// Config opens the checks' drivers: 64 MiB segments on loopback tcp.
	Config mooncake.Config
	// Opened and Closed count the drivers the factory opened and the ones
	// their check closed.
	Opened, Closed atomic.Int64

	master *storekit.Server
	helper mooncake.SDK
	buf    []byte // the helper's registered buffer, for planted objects

	mu     sync.Mutex
	sdks   map[driver.Driver]*trackedSDK // each open check's client, by its driver
	held   map[driver.Driver][]string    // sessions the helper holds for a check
	killed map[driver.Driver]bool        // checks that killed the master
	failed map[driver.Driver][]error     // stagings that failed, reported by the check's cleanup
}

// Start checks that mooncake_master is the cgo SDK's own build, starts it on
// loopback (failing if it listens anywhere else) and opens the helper.
func Start() (*Pool, error) {
	bin, err := exec.LookPath(Master.Binary)
	if err != nil {
		return nil, fmt.Errorf("realkit: %s is not on PATH: %s", Master.Binary, Master.Install)
	}
	if _, err := rules.Pick("mooncake", mooncake.SDKName, cgosdk.SDKVersion, mooncake.Specs()...); err != nil {
		return nil, fmt.Errorf("realkit: %w", err)
	}
	ver, _ := exec.Command(bin, "--version").CombinedOutput()
	if !strings.Contains(string(ver), cgosdk.SDKVersion) {
		return nil, fmt.Errorf("realkit: %s reports %q, not the client's build %q", bin, strings.TrimSpace(string(ver)), cgosdk.SDKVersion)
	}
	m, err := storekit.Start(Master)
	if err != nil {
		return nil, err
	}
	p := &Pool{master: m, sdks: map[driver.Driver]*trackedSDK{}, held: map[driver.Driver][]string{},
		killed: map[driver.Driver]bool{}, failed: map[driver.Driver][]error{}}
	fail := func(err error) (*Pool, error) {
		_ = p.Close()
		return nil, err
	}
	if err := m.LoopbackOnly(); err != nil {
		return fail(err)
	}
	p.Config = mooncake.DefaultConfig()
	p.Config.Mooncake.Master = m.Addr
	p.Config.Mooncake.GlobalSegmentSize = 64 << 20
	if err := p.Config.Validate(); err != nil {
		return fail(err)
	}
	// The helper mounts no segment: every object lives on the segment of
	// the check's driver, the only one mounted while a check runs.
	hc := p.Config.Mooncake
	hc.GlobalSegmentSize = 0
	if p.helper, err = cgosdk.Open(hc); err != nil {
		return fail(fmt.Errorf("realkit: opening the helper client: %w", err))
	}
	if p.buf, err = hostmem.Alloc(2 * conformance.RowBytes); err != nil {
		return fail(err)
	}
	if code, err := p.helper.RegisterBuffer(p.buffer(int64(len(p.buf)))); err != nil || code != 0 {
		return fail(fmt.Errorf("realkit: the helper's register_buffer answered %d, %v", code, err))
	}
	return p, nil
}

// Addr is the master's RPC address.
func (p *Pool) Addr() string { return p.master.Addr }

// PID is the master's process id.
func (p *Pool) PID() int { return p.master.PID() }

// Close closes the helper and stops the master.
func (p *Pool) Close() error {
	var errs []error
	if p.helper != nil {
		if p.buf != nil {
			_, _ = p.helper.UnregisterBuffer(p.buffer(int64(len(p.buf))))
		}
		errs = append(errs, p.helper.Close())
	}
	if p.buf != nil {
		errs = append(errs, hostmem.Free(p.buf))
	}
	p.master.Stop()
	return errors.Join(errs...)
}

func (p *Pool) buffer(n int64) mooncake.Buffer {
	return mooncake.BufferOf(p.buf[:n])
}

// Factory opens each check's driver over a real client. The check's
// cleanup must close it (the harness closes a driver once a drain returned
// true and its region was unregistered); one it does not close fails the
// check, naming it, and its client is torn down so that its segment does
// not outlive the check. A check that killed the master restarts it.
func (p *Pool) Factory() conformance.Factory {
	return func(t conformance.T) driver.Driver {
		var sdk *trackedSDK
		open := func(mc mooncake.ClientConfig) (mooncake.SDK, error) {
			s, err := cgosdk.Open(mc)
			if err != nil {
				return nil, err
			}
			sdk = &trackedSDK{SDK: s}
			return sdk, nil
		}
		// The gate runs a build its spec was not verified on, and reports it
		// (Suite.SDK says so): AllowUnverified.
		d, _, err := mooncake.OpenConfigWith(p.Config, open, os.Getenv, mooncake.Options{AllowUnverified: true})
		if err != nil {
			t.Fatal(err)
		}
		p.Opened.Add(1)
		p.mu.Lock()
		p.sdks[d] = sdk
		p.mu.Unlock()
		// Registered before the harness's cleanup, so it runs after it.
		t.Cleanup(func() {
			p.release(t, d)
			if sdk.closed.Load() {
				p.Closed.Add(1)
				return
			}
			t.Errorf("%s: its driver was not closed (the drain or the unregister was refused); tearing its client down", t.Name())
			if err := sdk.SDK.Close(); err != nil {
				t.Errorf("%s: tearing the unclosed driver's client down: %v", t.Name(), err)
			}
		})
		return d
	}
}

// trackedSDK records whether the driver closed its client, and runs what
// a staging arms after the client's next put session start (failPut).
type trackedSDK struct {
	mooncake.SDK
	closed atomic.Bool
	// afterStart, when set, runs once, after the client's next
	// batch_put_session_start has answered and before that answer
	// returns to the driver.
	afterStart atomic.Pointer[func()]
}

func (s *trackedSDK) Close() error {
	s.closed.Store(true)
	return s.SDK.Close()
}

func (s *trackedSDK) BatchPutSessionStart(keys []string, sizes []int64) ([]int64, error) {
	codes, err := s.SDK.BatchPutSessionStart(keys, sizes)
	if f := s.afterStart.Swap(nil); f != nil {
		(*f)()
	}
	return codes, err
}

// ofCheck is the driver a check's staging is recorded under: the one the
// Factory made. The conformance harness wraps it (its calls bounded), so
// the driver a scenario or Stage is handed is the wrapper; keyed by that,
// a killed master was never restarted (the cleanup looks the Factory's
// driver up) and every later check of a real run failed to reach it.
func ofCheck(d driver.Driver) driver.Driver {
	var md *mooncake.Driver
	if driver.As(d, &md) {
		return md
	}
	return d
}

func (p *Pool) hold(d driver.Driver, keys ...string) {
	d = ofCheck(d)
	p.mu.Lock()
	p.held[d] = append(p.held[d], keys...)
	p.mu.Unlock()
}

// release revokes the sessions the helper opened for d's check, and
// restarts the master if the check killed it and left it down.
func (p *Pool) release(t conformance.T, d driver.Driver) {
	d = ofCheck(d)
	p.mu.Lock()
	keys, killed, failed, sdk := p.held[d], p.killed[d], p.failed[d], p.sdks[d]
	delete(p.held, d)
	delete(p.killed, d)
	delete(p.failed, d)
	delete(p.sdks, d)
	p.mu.Unlock()
	if sdk != nil {
		sdk.afterStart.Store(nil) // a put FailPut armed for never started
	}
	for _, err := range failed {
		t.Errorf("%s: staging on the real pool failed: %v", t.Name(), err)
	}
	if killed {
		if err := p.master.Restart(); err != nil {
			t.Errorf("restarting mooncake_master after %s: %v", t.Name(), err)
		}
		// The helper's first call over its connection to the killed master
		// answers RPC_FAIL (end of file) and the client reconnects: make
		// that call here, not in the next check's staging.
		if err := p.reconnectHelper(time.Now().Add(restoreWait)); err != nil {
			t.Errorf("after restarting mooncake_master for %s: %v", t.Name(), err)
		}
		return // a restarted master holds no session
	}
	if len(keys) > 0 {
		_, _ = p.helper.BatchPutSessionRevoke(keys)
	}
}

// reconnectHelper polls the helper's batch_is_exist until it answers,
// until deadline: its first call over its connection to a killed master
// answers RPC_FAIL (end of file), and the client reconnects.
func (p *Pool) reconnectHelper(deadline time.Time) error {
	return poll(deadline, func() error {
		got, err := p.helper.BatchIsExist([]string{"realkit/reconnect"})
		if err != nil || len(got) != 1 || got[0] < 0 {
			return fmt.Errorf("the helper's batch_is_exist answered %v, %v", got, err)
		}
		return nil
	})
}

// poll calls try until it succeeds or deadline passes, pacing the tries
// by pollEvery; past the deadline it returns try's last error.
func poll(deadline time.Time, try func() error) error {
	for {
		err := try()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pollEvery)
	}
}

// fail records a staging that failed, for d's check to report.
func (p *Pool) fail(d driver.Driver, err error) {
	d = ofCheck(d)
	p.mu.Lock()
	p.failed[d] = append(p.failed[d], err)
	p.mu.Unlock()
}

// kill kills the master for d's check; the check's cleanup restarts it.
func (p *Pool) kill(d driver.Driver) {
	d = ofCheck(d)
	p.mu.Lock()
	p.killed[d] = true
	p.mu.Unlock()
	p.master.Kill()
}

// failPut makes the next put of d's check fail inside the SDK, and only
// that put (conformance.Scenarios.FailPut): it kills the master, so the
// put's batch_put_session_start answers RPC_FAIL after the client's
// connect retries; once that start has answered, and before its answer
// returns to the driver, the master is restarted on its port (restore).
// The driver ends a put whose start answered RPC_FAIL with no further
// call, so the whole put ran against the killed master, and the check's
// next call finds a master that takes a put. A restarted master holds no
// object (every object is gone): the check's key is absent, not stored.
func (p *Pool) failPut(d driver.Driver) {
	d = ofCheck(d)
	p.mu.Lock()
	sdk := p.sdks[d]
	p.mu.Unlock()
	if sdk == nil {
		p.fail(d, errors.New("FailPut: the check's driver has no client this pool opened"))
	} else {
		restore := func() {
			if err := p.restore(d, sdk); err != nil {
				p.fail(d, fmt.Errorf("FailPut: %w", err))
			}
		}
		sdk.afterStart.Store(&restore)
	}
	p.kill(d)
}

// restore restarts the master d's check killed, on its port, and returns
// once it takes a put again: a start through the check's own client is
// accepted (then revoked), and the helper answers. It polls until
// restoreWait passes: the restarted master answers a start
// NO_AVAILABLE_HANDLE until the client has mounted its segment on it
// again (about 1 s), and a client's first call over its connection to the
// killed master answers RPC_FAIL. Each try starts a key of its own, since
// the client refuses a second start of a key it holds.
func (p *Pool) restore(d driver.Driver, sdk *trackedSDK) error {
	if err := p.master.Restart(); err != nil {
		return fmt.Errorf("restarting mooncake_master: %w", err)
	}
	p.mu.Lock()
	delete(p.killed, d) // up again: the check's cleanup has nothing to restart
	p.mu.Unlock()
	deadline := time.Now().Add(restoreWait)
	try := 0
	err := poll(deadline, func() error {
		try++
		k := []string{fmt.Sprintf("realkit/restored/%d", try)}
		codes, err := sdk.SDK.BatchPutSessionStart(k, []int64{conformance.RowBytes})
		if err != nil || len(codes) != 1 || codes[0] != 0 {
			return fmt.Errorf("a put session start through the check's client answered %v, %v", codes, err)
		}
		if codes, err := sdk.SDK.BatchPutSessionRevoke(k); err != nil || len(codes) != 1 || codes[0] != 0 {
			p.fail(d, fmt.Errorf("FailPut: revoking the restarted master's probe session %q answered %v, %v", k[0], codes, err))
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("the restarted mooncake_master took no put within %v (%d tries): %w", restoreWait, try, err)
	}
	if err := p.reconnectHelper(deadline); err != nil {
		return fmt.Errorf("after restarting mooncake_master: %w", err)
	}
	return nil
}

// start opens a helper session on key for n bytes and keeps it for d's
// check: another client writing the key.
func (p *Pool) start(d driver.Driver, key string, n int64) error {
	codes, err := p.helper.BatchPutSessionStart([]string{key}, []int64{n})
	if err != nil || len(codes) != 1 || codes[0] != 0 {
		return fmt.Errorf("the helper's put session start of %q answered %v, %v", key, codes, err)
	}
	p.hold(d, key)
	return nil
}

// plant stores a complete object of n bytes (at most two rows) under key,
// written by the helper: bytes another client put. The helper's first
// transfer to a check's new client can fail (TRANSFER_FAIL at once, seen
// when the new client reuses an earlier one's port); plant then revokes
// and tries again, at most three times.
func (p *Pool) plant(key string, n int64) error {
	var err error
	for try := 0; try < 3; try++ {
		if err = p.plantOnce(key, n); err == nil {
			return nil
		}
	}
	return err
}

func (p *Pool) plantOnce(key string, n int64) error {
	for i := range p.buf[:n] {
		p.buf[i] = byte(i * 3)
	}
	k := []string{key}
	if codes, err := p.helper.BatchPutSessionStart(k, []int64{n}); err != nil || codes[0] != 0 {
		return fmt.Errorf("planting %q: start answered %v, %v", key, codes, err)
	}
	if codes, err := p.helper.BatchPutFromMultiBufferRanges(k, [][]mooncake.Buffer{{p.buffer(n)}}); err != nil || codes[0] != n {
		_, _ = p.helper.BatchPutSessionRevoke(k)
		return fmt.Errorf("planting %q: the scatter of %d bytes answered %v, %v", key, n, codes, err)
	}
	if codes, err := p.helper.BatchPutSessionEnd(k); err != nil || codes[0] != 0 {
		return fmt.Errorf("planting %q: end answered %v, %v", key, codes, err)
	}
	return nil
}

// fill holds the pool full of the helper's open sessions, which the master
// cannot evict, so that a start answers NO_AVAILABLE_HANDLE at once.
func (p *Pool) fill(d driver.Driver, key string) error {
	n := 0
	for _, size := range []int64{16 << 20, 1 << 20, 64 << 10, 4 << 10, conformance.RowBytes} {
		for n < 1<<16 {
			k := fmt.Sprintf("%s/fill/%d", key, n)
			n++
			codes, err := p.helper.BatchPutSessionStart([]string{k}, []int64{size})
			if err != nil || len(codes) != 1 {
				return fmt.Errorf("filling the pool: start of %d bytes answered %v, %v", size, codes, err)
			}
			if codes[0] != 0 {
				break
			}
			p.hold(d, k)
		}
	}
	return nil
}

// Scenarios are what a real pool stages: another client writing (a helper
// session), a full pool (the helper's sessions fill it), a failing put
// (the master killed for the put's start, which answers RPC_FAIL after the
// client's connect retries, about 4 s, then restarted before the put
// returns: failPut) and a failing read (the master killed until the
// check ends). Staging that fails fails the check.
func (p *Pool) Scenarios() conformance.Scenarios {
	return conformance.Scenarios{
		Writing: func(d driver.Driver, key string) func() {
			if err := p.start(d, key, conformance.RowBytes); err != nil {
				p.fail(d, fmt.Errorf("Writing: %w", err))
			}
			return func() { _, _ = p.helper.BatchPutSessionRevoke([]string{key}) }
		},
		Full: func(d driver.Driver, key string) {
			if err := p.fill(d, key); err != nil {
				p.fail(d, fmt.Errorf("Full: %w", err))
			}
		},
		FailPut:  func(d driver.Driver, _ string) { p.failPut(d) },
		FailRead: func(d driver.Driver, _ string) { p.kill(d) },
	}
}

// Stage stages each case the spec marks stageable by real means: an absent
// key, an object the helper planted (whole, shorter or longer than the
// row), a helper session on the key, a full pool, the master killed. It refuses every other
// case, saying so: a real pool gives no other answer on cue.
func (p *Pool) Stage(h *conformance.Harness, c conformance.Case, key string) error {
	code := mooncakegen.Code(c.Answer.Code)
	get := c.Call == "batch_get_into"
	switch {
	case get && c.Answer.Size == conformance.SizeWhole:
		return p.plant(key, conformance.RowBytes)
	case get && c.Answer.Size == conformance.SizeShort:
		return p.plant(key, conformance.RowBytes/2)
	case get && code == mooncakegen.InvalidParams:
		return p.plant(key, conformance.RowBytes+3) // longer than its row
	case get && code == mooncakegen.ObjectNotFound:
		return nil // nothing under the key
	case get && code == mooncakegen.ReplicaIsNotReady:
		return p.start(h.D, key, conformance.RowBytes)
	case c.Call == "batch_put_session_start" && code == mooncakegen.OK,
		c.Call == "batch_put_from_multi_buffer_ranges" && c.Answer.Size == conformance.SizeWhole,
		c.Call == "batch_put_session_end" && code == mooncakegen.OK:
		return nil // a put of an absent key answers these
	case c.Call == "batch_put_session_start" && code == mooncakegen.ObjectAlreadyExists && c.Exists:
		return p.plant(key, conformance.RowBytes)
	case c.Call == "batch_put_session_start" && code == mooncakegen.ObjectAlreadyExists:
		return p.start(h.D, key, conformance.RowBytes)
	case c.Call == "batch_put_session_start" && code == mooncakegen.NoAvailableHandle:
		return p.fill(h.D, key)
	case c.Call == "batch_put_session_start" && code == mooncakegen.RPCFail:
		p.kill(h.D) // the check's cleanup restarts it
		return nil
	}
	return fmt.Errorf("a real pool does not answer %s %s on cue", c.Call, c.Answer.CodeName)
}

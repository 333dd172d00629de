//go:build mooncake

package cgosdk_test

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kvblob/kvblob/conformance"
	gen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/cgosdk"
	"github.com/kvblob/kvblob/stores/mooncake/mctest"
)

// TestRealPool runs the conformance suite against a real mooncake_master it
// starts on loopback, through real clients (P2PHANDSHAKE metadata, tcp). It
// runs only with MOONCAKE_REAL=1; see doc.go for the build.
//
// Every driver a check opens must be closed by the check's cleanup (the
// harness closes a driver only after a drain returned true and its region
// was unregistered); one that is not fails the check, naming it, and its
// client is then torn down so that its segment does not outlive the check.
func TestRealPool(t *testing.T) {
	if os.Getenv("MOONCAKE_REAL") != "1" {
		t.Skip("set MOONCAKE_REAL=1 to run against a real mooncake_master")
	}
	bin, err := exec.LookPath("mooncake_master")
	if err != nil {
		t.Fatalf("MOONCAKE_REAL=1 but mooncake_master is not on PATH: %v", err)
	}
	ver, _ := exec.Command(bin, "--version").CombinedOutput()
	t.Logf("mooncake_master --version: %s", strings.TrimSpace(string(ver)))
	t.Logf("client SDK: %q (RPC %s)", cgosdk.SDKVersion, cgosdk.RPCVersion)
	if !gen.SupportsVersion(cgosdk.SDKVersion) {
		t.Fatalf("the SDK reports version %q; the spec (spec/mooncake-*.yaml, sdk.versions) names %q, so the driver refuses it", cgosdk.SDKVersion, gen.SDKVersions)
	}
	if !strings.Contains(string(ver), cgosdk.SDKVersion) {
		t.Fatalf("mooncake_master (%q) is not the client's build (%q)", strings.TrimSpace(string(ver)), cgosdk.SDKVersion)
	}

	addr := startMaster(t, bin)
	cfg := mooncake.DefaultConfig()
	cfg.Mooncake.Master = addr
	cfg.Mooncake.LocalHostname = "127.0.0.1"
	cfg.Mooncake.MetadataServer = "P2PHANDSHAKE"
	cfg.Mooncake.Protocol = "tcp"
	cfg.Mooncake.GlobalSegmentSize = 64 << 20
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}

	// The helper is a second client of the same master, with no segment of
	// its own, that stages the scenarios a real pool can stage.
	hcfg := cfg.Mooncake
	hcfg.GlobalSegmentSize = 0
	hsdk, err := cgosdk.Open(hcfg)
	if err != nil {
		t.Fatalf("opening the helper client: %v", err)
	}
	help := &helper{t: t, sdk: hsdk, open: map[driver.Driver][]string{}}
	t.Cleanup(func() {
		if err := hsdk.Close(); err != nil {
			t.Errorf("closing the helper client: %v", err)
		}
	})
	// Logged, not enforced: a client's handshake socket and its TCP
	// transport acceptor bind the wildcard address whatever the config says
	// (Mooncake main at 3b5a594: transfer_metadata_plugin.cpp,
	// findAvailableTcpPort, INADDR_ANY; tcp_transport_session_impl.h, the
	// acceptor on tcp::v6()/v4()); no flag or environment variable changes it.
	listenCheck(t, "this test's clients", os.Getpid(), false)

	var opened, closed atomic.Int64
	factory := func(t conformance.T) driver.Driver {
		var sdk *trackedSDK
		open := func(mc mooncake.ClientConfig) (mooncake.SDK, error) {
			s, err := cgosdk.Open(mc)
			if err != nil {
				return nil, err
			}
			sdk = &trackedSDK{SDK: s}
			return sdk, nil
		}
		d, _, err := mooncake.OpenConfig(cfg, open, os.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		opened.Add(1)
		// Registered before the harness's cleanup, so it runs after it.
		t.Cleanup(func() {
			help.release(d)
			if sdk.closed.Load() {
				closed.Add(1)
				return
			}
			t.Errorf("%s: its driver was not closed (the drain or the unregister was refused); tearing its client down", t.Name())
			if err := sdk.SDK.Close(); err != nil {
				t.Errorf("%s: tearing the unclosed driver's client down: %v", t.Name(), err)
			}
		})
		return d
	}
	// The driver's known failures are the same over the real SDK; each still
	// runs and must still fail (reported as a skip).
	suite := conformance.Suite{Scenarios: help.scenarios(), KnownFailures: mctest.KnownFailures()}
	t.Run("conformance", func(t *testing.T) { conformance.Run(t, factory, suite) })
	t.Logf("drivers opened %d, closed by their checks %d", opened.Load(), closed.Load())
}

// trackedSDK records whether the driver closed its client.
type trackedSDK struct {
	mooncake.SDK
	closed atomic.Bool
}

func (s *trackedSDK) Close() error {
	s.closed.Store(true)
	return s.SDK.Close()
}

// helper stages scenarios through a second real client. A staging that
// fails fails the test (t) and leaves the check to fail on its own.
type helper struct {
	t    *testing.T
	sdk  mooncake.SDK
	mu   sync.Mutex
	open map[driver.Driver][]string // sessions the helper holds for a check
}

func (h *helper) hold(d driver.Driver, keys ...string) {
	h.mu.Lock()
	h.open[d] = append(h.open[d], keys...)
	h.mu.Unlock()
}

// release revokes the sessions the helper opened for d's check.
func (h *helper) release(d driver.Driver) {
	h.mu.Lock()
	keys := h.open[d]
	delete(h.open, d)
	h.mu.Unlock()
	if len(keys) > 0 {
		_, _ = h.sdk.BatchPutSessionRevoke(keys)
	}
}

func (h *helper) scenarios() conformance.Scenarios {
	return conformance.Scenarios{
		// Another client holds an open put session on the key.
		Writing: func(d driver.Driver, key string) func() {
			codes, err := h.sdk.BatchPutSessionStart([]string{key}, []int64{conformance.RowBytes})
			if err != nil || len(codes) != 1 || codes[0] != 0 {
				h.t.Errorf("helper: staging Writing: put session start of %q answered %v, %v", key, codes, err)
			}
			return func() { _, _ = h.sdk.BatchPutSessionRevoke([]string{key}) }
		},
		// The pool is full of the helper's open sessions, which the master
		// cannot evict: a start answers NO_AVAILABLE_HANDLE at once. The
		// only segment is the driver's own (the helper mounts none, and the
		// clients of earlier checks are torn down).
		Full: func(d driver.Driver, key string) {
			n := 0
			for _, size := range []int64{16 << 20, 1 << 20, 64 << 10, 4 << 10, conformance.RowBytes} {
				for n < 1<<16 {
					k := fmt.Sprintf("%s/fill/%d", key, n)
					n++
					codes, err := h.sdk.BatchPutSessionStart([]string{k}, []int64{size})
					if err != nil || len(codes) != 1 {
						h.t.Errorf("helper: staging Full: start of %d bytes answered %v, %v", size, codes, err)
						return
					}
					if codes[0] != 0 {
						break
					}
					h.hold(d, k)
				}
			}
		},
	}
}

// startMaster starts mooncake_master listening on loopback only, on a free
// RPC port and a free metrics port, and stops it when the test ends.
func startMaster(t *testing.T, bin string) string {
	t.Helper()
	port, metrics := freePort(t), freePort(t)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin,
		"--rpc_address=127.0.0.1", "--port="+strconv.Itoa(port),
		"--metrics_host=127.0.0.1", "--metrics_port="+strconv.Itoa(metrics),
		"--enable_http_metadata_server=false",
		"--put_start_discard_timeout_sec=2")
	logf, err := os.Create(filepath.Join(t.TempDir(), "mooncake_master.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		_ = logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logf.Name()); err == nil {
				t.Logf("mooncake_master log:\n%s", tail(string(b), 4000))
			}
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("mooncake_master did not listen on %s within 30s", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("mooncake_master pid %d: rpc %s, metrics 127.0.0.1:%d", cmd.Process.Pid, addr, metrics)
	listenCheck(t, "mooncake_master", cmd.Process.Pid, true)
	return addr
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// listenCheck logs where process pid listens on TCP and, if strict, fails
// the test for every listener not on loopback. It reads /proc, so it needs
// no tool.
func listenCheck(t *testing.T, what string, pid int, strict bool) {
	t.Helper()
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Logf("cannot list %s's sockets: %v", what, err)
		return
	}
	for _, fd := range fds {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	var listening []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" || !inodes[fields[9]] { // 0A: LISTEN
				continue
			}
			ip, port := procAddr(fields[1])
			listening = append(listening, net.JoinHostPort(ip.String(), strconv.Itoa(port)))
			if strict && !ip.IsLoopback() {
				t.Errorf("%s (pid %d) listens on %s, not on loopback", what, pid, net.JoinHostPort(ip.String(), strconv.Itoa(port)))
			}
		}
		f.Close()
	}
	t.Logf("%s (pid %d) listens on %v", what, pid, listening)
}

// procAddr decodes a /proc/net/tcp{,6} address: the IP as 32-bit words in
// host (little-endian) order, then the port in hex.
func procAddr(s string) (net.IP, int) {
	hexIP, hexPort, _ := strings.Cut(s, ":")
	b, _ := hex.DecodeString(hexIP)
	for i := 0; i+4 <= len(b); i += 4 {
		b[i], b[i+1], b[i+2], b[i+3] = b[i+3], b[i+2], b[i+1], b[i]
	}
	port, _ := strconv.ParseInt(hexPort, 16, 32)
	return net.IP(b), int(port)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

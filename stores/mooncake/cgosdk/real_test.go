//go:build mooncake

package cgosdk_test

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kvblob/kvblob/conformance"
	gen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/cgosdk"
)

// TestRealPool runs the conformance suite and the stageable generated cases
// against a real mooncake_master it starts on loopback. It runs only with
// MOONCAKE_REAL=1.
func TestRealPool(t *testing.T) {
	if os.Getenv("MOONCAKE_REAL") != "1" {
		t.Skip("set MOONCAKE_REAL=1 to run against a real mooncake_master")
	}
	bin, err := exec.LookPath("mooncake_master")
	if err != nil {
		t.Fatalf("MOONCAKE_REAL=1 but mooncake_master is not on PATH: %v", err)
	}
	ver, _ := exec.Command(bin, "--version").CombinedOutput()
	t.Logf("mooncake_master: %s; client SDK: %s", strings.TrimSpace(string(ver)), cgosdk.SDKVersion)
	if !gen.SupportsVersion(cgosdk.SDKVersion) || !strings.Contains(string(ver), cgosdk.SDKVersion) {
		t.Fatalf("the master (%q) and the client (%q) must both be a build this repository has a spec for (%v)", ver, cgosdk.SDKVersion, gen.SDKVersions)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--port", port, "--put_start_discard_timeout_sec", "2")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
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
	cfg := mooncake.DefaultConfig()
	cfg.Mooncake.Master = addr
	cfg.Mooncake.GlobalSegmentSize = 64 << 20
	factory := func(t conformance.T) driver.Driver {
		d, _, err := mooncake.OpenConfig(cfg, cgosdk.Open, os.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	t.Run("conformance", func(t *testing.T) { conformance.Run(t, factory, conformance.Suite{}) })
}

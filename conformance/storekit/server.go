// This file runs a store's real server for tests: a binary started on a
// free loopback port, waited on until it answers, frozen (SIGSTOP), thawed,
// killed and restarted on the same port for fault tests, and stopped and
// cleaned up at the end. A kit describes its server once in a Spec.
//
// Servers started here must bind loopback only: Spec.Args is given the
// address to bind, and Server.Listening reports what the process really
// listens on, so a test can prove it (Server.LoopbackOnly).

package storekit

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec describes how to run one kind of server.
type Spec struct {
	// Binary is the program: a path when it holds a slash, else a name
	// FindBinary looks up (PATH, then where go install puts programs).
	Binary string
	// Install says how to get Binary when it is missing
	// ("apt-get install redis-server"), for Available's reason.
	Install string
	// Args returns the arguments of a server bound to host:port that keeps
	// its files in dir (a fresh temporary folder, removed by Stop).
	Args func(host string, port int, dir string) []string
	// Env is added to the server's environment.
	Env []string
	// Ready reports whether the server at addr answers. Start calls it
	// until it returns nil or Wait passes. Nil: a TCP connection succeeds.
	Ready func(addr string) error
	// Wait bounds how long Start waits for Ready (default 10 s).
	Wait time.Duration
}

// Available reports whether spec's binary is installed and, when it is
// not, what to do.
func Available(spec Spec) (bool, string) {
	if _, ok := FindBinary(spec.Binary); !ok {
		why := spec.Binary + " is not installed"
		if spec.Install != "" {
			why += " (" + spec.Install + ")"
		}
		return false, why
	}
	return true, ""
}

// FindBinary finds the program name: name itself when it holds a slash,
// else in PATH, else in GOBIN or GOPATH/bin, where go install puts a
// server written in Go (versitygw) without it being on PATH.
func FindBinary(name string) (string, bool) {
	if strings.Contains(name, "/") {
		fi, err := os.Stat(name)
		return name, err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	for _, dir := range []string{os.Getenv("GOBIN"), filepath.Join(build.Default.GOPATH, "bin")} {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// FreePort asks the kernel for a free port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Server is one running server process. Its methods are safe for
// concurrent use.
type Server struct {
	// Addr is 127.0.0.1:Port.
	Addr string
	Port int
	// Dir is the server's own folder; Stop removes it.
	Dir string

	spec Spec
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process exited
	stop sync.Once
}

// Start starts a server of spec on a free loopback port and waits until it
// answers. On failure it returns an error holding the server's log.
func Start(spec Spec) (*Server, error) {
	if spec.Args == nil {
		return nil, errors.New("storekit: Spec.Args is nil; say how to run the server on a port")
	}
	bin, ok := FindBinary(spec.Binary)
	if !ok {
		_, why := Available(spec)
		return nil, errors.New("storekit: " + why)
	}
	spec.Binary = bin
	// A port FreePort named is free only until it returns: another process
	// (another test binary, another user of the machine) may bind it before
	// the server does. A server whose log says so is started again, on
	// other ports (Args is called afresh).
	for attempt := 1; ; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "kvblob-"+filepath.Base(spec.Binary)+"-")
		if err != nil {
			return nil, err
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Dir: dir, spec: spec}
		err = s.launch()
		if err == nil {
			return s, nil
		}
		os.RemoveAll(dir)
		if attempt == startAttempts || !AddrInUse(err) {
			return nil, err
		}
	}
}

// startAttempts bounds how often Start tries new ports for a server that
// found its address in use.
const startAttempts = 5

// AddrInUse reports whether err (a failed start, which holds the server's
// log) says that an address the server was to bind was in use.
func AddrInUse(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "address already in use")
}

// launch starts the process and waits until it answers.
func (s *Server) launch() error {
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(s.spec.Binary, s.spec.Args("127.0.0.1", s.Port, s.Dir)...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.spec.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The server dies with the test that started it, however the test
	// ends (a timeout's panic, Ctrl-C, a crash): no server outlives its
	// run (StartTied).
	waited, err := StartTied(cmd)
	if err != nil {
		return fmt.Errorf("storekit: starting %s: %w", s.spec.Binary, err)
	}
	done := make(chan struct{})
	go func() { <-waited; close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	if err := s.waitReady(done); err != nil {
		s.kill()
		return fmt.Errorf("%w\n%s log:\n%s", err, s.spec.Binary, s.Log())
	}
	return nil
}

// StartTied starts cmd so that it dies with this process, however the
// process ends, and waits for it: the returned channel yields Wait's error
// once it exited. Linux sends the parent-death signal (SIGKILL here) when
// the thread that forked the process exits, not the process, and the Go
// runtime ends a thread whenever a goroutine locked to it exits (in a test,
// in a cgo SDK, anywhere in the process). So cmd is started and waited for
// by one goroutine locked to its thread for the child's whole life: that
// thread ends only after the child exited. cmd's own SysProcAttr is
// replaced. Give cmd an *os.File, not a pipe from StdoutPipe, for any
// output read until the child exits, since Wait closes such pipes.
func StartTied(cmd *exec.Cmd) (<-chan error, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	started := make(chan error, 1)
	waited := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		waited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	return waited, nil
}

func (s *Server) logPath() string { return filepath.Join(s.Dir, "server.log") }

// waitReady calls Ready until it answers, the process exits or Wait
// passes. It paces its tries while a process starts; it synchronises
// nothing else.
func (s *Server) waitReady(exited <-chan struct{}) error {
	ready := s.spec.Ready
	if ready == nil {
		ready = func(addr string) error {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
			}
			return err
		}
	}
	wait := s.spec.Wait
	if wait == 0 {
		wait = 10 * time.Second
	}
	deadline := time.Now().Add(wait)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("storekit: %s exited before it answered at %s", s.spec.Binary, s.Addr)
		default:
		}
		if last = ready(s.Addr); last == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("storekit: %s at %s did not answer within %v: %v", s.spec.Binary, s.Addr, wait, last)
}

// PID is the current process's id.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	p := s.cmd.Process
	s.mu.Unlock()
	return p.Signal(sig)
}

// Freeze stops the process (SIGSTOP): it holds its connections and
// answers nothing until Thaw.
func (s *Server) Freeze() error { return s.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen process (SIGCONT).
func (s *Server) Thaw() error { return s.signal(syscall.SIGCONT) }

// Kill kills the process at once, as a crash would, and waits until it
// exited. Its folder stays, so Restart can start it again.
func (s *Server) Kill() { s.kill() }

func (s *Server) kill() {
	s.mu.Lock()
	p, done := s.cmd.Process, s.done
	s.mu.Unlock()
	_ = p.Kill()
	<-done
}

// Restart starts the server again on the same port and folder after Kill,
// and waits until it answers.
func (s *Server) Restart() error {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	select {
	case <-done:
	default:
		return fmt.Errorf("storekit: %s at %s is still running; Kill it first", s.spec.Binary, s.Addr)
	}
	return s.launch()
}

// Stop kills the server (thawing it first) and removes its folder. It may
// be called more than once.
func (s *Server) Stop() {
	s.stop.Do(func() {
		_ = s.Thaw()
		s.kill()
		os.RemoveAll(s.Dir)
	})
}

// Log returns what the server printed so far.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.logPath())
	return string(b)
}

// Listening returns the TCP addresses the server process listens on, read
// from /proc (Linux): the sockets among its open files that are in the
// LISTEN state.
func (s *Server) Listening() ([]netip.AddrPort, error) { return ListeningOf(s.PID()) }

// ListeningOf returns the TCP addresses process pid listens on, as
// Listening does: for a process storekit did not start (a test's own,
// whose SDK opens listeners of its own).
func ListeningOf(pid int) ([]netip.AddrPort, error) {
	inodes := map[string]bool{}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, fmt.Errorf("storekit: reading the open files of pid %d: %w", pid, err)
	}
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	var out []netip.AddrPort
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		if err != nil {
			continue // no IPv6 on this host
		}
		listening, err := parseListening(bufio.NewScanner(f), inodes)
		f.Close()
		if err != nil {
			return nil, err
		}
		out = append(out, listening...)
	}
	return out, nil
}

// parseListening reads a /proc/net/tcp table and returns the local
// addresses of the LISTEN sockets whose inode is in inodes.
func parseListening(sc *bufio.Scanner, inodes map[string]bool) ([]netip.AddrPort, error) {
	var out []netip.AddrPort
	sc.Scan() // the header
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		ap, err := parseProcAddr(f[1])
		if err != nil {
			return nil, err
		}
		out = append(out, ap)
	}
	return out, sc.Err()
}

// parseProcAddr decodes /proc/net/tcp's "0100007F:1F90": the address as
// 32-bit words in host (little-endian) order, then the port in hex.
func parseProcAddr(s string) (netip.AddrPort, error) {
	host, port, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(host)
	if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, fmt.Errorf("storekit: unreadable /proc address %q", s)
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	p, err := strconv.ParseUint(port, 16, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("storekit: unreadable /proc port %q", s)
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(p)), nil
}

// LoopbackOnly returns an error naming every address the server listens on
// outside the loopback range (0.0.0.0 and :: among them).
func (s *Server) LoopbackOnly() error {
	addrs, err := s.Listening()
	if err != nil {
		return err
	}
	if len(addrs) == 0 {
		return fmt.Errorf("storekit: %s (pid %d) listens on no TCP address", s.spec.Binary, s.PID())
	}
	if bad := beyondLoopback(addrs); len(bad) > 0 {
		return fmt.Errorf("storekit: %s (pid %d) listens beyond loopback on %s", s.spec.Binary, s.PID(), strings.Join(bad, ", "))
	}
	return nil
}

// beyondLoopback returns the addresses of addrs outside the loopback range.
func beyondLoopback(addrs []netip.AddrPort) []string {
	var bad []string
	for _, a := range addrs {
		if !a.Addr().IsLoopback() {
			bad = append(bad, a.String())
		}
	}
	return bad
}

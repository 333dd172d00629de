// This file runs a store's real server for tests: a binary found where
// Debian or go install put it, its folder prepared once (Spec.Init), run
// as the user it needs (Spec.User), started on a free loopback port and
// waited on until it answers, frozen (SIGSTOP), thawed, killed and
// restarted on the same port for fault tests, and at the end asked to stop
// (SIGTERM), killed only if it does not, and cleaned up. It dies with the
// test process however that ends. A kit describes its server once in a
// Spec.
//
// Servers started here must bind loopback only: Spec.Args is given the
// address to bind, and Server.Listening reports what the process really
// listens on, so a test can prove it (Server.LoopbackOnly).

package storekit

import (
	"bufio"
	"cmp"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec describes how to run one kind of server.
type Spec struct {
	// Binary is the program: a path when it holds a slash, else a name
	// looked up in Dirs, then where Debian and go install put programs
	// (FindBinaryIn).
	Binary string
	// Dirs are folders to look for Binary (and Init's programs) in before
	// any other, each a glob whose matches are tried highest version first:
	// "/usr/lib/postgresql/*/bin", where Debian puts PostgreSQL's server.
	Dirs []string
	// Install says how to get Binary when it is missing
	// ("apt-get install redis-server"), for Available's reason.
	Install string
	// Args returns the arguments of a server bound to host:port that keeps
	// its files in dir (a fresh temporary folder, removed by Stop).
	Args func(host string, port int, dir string) []string
	// Env is added to the server's environment (and Init's programs').
	Env []string
	// Init, when set, prepares dir before the server's first start, never
	// before a Restart (PostgreSQL's initdb). Its run runs a program,
	// found as Binary is, as User with Env, tied to this process as the
	// server is, its output going to the server's log, and returns an
	// error holding that log when the program fails or outlasts Wait.
	Init func(dir string, run func(program string, args ...string) error) error
	// User runs the server and Init's programs as this user (a name or a
	// uid), for a server that refuses root (PostgreSQL); the server's
	// folder is handed to that user. Empty: the test process's own user.
	// Another user than the process's own needs the process to be root.
	User string
	// Ready reports whether the server at addr answers. Start calls it
	// until it returns nil or Wait passes. Nil: a TCP connection succeeds.
	Ready func(addr string) error
	// Wait bounds how long Start waits for Ready, and each of Init's
	// programs (default 10 s).
	Wait time.Duration
	// StopWait bounds how long Stop waits for the server to exit after
	// SIGTERM before it kills it (default 5 s).
	StopWait time.Duration
}

func (sp Spec) wait() time.Duration {
	if sp.Wait == 0 {
		return 10 * time.Second
	}
	return sp.Wait
}

// Available reports whether spec's binary is installed and, when it is
// not, what to do.
func Available(spec Spec) (bool, string) {
	if _, ok := FindBinaryIn(spec.Binary, spec.Dirs); !ok {
		why := spec.Binary + " is not installed"
		if spec.Install != "" {
			why += " (" + spec.Install + ")"
		}
		return false, why
	}
	return true, ""
}

// FindBinary finds the program name as FindBinaryIn does, with no folders
// of the caller's own.
func FindBinary(name string) (string, bool) { return FindBinaryIn(name, nil) }

// sbinDirs are where Debian puts programs for root (a server, say
// /usr/sbin/nginx), which a user's PATH leaves out.
var sbinDirs = []string{"/usr/local/sbin", "/usr/sbin", "/sbin"}

// FindBinaryIn finds the program name: name itself when it holds a slash;
// else in dirs (globs, each one's matches highest version first), then
// PATH, then GOBIN and GOPATH/bin, where go install puts a server written
// in Go (versitygw), then Debian's sbin folders.
func FindBinaryIn(name string, dirs []string) (string, bool) {
	if strings.Contains(name, "/") {
		return name, executable(name)
	}
	for _, d := range globDirs(dirs) {
		if p := filepath.Join(d, name); executable(p) {
			return p, true
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, true
	}
	for _, dir := range append([]string{os.Getenv("GOBIN"), filepath.Join(build.Default.GOPATH, "bin")}, sbinDirs...) {
		if p := filepath.Join(dir, name); dir != "" && executable(p) {
			return p, true
		}
	}
	return "", false
}

func executable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// globDirs expands each pattern, its matches highest version first
// (numbers compared as numbers: 15 before 9).
func globDirs(patterns []string) []string {
	var out []string
	for _, pat := range patterns {
		m, _ := filepath.Glob(pat) // a bad pattern matches nothing
		slices.SortFunc(m, func(a, b string) int { return -compareVersions(a, b) })
		out = append(out, m...)
	}
	return out
}

// compareVersions orders strings as their runs of digits say (9 < 15),
// and otherwise bytewise.
func compareVersions(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Compare(len(na), len(nb)); c != 0 {
				return c
			}
			if c := strings.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return cmp.Compare(a[0], b[0])
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
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
	cred *syscall.Credential // nil: the test process's own user
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when the current process exited
	stop sync.Once
	// polite: Stop's SIGTERM ended the server.
	polite bool
}

// Start starts a server of spec on a free loopback port and waits until it
// answers. On failure it returns an error holding the server's log.
func Start(spec Spec) (*Server, error) {
	if spec.Args == nil {
		return nil, errors.New("storekit: Spec.Args is nil; say how to run the server on a port")
	}
	bin, ok := FindBinaryIn(spec.Binary, spec.Dirs)
	if !ok {
		_, why := Available(spec)
		return nil, errors.New("storekit: " + why)
	}
	spec.Binary = bin
	cred, err := credential(spec.User)
	if err != nil {
		return nil, err
	}
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
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Dir: dir, spec: spec, cred: cred}
		err = s.prepare()
		if err == nil {
			err = s.launch()
		}
		if err == nil {
			return s, nil
		}
		os.RemoveAll(dir)
		if attempt == startAttempts || !AddrInUse(err) {
			return nil, err
		}
	}
}

// credential is the Credential that runs a process as user ("" or the
// process's own user: nil, no change).
func credential(name string) (*syscall.Credential, error) {
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		if u, err = user.LookupId(name); err != nil {
			return nil, fmt.Errorf("storekit: no user %q to run the server as; create it, or leave Spec.User empty", name)
		}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("storekit: user %q has uid %q and gid %q, not numbers", name, u.Uid, u.Gid)
	}
	if int(uid) == os.Getuid() {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("storekit: running the server as user %s needs root (the tests run as uid %d); run them as root or as %s", name, os.Getuid(), name)
	}
	// The user's own groups, not the test process's (root's) kept.
	var groups []uint32
	ids, _ := u.GroupIds() // none found: the primary group alone
	for _, id := range ids {
		if g, err := strconv.ParseUint(id, 10, 32); err == nil {
			groups = append(groups, uint32(g))
		}
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}, nil
}

// prepare hands the server's folder to its user and runs Spec.Init.
func (s *Server) prepare() error {
	if s.cred != nil {
		if err := os.Chown(s.Dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("storekit: handing %s to user %s: %w", s.Dir, s.spec.User, err)
		}
	}
	if s.spec.Init == nil {
		return nil
	}
	if err := s.spec.Init(s.Dir, s.runInit); err != nil {
		return fmt.Errorf("storekit: preparing %s's folder: %w", filepath.Base(s.spec.Binary), err)
	}
	return nil
}

// runInit runs one of Init's programs to completion, as the server would
// run, and bounded by Spec.Wait.
func (s *Server) runInit(program string, args ...string) error {
	bin, ok := FindBinaryIn(program, s.spec.Dirs)
	if !ok {
		return fmt.Errorf("storekit: %s, which Init runs, is not installed", program)
	}
	cmd, logf, err := s.command(bin, args)
	if err != nil {
		return err
	}
	defer logf.Close()
	waited, err := StartTied(cmd)
	if err != nil {
		return fmt.Errorf("storekit: starting %s: %w", bin, err)
	}
	select {
	case err = <-waited:
	case <-time.After(s.spec.wait()):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-waited
		err = fmt.Errorf("did not finish within %v", s.spec.wait())
	}
	if err != nil {
		return fmt.Errorf("storekit: %s %s: %v\nits log:\n%s", bin, strings.Join(args, " "), err, s.Log())
	}
	return nil
}

// command is bin with args as the server runs: in its folder, with its
// environment and user, its output appended to the server's log (the
// returned file, which the caller closes once the process started).
func (s *Server) command(bin string, args []string) (*exec.Cmd, *os.File, error) {
	logf, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = s.Dir
	cmd.Env = append(os.Environ(), s.spec.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd, logf, nil
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
	cmd, logf, err := s.command(s.spec.Binary, s.spec.Args("127.0.0.1", s.Port, s.Dir))
	if err != nil {
		return err
	}
	defer logf.Close()
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
// thread ends only after the child exited.
//
// cmd also leads a process group of its own, so that a signal to the
// group (Server's stop, kill, freeze) reaches the processes it forks
// (PostgreSQL's backends). Of cmd's SysProcAttr only Credential is kept:
// the child switches user before it sets its parent-death signal (Go's
// fork does so in that order), since a change of user clears that signal.
// Give cmd an *os.File, not a pipe from StdoutPipe, for any output read
// until the child exits, since Wait closes such pipes.
func StartTied(cmd *exec.Cmd) (<-chan error, error) {
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if cmd.SysProcAttr != nil {
		attr.Credential = cmd.SysProcAttr.Credential
	}
	cmd.SysProcAttr = attr
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
	wait := s.spec.wait()
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

// signal signals the server's process group: the server and every
// process it forked. A group that is gone (its every process exited)
// leaves the server's own process to signal, which answers whether it
// still runs.
func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	p := s.cmd.Process
	s.mu.Unlock()
	if err := syscall.Kill(-p.Pid, sig); err != syscall.ESRCH {
		return err
	}
	return p.Signal(sig)
}

// Freeze stops the server's processes (SIGSTOP): they hold their
// connections and answer nothing until Thaw.
func (s *Server) Freeze() error { return s.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server (SIGCONT).
func (s *Server) Thaw() error { return s.signal(syscall.SIGCONT) }

// Kill kills the server's processes at once (SIGKILL), as a crash would,
// and waits until the server exited. Its folder stays, so Restart can
// start it again.
func (s *Server) Kill() { s.kill() }

func (s *Server) kill() {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	_ = s.signal(syscall.SIGKILL)
	<-done
}

// Restart starts the server again on the same port and folder after Kill,
// and waits until it answers. Spec.Init does not run again.
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

// Stop asks the server to exit (thawing it first, then SIGTERM), kills
// its processes when it has not exited within Spec.StopWait (default
// 5 s), and removes its folder. It may be called more than once;
// ExitedWhenAsked says how it went.
func (s *Server) Stop() {
	s.stop.Do(func() {
		polite := s.terminate()
		s.mu.Lock()
		s.polite = polite
		s.mu.Unlock()
		os.RemoveAll(s.Dir)
	})
}

// ExitedWhenAsked reports whether Stop's SIGTERM ended the server: false
// when Stop had to kill it, when it had exited before, or before Stop.
func (s *Server) ExitedWhenAsked() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polite
}

// terminate is Stop's SIGTERM, bounded wait and SIGKILL.
func (s *Server) terminate() bool {
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	select {
	case <-done:
		_ = s.signal(syscall.SIGKILL) // what the server forked and left behind
		return false
	default:
	}
	_ = s.Thaw()
	_ = s.signal(syscall.SIGTERM)
	wait := s.spec.StopWait
	if wait == 0 {
		wait = 5 * time.Second
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
		_ = s.signal(syscall.SIGKILL) // what the server forked and left behind
		return true
	case <-t.C:
		s.kill()
		return false
	}
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

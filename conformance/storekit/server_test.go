package storekit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// The test binary is its own server: run with SERVERPROC_FAKE=host it
// listens on host:port (port from its last argument) and answers each line:
// PING with PONG, UID with its user id, GROUPS with its groups, CHILD with the pid of a child it
// forks (a sleeper, as PostgreSQL forks its backends); on SIGTERM it exits
// (SERVERPROC_TERM=ignore: it ignores SIGTERM), and with
// SERVERPROC_NEEDINIT=1 it refuses to start until SERVERPROC_FAKE=init
// prepared its folder. With SERVERPROC_FAKE=fail it prints a line and
// exits; with SERVERPROC_FAKE=parent it starts such a server (as the user
// SERVERPROC_USER names, from the binary SERVERPROC_BIN names), prints its
// pid and waits to be killed.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && strings.HasPrefix(os.Args[1], "fake-init") {
		os.Exit(fakeInit(os.Args[1]))
	}
	if dir := os.Getenv(mountOwnerEnv); dir != "" {
		os.Exit(mountOwner(dir))
	}
	if mode := os.Getenv(mainModeEnv); mode != "" {
		runMain(m, mode)
	}
	switch mode := os.Getenv("SERVERPROC_FAKE"); mode {
	case "":
		goleak.VerifyTestMain(m)
	case "fail":
		fmt.Println("fake: refusing to start")
		os.Exit(3)
	case "sleeper":
		if os.Getenv("SERVERPROC_TERM") == "ignore" {
			signal.Ignore(syscall.SIGTERM)
		}
		never := make(chan os.Signal, 1)
		signal.Notify(never, syscall.SIGUSR1) // never sent: it idles until killed
		<-never
	case "parent":
		// A test process that starts a server and is then killed.
		spec := fake("127.0.0.1")
		spec.Binary, spec.User = os.Getenv("SERVERPROC_BIN"), os.Getenv("SERVERPROC_USER")
		s, err := Start(spec)
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println(s.PID())
		select {}
	default:
		fakeServer(mode)
	}
}

// initMark is the file the fake's init writes in the server's folder.
const initMark = "initialised"

// fakeInit is the fake's init program (its first argument fake-init):
// it adds a line to initMark in its folder; fake-init-fail fails, saying
// so.
func fakeInit(mode string) int {
	if mode == "fake-init-fail" {
		fmt.Println("fake init: refusing")
		return 1
	}
	f, err := os.OpenFile(initMark, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err == nil {
		_, err = fmt.Fprintln(f, "initialised by uid", os.Getuid())
		f.Close()
	}
	if err != nil {
		fmt.Println("fake init:", err)
		return 1
	}
	return 0
}

func fakeServer(host string) {
	if os.Getenv("SERVERPROC_TERM") == "ignore" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() { <-term; fmt.Println("fake: SIGTERM, exiting"); os.Exit(0) }()
	}
	if os.Getenv("SERVERPROC_NEEDINIT") == "1" {
		if _, err := os.Stat(initMark); err != nil {
			fmt.Println("fake: my folder was never initialised")
			os.Exit(1)
		}
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, os.Args[len(os.Args)-1]))
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		go func() {
			defer c.Close()
			sc := bufio.NewScanner(c)
			for sc.Scan() {
				switch sc.Text() {
				case "UID":
					fmt.Fprintln(c, os.Getuid())
				case "GROUPS":
					groups, _ := os.Getgroups()
					fmt.Fprintln(c, groups)
				case "CHILD":
					child := exec.Command(os.Args[0])
					child.Env = append(os.Environ(), "SERVERPROC_FAKE=sleeper")
					if err := child.Start(); err != nil {
						fmt.Fprintln(c, err)
						continue
					}
					fmt.Fprintln(c, child.Process.Pid)
				default:
					fmt.Fprintln(c, "PONG")
				}
			}
		}()
	}
}

// ask sends one line to the fake at addr and returns its answer.
func ask(addr, line string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintln(c, line)
	answer, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(answer), err
}

func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	fmt.Fprintln(c, "PING")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != "PONG" {
		return fmt.Errorf("answered %q", line)
	}
	return nil
}

func fake(bind string) Spec {
	return Spec{
		Binary: os.Args[0], Env: []string{"SERVERPROC_FAKE=" + bind},
		Args:  func(_ string, port int, _ string) []string { return []string{strconv.Itoa(port)} },
		Ready: ping,
	}
}

// state is the process state letter from /proc/PID/stat (T when stopped).
func state(t *testing.T, pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	return procState(b)
}

// procState reads the state letter out of a /proc/PID/stat line.
func procState(stat []byte) byte {
	s := string(stat)
	return s[strings.LastIndexByte(s, ')')+2]
}

func waitState(t *testing.T, pid int, want byte) {
	deadline := time.Now().Add(10 * time.Second)
	for state(t, pid) != want {
		require.True(t, time.Now().Before(deadline), "pid %d never reached state %c", pid, want)
		time.Sleep(time.Millisecond) // paces a poll of the kernel's state
	}
}

func TestAServerAnswersFreezesThawsAndRestarts(t *testing.T) {
	s, err := Start(fake("127.0.0.1"))
	require.NoError(t, err)
	defer s.Stop()
	require.NoError(t, ping(s.Addr))
	addrs, err := s.Listening()
	require.NoError(t, err)
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort(s.Addr)}, addrs)
	assert.NoError(t, s.LoopbackOnly())

	require.NoError(t, s.Freeze())
	waitState(t, s.PID(), 'T')
	require.NoError(t, s.Thaw())
	require.NoError(t, ping(s.Addr))

	first := s.PID()
	assert.ErrorContains(t, s.Restart(), "still running")
	s.Kill()
	assert.Error(t, ping(s.Addr), "a killed server answers nothing")
	require.NoError(t, s.Restart())
	assert.NotEqual(t, first, s.PID())
	require.NoError(t, ping(s.Addr), "the restarted server answers on the same port")

	dir := s.Dir
	s.Stop()
	s.Stop()
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "Stop removes the server's folder")
}

// TestListeningFindsWhatBindsBeyondLoopback reads a /proc/net/tcp6 table
// of one process's sockets (a server bound to every address, and its
// loopback listener) rather than start a server beyond loopback.
func TestListeningFindsWhatBindsBeyondLoopback(t *testing.T) {
	table := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2222 1 0000000000000000 100 0 0 10 0
   2: 00000000000000000000000001000000:1F92 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 100 0 0 10 0
   3: 00000000000000000000000001000000:1F93 00000000000000000000000001000000:9999 01 00000000:00000000 00:00000000 00000000     0        0 4444 1 0000000000000000 100 0 0 10 0
`
	got, err := parseListening(bufio.NewScanner(strings.NewReader(table)), map[string]bool{"1111": true, "2222": true, "4444": true})
	require.NoError(t, err)
	assert.Equal(t, []netip.AddrPort{netip.MustParseAddrPort("[::]:8080"), netip.MustParseAddrPort("[::1]:8081")}, got,
		"LISTEN sockets of the process only: not another process's (3333), not a connection (4444)")
	assert.Equal(t, []string{"[::]:8080"}, beyondLoopback(got))
}

func TestStartSaysWhyAServerDidNotStart(t *testing.T) {
	_, err := Start(fake("fail"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited before it answered")
	assert.Contains(t, err.Error(), "fake: refusing to start", "the error carries the server's log")

	missing := Spec{Binary: "kvblob-no-such-server", Install: "apt-get install kvblob-no-such-server", Args: fake("").Args}
	ok, why := Available(missing)
	assert.False(t, ok)
	assert.Equal(t, "kvblob-no-such-server is not installed (apt-get install kvblob-no-such-server)", why)
	_, err = Start(missing)
	assert.ErrorContains(t, err, why)
	_, err = Start(Spec{Binary: os.Args[0]})
	assert.ErrorContains(t, err, "Spec.Args is nil")
}

func TestParseProcAddr(t *testing.T) {
	cases := map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0050":                         "0.0.0.0:80",
		"00000000000000000000000001000000:1F90": "[::1]:8080",
		"00000000000000000000000000000000:0016": "[::]:22",
	}
	for in, want := range cases {
		got, err := parseProcAddr(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got.String(), in)
	}
	for _, bad := range []string{"", "zz:1", "0100007F", "0100007F:XYZ", "01007F:0001"} {
		_, err := parseProcAddr(bad)
		assert.Error(t, err, bad)
	}
}

// A test killed mid-run (a timeout, Ctrl-C, a crash) must not leave its
// servers running: each server dies with the process that started it,
// also when it runs as another user (a change of user clears a process's
// parent-death signal, so the child must set it after switching).
func TestAServerDiesWithTheProcessThatStartedIt(t *testing.T) {
	for _, c := range []struct{ name, user string }{{"as the test's user", ""}, {"as another user", "nobody"}} {
		t.Run(c.name, func(t *testing.T) {
			if c.user != "" {
				needRoot(t)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "SERVERPROC_FAKE=parent", "SERVERPROC_USER="+c.user, "SERVERPROC_BIN="+sharedBinary(t))
			out, err := cmd.StdoutPipe()
			require.NoError(t, err)
			require.NoError(t, cmd.Start())
			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err, "the parent did not report its server")
			pid, err := strconv.Atoi(strings.TrimSpace(line))
			require.NoError(t, err, "the parent said %q", line)
			require.NoError(t, cmd.Process.Kill())
			_ = cmd.Wait()
			if !waitGone(pid) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("server pid %d still runs 10 s after the process that started it was killed", pid)
			}
		})
	}
}

// waitGone waits up to 10 s for process pid to exit (gone, or dead and
// not yet reaped), and reports whether it did.
func waitGone(pid int) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || procState(b) == 'Z' {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond) // paces a poll of the kernel's state
	}
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a server as another user needs root")
	}
}

// sharedBinary is a copy of the test binary that any user may run (the
// go command's build folder is its owner's alone), for a fake server run
// as another user.
func sharedBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kvblob-storekit-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	src, err := os.Open(os.Args[0])
	require.NoError(t, err)
	defer src.Close()
	p := filepath.Join(dir, "fake-server")
	dst, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	require.NoError(t, err)
	require.NoError(t, dst.Close())
	return p
}

// TestStopAsksBeforeItKills: Stop sends SIGTERM to the server's process
// group and waits; a server that exits is not killed, one that ignores
// SIGTERM is killed after StopWait. Either way nothing the server forked
// outlives it.
func TestStopAsksBeforeItKills(t *testing.T) {
	for _, c := range []struct {
		name   string
		env    string
		polite bool
	}{{"a server that exits on SIGTERM", "SERVERPROC_TERM=", true}, {"a server that ignores SIGTERM", "SERVERPROC_TERM=ignore", false}} {
		t.Run(c.name, func(t *testing.T) {
			spec := fake("127.0.0.1")
			spec.Env = append(spec.Env, c.env)
			spec.StopWait = 300 * time.Millisecond
			if c.polite {
				spec.StopWait = time.Minute // never reached: the server exits when asked
			}
			s, err := Start(spec)
			require.NoError(t, err)
			pid := s.PID()
			child, err := ask(s.Addr, "CHILD")
			require.NoError(t, err)
			cpid, err := strconv.Atoi(child)
			require.NoError(t, err, "the fake answered %q", child)
			began := time.Now()
			assert.False(t, s.ExitedWhenAsked(), "before Stop")
			s.Stop()
			assert.Equal(t, c.polite, s.ExitedWhenAsked(), "whether the server exited when asked")
			if !c.polite {
				assert.GreaterOrEqual(t, time.Since(began), spec.StopWait, "killed only once StopWait passed")
			}
			assert.True(t, waitGone(pid), "the server still runs after Stop")
			assert.True(t, waitGone(cpid), "the server's child still runs after Stop")
			s.Stop()
			assert.Equal(t, c.polite, s.ExitedWhenAsked(), "a second Stop changes nothing")
		})
	}
}

// TestKillEndsWhatTheServerForked: a crash (Kill) takes the server's
// whole process group, as a restart needs the port and folder free.
func TestKillEndsWhatTheServerForked(t *testing.T) {
	s, err := Start(fake("127.0.0.1"))
	require.NoError(t, err)
	defer s.Stop()
	child, err := ask(s.Addr, "CHILD")
	require.NoError(t, err)
	cpid, err := strconv.Atoi(child)
	require.NoError(t, err, "the fake answered %q", child)
	s.Kill()
	assert.True(t, waitGone(cpid), "the server's child still runs after Kill")
}

// TestInitPreparesTheFolderOnce: a server that needs its folder prepared
// starts only after Spec.Init ran, and Init does not run again on a
// Restart; an Init program that fails or is missing fails Start with
// what it printed.
func TestInitPreparesTheFolderOnce(t *testing.T) {
	spec := fake("127.0.0.1")
	spec.Env = append(spec.Env, "SERVERPROC_NEEDINIT=1")
	_, err := Start(spec)
	assert.ErrorContains(t, err, "my folder was never initialised", "the fake refuses an unprepared folder")

	spec.Init = func(_ string, run func(string, ...string) error) error { return run(os.Args[0], "fake-init") }
	s, err := Start(spec)
	require.NoError(t, err)
	defer s.Stop()
	s.Kill()
	require.NoError(t, s.Restart())
	b, err := os.ReadFile(filepath.Join(s.Dir, initMark))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("initialised by uid %d\n", os.Getuid()), string(b), "Init ran once, before the first start only")

	for _, c := range []struct{ name, program, arg, want string }{
		{"fails", os.Args[0], "fake-init-fail", "fake init: refusing"},
		{"is missing", "kvblob-no-such-init", "", "kvblob-no-such-init, which Init runs, is not installed"},
	} {
		spec.Init = func(_ string, run func(string, ...string) error) error { return run(c.program, c.arg) }
		_, err := Start(spec)
		assert.ErrorContains(t, err, c.want, "an Init program that %s", c.name)
		assert.ErrorContains(t, err, "preparing", "an Init program that %s", c.name)
	}
}

// TestAServerRunsAsItsUser: with Spec.User the server and Init's programs
// run as that user, in a folder that user owns (PostgreSQL refuses root).
func TestAServerRunsAsItsUser(t *testing.T) {
	needRoot(t)
	nobody, err := user.Lookup("nobody")
	require.NoError(t, err)
	spec := fake("127.0.0.1")
	spec.Binary, spec.User = sharedBinary(t), "nobody"
	spec.Env = append(spec.Env, "SERVERPROC_NEEDINIT=1")
	spec.Init = func(_ string, run func(string, ...string) error) error { return run(spec.Binary, "fake-init") }
	s, err := Start(spec)
	require.NoError(t, err)
	defer s.Stop()
	uid, err := ask(s.Addr, "UID")
	require.NoError(t, err)
	assert.Equal(t, nobody.Uid, uid, "the server's uid")
	groups, err := ask(s.Addr, "GROUPS")
	require.NoError(t, err)
	want, err := nobody.GroupIds()
	require.NoError(t, err)
	assert.ElementsMatch(t, want, strings.Fields(strings.Trim(groups, "[]")), "the server's groups are its user's, none kept from the test process")
	b, err := os.ReadFile(filepath.Join(s.Dir, initMark))
	require.NoError(t, err)
	assert.Equal(t, "initialised by uid "+nobody.Uid+"\n", string(b), "Init's program ran as the server's user")

	spec.User = "kvblob-no-such-user"
	_, err = Start(spec)
	assert.ErrorContains(t, err, `no user "kvblob-no-such-user" to run the server as`)
}

// The parent-death signal follows the thread that forked the server, not
// the process: a server started from a goroutine locked to its thread (a
// cgo SDK's, a test's) must not die when that goroutine ends and takes its
// thread with it. Seen in a recorder run: a frozen master died mid-run.
func TestAServerOutlivesTheThreadThatStartedIt(t *testing.T) {
	var (
		s   *Server
		err error
		tid int
	)
	for tid == 0 {
		started := make(chan struct{})
		go func() {
			defer close(started)
			runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
			if syscall.Gettid() == os.Getpid() {
				// The main thread never ends (the runtime parks it
				// instead): try again on another.
				runtime.UnlockOSThread()
				return
			}
			tid = syscall.Gettid()
			s, err = Start(fake("127.0.0.1"))
		}()
		<-started
	}
	require.NoError(t, err)
	defer s.Stop()
	// The starting thread ends after its goroutine returned; the kernel
	// sends the parent-death signal as it does.
	task := fmt.Sprintf("/proc/self/task/%d", tid)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(task); err != nil {
			break
		}
		require.False(t, time.Now().After(deadline), "thread %d never ended", tid)
		time.Sleep(time.Millisecond) // paces a poll of the kernel's state
	}
	// A SIGKILL, had it been sent, is taken at the server's next schedule;
	// its process state says so within this bound, a bound on a signal that
	// must not come, not a synchronisation.
	end := time.Now().Add(500 * time.Millisecond)
	for time.Now().Before(end) {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.PID()))
		if err != nil || procState(b) == 'Z' {
			t.Fatalf("the server died when the thread that started it ended")
		}
		time.Sleep(time.Millisecond) // paces a poll of the kernel's state
	}
	assert.NoError(t, ping(s.Addr), "the server still answers")
}

// TestStartTriesAnotherPortWhenItsAddressIsTaken: the port FreePort named
// may be bound by another process before the server binds it. The first
// start here is pointed at a port a listener holds; the server says its
// address is in use, and Start starts it again on another port. A server
// that fails for any other reason is not retried.
func TestStartTriesAnotherPortWhenItsAddressIsTaken(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	spec := fake("127.0.0.1")
	var ports []int
	inner := spec.Args
	spec.Args = func(host string, port int, dir string) []string {
		if len(ports) == 0 {
			port = busy.Addr().(*net.TCPAddr).Port
		}
		ports = append(ports, port)
		return inner(host, port, dir)
	}
	s, err := Start(spec)
	require.NoError(t, err)
	defer s.Stop()
	require.Len(t, ports, 2, "one start on the taken port, one on another")
	assert.Equal(t, ports[1], s.Port)
	assert.NoError(t, ping(s.Addr))

	calls := 0
	failing := fake("fail")
	inner = failing.Args
	failing.Args = func(host string, port int, dir string) []string { calls++; return inner(host, port, dir) }
	_, err = Start(failing)
	require.Error(t, err)
	assert.Equal(t, 1, calls, "a start that failed for another reason is not retried")
}

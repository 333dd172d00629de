package storekit

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
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
// listens on host:port (port from its last argument) and answers each line
// with PONG; with SERVERPROC_FAKE=fail it prints a line and exits; with
// SERVERPROC_FAKE=parent it starts such a server, prints its pid and waits
// to be killed.
func TestMain(m *testing.M) {
	switch mode := os.Getenv("SERVERPROC_FAKE"); mode {
	case "":
		goleak.VerifyTestMain(m)
	case "fail":
		fmt.Println("fake: refusing to start")
		os.Exit(3)
	case "parent":
		// A test process that starts a server and is then killed.
		s, err := Start(fake("127.0.0.1"))
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		fmt.Println(s.PID())
		select {}
	default:
		l, err := net.Listen("tcp", net.JoinHostPort(mode, os.Args[len(os.Args)-1]))
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
					fmt.Fprintln(c, "PONG")
				}
			}()
		}
	}
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
// servers running: each server dies with the process that started it.
func TestAServerDiesWithTheProcessThatStartedIt(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "SERVERPROC_FAKE=parent")
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the parent did not report its server")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err, "the parent said %q", line)
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || procState(b) == 'Z' {
			return // gone, or dead and not yet reaped
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("server pid %d still runs 10 s after the process that started it was killed", pid)
		}
		time.Sleep(time.Millisecond) // paces a poll of the kernel's state
	}
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

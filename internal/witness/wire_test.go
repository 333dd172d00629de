package witness_test

import (
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/witness"
)

// echo is an upstream that echoes each connection and keeps what it read.
type echo struct {
	ln   net.Listener
	wg   sync.WaitGroup
	mu   sync.Mutex
	got  []byte
	ends chan error // one per connection: how its read ended
}

func startEcho(t *testing.T) *echo {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	e := &echo{ln: ln, ends: make(chan error, 8)}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			e.wg.Add(1)
			go func() {
				defer e.wg.Done()
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					e.mu.Lock()
					e.got = append(e.got, buf[:n]...)
					e.mu.Unlock()
					if n > 0 {
						_, _ = c.Write(buf[:n])
					}
					if err != nil {
						e.ends <- err
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); e.wg.Wait() })
	return e
}

func (e *echo) received() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return string(e.got)
}

// readAll reads c until an error or the deadline.
func readAll(c net.Conn, d time.Duration) (string, error) {
	_ = c.SetReadDeadline(time.Now().Add(d))
	var got []byte
	buf := make([]byte, 64)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return string(got), err
		}
	}
}

func TestFaultsActAtTheirByte(t *testing.T) {
	const msg = "SET k one\r\nSET k two\r\n"
	tests := []struct {
		name     string
		fault    witness.Fault
		wantRead string // what the client reads back before its read ends
		wantErr  func(error) bool
		wantSent string // what the server received
	}{
		{"slice passes every byte", witness.Fault{Dir: witness.Reply, Action: witness.Slice, At: 3, SliceBytes: 2},
			msg, isEOF, msg},
		{"cut the request after the second SET", witness.Fault{Dir: witness.Request, Action: witness.Cut, After: []byte("SET"), Skip: 1, At: 2},
			anyRead, isEOF, "SET k one\r\nSET k"},
		{"reset the reply at byte 4", witness.Fault{Dir: witness.Reply, Action: witness.Reset, At: 4},
			"SET ", isReset, msg},
		{"truncate the reply at byte 6", witness.Fault{Dir: witness.Reply, Action: witness.Truncate, At: 6},
			"SET k ", isEOF, msg},
		{"stall the reply after 'two'", witness.Fault{Dir: witness.Reply, Action: witness.Stall, After: []byte("two")},
			"SET k one\r\nSET k two", isTimeout, msg},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startEcho(t)
			p, err := witness.StartProxy(e.ln.Addr().String())
			require.NoError(t, err)
			defer func() { assert.NoError(t, p.Close()) }()
			a := p.Arm(tt.fault)
			c, err := net.Dial("tcp", p.Addr())
			require.NoError(t, err)
			defer c.Close()
			_, err = c.Write([]byte(msg))
			require.NoError(t, err)
			if tt.fault.Action == witness.Slice {
				// The request direction is open: end it so the echo ends.
				require.NoError(t, c.(*net.TCPConn).CloseWrite())
			}
			got, err := readAll(c, 500*time.Millisecond)
			if tt.wantRead != anyRead {
				assert.Equal(t, tt.wantRead, got)
			}
			assert.True(t, tt.wantErr(err), "the read ended with %v", err)
			<-a.Fired()
			if tt.fault.Action == witness.Truncate {
				// The reply ended, the request did not: the server
				// still receives.
				_, err = c.Write([]byte("more"))
				require.NoError(t, err)
				require.NoError(t, c.(*net.TCPConn).CloseWrite())
				tt.wantSent += "more"
			}
			if tt.fault.Action == witness.Stall {
				a.Release()
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				rest := make([]byte, 2)
				_, err := io.ReadFull(c, rest)
				assert.NoError(t, err)
				assert.Equal(t, "\r\n", string(rest), "a released stall forwards what it held")
				require.NoError(t, c.Close())
			}
			<-e.ends
			assert.Equal(t, tt.wantSent, e.received())
		})
	}
}

// anyRead: the echo of what passed may or may not beat the cut back.
const anyRead = "\x00any"

func isEOF(err error) bool   { return errors.Is(err, io.EOF) }
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestDropEndsEveryConnection: after Drop no link is open and a stalled
// one is gone too.
func TestDropEndsEveryConnection(t *testing.T) {
	e := startEcho(t)
	p, err := witness.StartProxy(e.ln.Addr().String())
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	a := p.Arm(witness.Fault{Dir: witness.Reply, Action: witness.Stall})
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("x"))
	require.NoError(t, err)
	<-a.Fired()
	p.Drop()
	assert.Zero(t, p.Links())
	_, err = readAll(c, 2*time.Second)
	assert.True(t, isEOF(err), "the client's read ended with %v", err)
}

// TestAfterIsCountedOnceAcrossReads: an occurrence of After is counted
// once, whether it ends a read, or is split across two.
func TestAfterIsCountedOnceAcrossReads(t *testing.T) {
	for _, parts := range [][]string{{"a SET", "b set c", "a SETb set"}, {"a SE", "Tb SET c", "a SETb SET"},
		// Bytes that are no UTF-8 do not move the count.
		{"\xff\xfe SET", "\xc1b SET c", "\xff\xfe SET\xc1b SET"}} {
		t.Run(parts[0], func(t *testing.T) {
			e := startEcho(t)
			p, err := witness.StartProxy(e.ln.Addr().String())
			require.NoError(t, err)
			defer func() { assert.NoError(t, p.Close()) }()
			p.Arm(witness.Fault{Dir: witness.Request, Action: witness.Cut, After: []byte("SET"), Skip: 1})
			c, err := net.Dial("tcp", p.Addr())
			require.NoError(t, err)
			defer c.Close()
			// The first part's echo comes back before the second is
			// written, so the proxy reads them apart.
			_, err = c.Write([]byte(parts[0]))
			require.NoError(t, err)
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = io.ReadFull(c, make([]byte, len(parts[0])))
			require.NoError(t, err)
			_, err = c.Write([]byte(parts[1]))
			require.NoError(t, err)
			<-e.ends
			assert.Equal(t, parts[2], e.received())
		})
	}
}

// TestAtCountsEachConnectionAlone: a fault without After fires on the
// first connection that passes At bytes, not on the first that passes
// any.
func TestAtCountsEachConnectionAlone(t *testing.T) {
	e := startEcho(t)
	p, err := witness.StartProxy(e.ln.Addr().String())
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	a := p.Arm(witness.Fault{Dir: witness.Request, Action: witness.Cut, At: 5})
	small, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer small.Close()
	_, err = small.Write([]byte("abc"))
	require.NoError(t, err)
	_ = small.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadFull(small, make([]byte, 3)) // through, and echoed
	require.NoError(t, err)
	big, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer big.Close()
	_, err = big.Write([]byte("0123456789"))
	require.NoError(t, err)
	<-a.Fired()
	got, err := readAll(big, 2*time.Second)
	assert.True(t, isEOF(err), "the big connection's read ended with %v", err)
	assert.Contains(t, []string{"", "01234"}, got)
	_, err = small.Write([]byte("d"))
	require.NoError(t, err)
	_, err = io.ReadFull(small, make([]byte, 1))
	assert.NoError(t, err, "the small connection was cut")
}

// TestAtCountsAcrossReads: a fault without After counts every byte its
// connection passed since arming, not only the read that reaches At: At 5
// over a read of 3 bytes and one of 4 acts at the second read's third
// byte.
func TestAtCountsAcrossReads(t *testing.T) {
	e := startEcho(t)
	p, err := witness.StartProxy(e.ln.Addr().String())
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	p.Arm(witness.Fault{Dir: witness.Request, Action: witness.Cut, At: 5})
	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("abc"))
	require.NoError(t, err)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadFull(c, make([]byte, 3)) // through and echoed: the proxy read it alone
	require.NoError(t, err)
	_, err = c.Write([]byte("defg"))
	require.NoError(t, err)
	_ = c.(*net.TCPConn).CloseWrite() // ends the echo if no cut did; after a cut it may fail
	<-e.ends
	assert.Equal(t, "abcde", e.received())
}

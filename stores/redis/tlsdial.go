package redis

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"
)

// plainProbeAfter is how long a TLS handshake runs before the dialer asks
// whether the port speaks plain RESP. A handshake with a healthy TLS server
// takes a round trip or two; a plain server never answers one (it waits for
// the end of a line that a ClientHello does not hold), so without the probe
// a TLS client of a plain port waits out its whole DialTimeout and fails
// with an i/o timeout that never says TLS.
const plainProbeAfter = 250 * time.Millisecond

// errPlainPort is the dial error for a port that answered plain RESP to a
// TLS client.
var errPlainPort = errors.New("the port answers plain RESP, not TLS")

// tlsDialer is the client's dialer when Options.TLS is set: it connects
// and runs the TLS handshake within timeout (go-redis's own TLS dialer
// bounds them so too, but cannot be cancelled), and when the handshake has
// not finished after plainProbeAfter, it sends PING in plain text on a
// second connection: a reply in RESP means the port is not TLS, and the
// dial fails at once with errPlainPort. A TLS server takes the probe's
// bytes for a bad record and closes that connection; the handshake goes
// on.
func tlsDialer(cfg *tls.Config, timeout time.Duration) func(context.Context, string, string) (net.Conn, error) {
	if timeout <= 0 {
		timeout = 5 * time.Second // go-redis's default DialTimeout
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		d := &net.Dialer{}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			c.ServerName, _, _ = net.SplitHostPort(addr)
		}
		conn := tls.Client(raw, c)
		done := make(chan error, 1)
		go func() { done <- conn.HandshakeContext(ctx) }()

		// The probe runs after plainProbeAfter, unless the handshake is
		// over by then; the dial returns only once it is done.
		var probe sync.WaitGroup
		defer probe.Wait()
		plain := make(chan struct{})
		probeCtx, stopProbe := context.WithCancel(ctx)
		defer stopProbe()
		probe.Add(1)
		timer := time.AfterFunc(plainProbeAfter, func() {
			defer probe.Done()
			if speaksPlainRESP(probeCtx, d, network, addr) {
				close(plain)
			}
		})
		select {
		case err = <-done:
		case <-plain:
			cancel()
			<-done
			err = fmt.Errorf("TLS handshake with %s: %w", addr, errPlainPort)
		}
		if timer.Stop() {
			probe.Done()
		}
		if err != nil {
			_ = raw.Close()
			return nil, err
		}
		return conn, nil
	}
}

// speaksPlainRESP reports whether addr answers PING, sent in plain text, in
// RESP (+PONG, or an error reply such as -NOAUTH).
func speaksPlainRESP(ctx context.Context, d *net.Dialer, network, addr string) bool {
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return false
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Now()) })
	defer stop()
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && strings.ContainsAny(line[:1], "+-")
}

package redis

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/kvblob/kvblob/stores/trailer"
)

// Options configure a Driver.
//
// Printing Options never prints a secret: String, Format (every verb,
// %#v included), LogValue and MarshalJSON say whether Password is set and
// print the rest, and Open's errors never quote Password or a row key.
type Options struct {
	// Addrs are the server's host:port, or the Cluster's seed nodes.
	Addrs []string
	// Cluster talks Redis Cluster.
	Cluster bool
	// Username and Password authenticate the connection as an ACL user
	// (AUTH username password). An empty Username with a Password is the
	// default user (requirepass).
	Username string
	Password string
	// TLS, when set, connects over TLS only.
	TLS *TLS
	// Integrity, when set, tags every row with the current row key and
	// refuses, as a FAULT with the destination untouched, every row whose
	// tag does not verify under the current or previous key, an unkeyed
	// row another writer stored included (see trailer.Integrity).
	Integrity *trailer.Integrity
	// FetchesShareConns sends gets on the publishes' connections, as
	// the driver once did. By default gets go on connections of their
	// own, so that no publish pipeline is queued ahead of a get on one
	// connection (lanes.go).
	FetchesShareConns bool
	// PublishesYield makes a publish's connection write in slices, each
	// after this driver's gets in flight are done (or a bounded wait), so
	// that publishes take less of the machine while a get waits. Off by
	// default: it shortens the fetch tail next to publishes only by
	// taking time from them (on two cores, p99 loaded/idle 4.6 → 3.3 at
	// the cost of a fifth to a third of the publish bandwidth, with
	// fetches back to back), and what is left of the tail is the
	// machine's, not the server's (docs/operating.md, "Scale"). It has no
	// effect with FetchesShareConns.
	PublishesYield bool
	// PendingTTL bounds how long a claimed key stays pending if its writer
	// dies (default 30 s).
	PendingTTL time.Duration
	// DialTimeout, ReadTimeout and WriteTimeout bound each network step
	// (defaults 5 s, 3 s, 3 s).
	DialTimeout, ReadTimeout, WriteTimeout time.Duration
	// Hooks are added to the client (tests use them to inject faults).
	Hooks []goredis.Hook
	// Logger receives the driver's events (zero value: discarded;
	// docs/operating.md lists them): one warning when a dial fails after
	// the server was reachable, one line when a dial succeeds again, and,
	// once the program called SetClientLogger, the go-redis client's own
	// lines logged on a command of this driver (without it, go-redis
	// prints its lines to stderr, or to the logger the program gave it).
	Logger zerolog.Logger
	// DownFor is how long after a failed dial every dial fails at once with
	// that dial's error, so that each row of a call to a server that is
	// down faults without a network round trip (0: DefaultDownFor, 1 s;
	// negative: always dial).
	DownFor time.Duration
}

// TLS is the connection's TLS: every file is PEM.
type TLS struct {
	// CAFile holds the certificates of the CAs that may sign the server's
	// certificate (empty: the system's roots).
	CAFile string
	// CertFile and KeyFile are the client's certificate and key, for a
	// server that asks for one (tls-auth-clients); both or neither.
	CertFile, KeyFile string
	// ServerName is the name the server's certificate must be valid for
	// (empty: the host of the address dialled).
	ServerName string
}

func (t *TLS) config() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: t.ServerName}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("redis: reading Options.TLS.CAFile: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis: Options.TLS.CAFile %q holds no PEM certificate", t.CAFile)
		}
	}
	switch {
	case t.CertFile != "" && t.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("redis: loading Options.TLS.CertFile %q and KeyFile %q: %w", t.CertFile, t.KeyFile, err)
		}
		c.Certificates = []tls.Certificate{cert}
	case t.CertFile != "" || t.KeyFile != "":
		return nil, errors.New("redis: Options.TLS needs both CertFile and KeyFile, or neither")
	}
	return c, nil
}

// openError says what a failed first command means for the configuration,
// keeping the client's error (which quotes no password: go-redis's
// replies and TLS errors carry none).
func openError(opt Options, err error) error {
	var unknownCA x509.UnknownAuthorityError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	msg := err.Error()
	switch {
	case errors.As(err, &unknownCA), errors.As(err, &host), errors.As(err, &verify):
		return fmt.Errorf("redis: the TLS certificate of the server at %v does not verify (check Options.TLS.CAFile and ServerName): %w", opt.Addrs, err)
	case strings.Contains(msg, "remote error: tls: "): // the server's TLS alert (crypto/tls exports no type for it)
		return fmt.Errorf("redis: the server at %v refused the TLS handshake (a server that asks for a client certificate needs Options.TLS.CertFile and KeyFile, signed by a CA it trusts): %w", opt.Addrs, err)
	case opt.TLS != nil && opt.TLS.CertFile == "" && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)):
		// Under TLS 1.3 the client's handshake ends before the server has
		// checked for a client certificate, so its refusal can reach the
		// client as a reset of the first write instead of an alert.
		return fmt.Errorf("redis: the server at %v closed the connection right after the TLS handshake, as a server that asks for a client certificate does when none is given: set Options.TLS.CertFile and KeyFile: %w", opt.Addrs, err)
	case strings.HasPrefix(msg, "WRONGPASS"):
		return fmt.Errorf("redis: the server at %v refused user %q: wrong password, or the user is disabled: %w", opt.Addrs, user(opt), err)
	case strings.HasPrefix(msg, "NOAUTH"):
		return fmt.Errorf("redis: the server at %v requires authentication: set Options.Username and Options.Password: %w", opt.Addrs, err)
	case strings.HasPrefix(msg, "NOPERM"):
		return fmt.Errorf("redis: user %q may not run what Open needs at %v: %w", user(opt), opt.Addrs, explainNoperm(err))
	case errors.Is(err, errPlainPort):
		return fmt.Errorf("redis: the server at %v answers plain TCP on this port, not TLS: unset Options.TLS, or connect to its tls-port: %w", opt.Addrs, err)
	case opt.TLS == nil && (errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF)):
		// A TLS-only port takes the first command for a bad TLS record
		// and closes the connection (a plain server would have answered,
		// even if only with an error).
		return fmt.Errorf("redis: the server at %v closed the connection at the first command, as a TLS-only port does to a client without TLS: if it serves TLS, set Options.TLS: %w", opt.Addrs, err)
	}
	return fmt.Errorf("redis: HELLO at %v: %w", opt.Addrs, err)
}

func user(opt Options) string {
	if opt.Username == "" {
		return "default"
	}
	return opt.Username
}

// redacted is what Options print as: every field, Password replaced.
type redacted struct {
	Addrs      []string
	Cluster    bool
	Username   string `json:",omitempty"`
	Password   string `json:",omitempty"`
	TLS        *TLS   `json:",omitempty"`
	Integrity  string
	PendingTTL time.Duration
	Timeouts   [3]time.Duration
	Hooks      int
}

func (o Options) redacted() redacted {
	r := redacted{Addrs: o.Addrs, Cluster: o.Cluster, Username: o.Username, TLS: o.TLS, Integrity: o.Integrity.String(),
		PendingTTL: o.PendingTTL, Timeouts: [3]time.Duration{o.DialTimeout, o.ReadTimeout, o.WriteTimeout}, Hooks: len(o.Hooks)}
	if o.Password != "" {
		r.Password = "[redacted]"
	}
	return r
}

// String prints the options with Password redacted.
func (o Options) String() string {
	r := o.redacted()
	s := fmt.Sprintf("redis.Options{Addrs: %v, Cluster: %v", r.Addrs, r.Cluster)
	if r.Username != "" {
		s += fmt.Sprintf(", Username: %q", r.Username)
	}
	if r.Password != "" {
		s += ", Password: " + r.Password
	}
	if r.TLS != nil {
		s += fmt.Sprintf(", TLS: {CAFile: %q, CertFile: %q, KeyFile: %q, ServerName: %q}", r.TLS.CAFile, r.TLS.CertFile, r.TLS.KeyFile, r.TLS.ServerName)
	}
	return s + fmt.Sprintf(", Integrity: %s, PendingTTL: %v, Timeouts: %v, Hooks: %d}", r.Integrity, r.PendingTTL, r.Timeouts, r.Hooks)
}

// GoString is String, so %#v redacts too.
func (o Options) GoString() string { return o.String() }

// Format prints String for every verb.
func (o Options) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(o.String())) }

// LogValue is the redacted options, for log/slog.
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }

// MarshalJSON marshals the redacted options, so zerolog's Interface, a
// report or a bench's JSON print no password.
func (o Options) MarshalJSON() ([]byte, error) { return json.Marshal(o.redacted()) }

package redis_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
	"github.com/kvblob/kvblob/stores/trailer"
)

// capture is every output of a run: a zerolog writer, the go-redis
// client's logger, and what the test prints of errors, results, options,
// stats and outcomes.
type capture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capture) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.Write(p)
}

func (c *capture) Printf(_ context.Context, format string, args ...any) {
	fmt.Fprintf(c, "go-redis: "+format+"\n", args...)
}

func (c *capture) print(args ...any) { fmt.Fprintln(c, args...) }

func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// TestSecretsStayOutOfEveryOutput runs a Redis round trip with a password
// (TLS, ACL user) and row keys from the environment (current and previous),
// through the backend, plus every refusal a secret could leak into: a
// wrong password, an untrusted CA, a foreign row, a row under another key,
// a malformed key. It captures every output and looks for the password and
// the row keys in every encoding: none may appear.
func TestSecretsStayOutOfEveryOutput(t *testing.T) {
	s := startSecure(t, rediskit.Redis7, false)
	out := &capture{}
	goredis.SetLogger(out)
	t.Cleanup(func() { goredis.SetLogger(discard{}) })
	logger := zerolog.New(out).With().Timestamp().Logger()

	current, previous := bytes.Repeat([]byte{0xC7, 0x1E}, 16), bytes.Repeat([]byte{0x9B, 0x3D}, 16)
	t.Setenv(trailer.EnvKey, hex.EncodeToString(current))
	t.Setenv(trailer.EnvKeyPrevious, base64.StdEncoding.EncodeToString(previous))
	in, err := trailer.IntegrityFromEnv()
	require.NoError(t, err)

	opt := s.options(tenantA, passA)
	opt.Integrity = in
	// Every way the options are printed, logged or marshalled.
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		fmt.Fprintf(out, verb+"\n", opt)
		fmt.Fprintf(out, verb+"\n", &opt)
		fmt.Fprintf(out, verb+"\n", struct{ O redis.Options }{opt})
	}
	j, err := json.Marshal(opt)
	require.NoError(t, err)
	out.print(string(j))
	logger.Info().Interface("options", opt).Stringer("stringer", opt).Msg("opening")
	slog.New(slog.NewJSONHandler(out, nil)).Info("opening", "options", opt)

	// A round trip through the backend, whose logs go to the zerolog writer.
	// Each Open is bounded: a dial broken so that it never returns (its
	// plain-RESP probe's wait group miscounted) fails here in seconds.
	open := func(o redis.Options) (*redis.Driver, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		return redis.Open(ctx, o)
	}
	d, err := open(opt)
	require.NoError(t, err)
	out.print(d, d.ServerVersion())
	logger.Info().Stringer("driver", d).Msg("opened")
	lender, err := hostmem.NewLender("kv", driver.Layout{SlotBytes: 4096, Slots: 8})
	require.NoError(t, err)
	hold, err := lender.Hold()
	require.NoError(t, err)
	bind, err := backend.Bind(t.Context(), hold.Regions(), d, hold)
	require.NoError(t, err)
	be, err := backend.New(bind, backend.Config{Workers: 2, Prefix: tenantA, Logger: logger, SlowCall: time.Nanosecond})
	require.NoError(t, err)
	slots := hold.Regions()[0]
	view := func(first int, names ...string) backend.View {
		var v backend.View
		for i, n := range names {
			v = append(v, backend.ViewRow{Name: []byte(n), Spans: []driver.Span{slots.Slot(first + i)}})
		}
		return v
	}
	wait := func(a *backend.Attempt, err error) backend.Outcome {
		t.Helper()
		require.NoError(t, err)
		select {
		case <-a.Quiesced():
		case <-time.After(10 * time.Second):
			t.Fatal("the attempt did not quiesce within 10 s")
		}
		o, _ := a.Poll()
		out.print(fmt.Sprintf("%+v", o))
		return o
	}
	copy(slots.Slot(0).Bytes(), "row zero")
	copy(slots.Slot(1).Bytes(), "row one")
	assert.Equal(t, 2, wait(be.Publish(t.Context(), view(0, "r0", "r1"))).InOrder)
	assert.Equal(t, 2, wait(be.Fetch(t.Context(), view(2, "r0", "r1"))).InOrder)

	// Rows the integrity check refuses: an unkeyed one, one under another
	// key. Their FAULT text goes into the outcome.
	c := d.Client()
	stem, err := driver.KeyStem(tenantA)
	require.NoError(t, err)
	key := func(name string) string {
		k, err := stem.Key([]byte(name))
		require.NoError(t, err)
		return k
	}
	payload := make([]byte, 4096)
	other, err := trailer.NewIntegrity(bytes.Repeat([]byte{0x55}, 32), nil)
	require.NoError(t, err)
	require.NoError(t, c.Set(context.Background(), key("unkeyed"), trailer.Encode(key("unkeyed"), payload), 0).Err())
	require.NoError(t, c.Set(context.Background(), key("otherkey"), other.Encode(key("otherkey"), payload), 0).Err())
	o := wait(be.Fetch(t.Context(), view(4, "unkeyed")))
	assert.Equal(t, driver.Fault, o.Results[0].Status)
	o = wait(be.Fetch(t.Context(), view(5, "otherkey")))
	assert.Equal(t, driver.Fault, o.Results[0].Status)
	stats := be.Stats()
	out.print(fmt.Sprintf("%+v", stats))
	j, err = json.Marshal(stats)
	require.NoError(t, err)
	out.print(string(j))
	logger.Info().Interface("stats", stats).Msg("stats")
	require.NoError(t, be.Shutdown(conformance.Within(10*time.Second)))
	require.NoError(t, lender.Close())

	// Refusals at Open.
	bad := opt
	bad.Password = passA + "-wrong"
	_, err = open(bad)
	require.Error(t, err)
	out.print(err)
	logger.Error().Err(err).Interface("options", bad).Msg("open failed")
	untrusted := opt
	untrusted.TLS = &redis.TLS{CAFile: s.certs.OtherCAFile, CertFile: s.certs.ClientCertFile, KeyFile: s.certs.ClientKey}
	_, err = open(untrusted)
	require.Error(t, err)
	logger.Error().Err(err).Msg("open failed")
	t.Setenv(trailer.EnvKey, "!"+hex.EncodeToString(current))
	_, err = trailer.IntegrityFromEnv()
	require.Error(t, err)
	logger.Error().Err(err).Msg("bad row key")

	got := out.String()
	require.Contains(t, got, "row integrity not verified", "the refusals were captured")
	require.Contains(t, got, "WRONGPASS", "the wrong password's refusal was captured")
	trailer.AssertNoSecret(t, got, []byte(passA), []byte(bad.Password), current, previous)
	if t.Failed() {
		t.Logf("captured output:\n%s", got)
	}
}

type discard struct{}

func (discard) Printf(context.Context, string, ...any) {}

// TestOptionsSayWhetherAPasswordIsSet: Options print a password as set
// (redacted), and name none when none is set, in String and JSON alike,
// so an operator reading a log can tell a run without a password from
// one with it. (Tried: String's Password check negated fails it.)
func TestOptionsSayWhetherAPasswordIsSet(t *testing.T) {
	for _, c := range []struct {
		password string
		want     bool
	}{{"", false}, {"hunter2-not-printed", true}} {
		opt := redis.Options{Addrs: []string{"127.0.0.1:6379"}, Password: c.password}
		j, err := json.Marshal(opt)
		require.NoError(t, err)
		for how, out := range map[string]string{"String": opt.String(), "%#v": fmt.Sprintf("%#v", opt), "JSON": string(j)} {
			assert.Equal(t, c.want, bytes.Contains([]byte(out), []byte("Password")), "%s with password %q: %s", how, c.password, out)
			assert.Equal(t, c.want, bytes.Contains([]byte(out), []byte("[redacted]")), "%s with password %q: %s", how, c.password, out)
			assert.NotContains(t, out, "hunter2")
		}
	}
}

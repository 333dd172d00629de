package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	redisgen "github.com/kvblob/kvblob/generated/redis"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
)

// Two tenants, each an ACL user limited to its own key prefix.
const (
	tenantA, passA = "tenantA", "pw-A-7f3c9e1b2d"
	tenantB, passB = "tenantB", "pw-B-0a8d4c6e5f"
)

// secure is a TLS-only deployment with the two tenants' ACL users.
type secure struct {
	addrs   []string
	cluster bool
	certs   *storekit.Certs
	servers []*rediskit.Server
	dir     string // the certificates' folder
	stop    func()
}

// secureKind names a secure deployment: its build, and whether it is a
// three-node Cluster.
type secureKind struct {
	build   *rediskit.Build
	cluster bool
}

// secureKinds are the secure deployments, in rediskit.Builds' order, a
// server then a Cluster of each build.
var secureKinds = func() (out []secureKind) {
	for _, b := range rediskit.Builds {
		for _, cluster := range []bool{false, true} {
			out = append(out, secureKind{b, cluster})
		}
	}
	return out
}()

// secures are the secure deployments the tests share (deployments,
// TestStartedServersListenOnLoopbackOnly): each starts at the first test
// that needs it and stops after the tests (TestMain), instead of each
// test starting its own (three tests each started all four, a dozen TLS
// deployments, half of them Clusters: most of this package's server
// starts).
var secures = func() map[secureKind]*storekit.Owned[*secure] {
	out := map[secureKind]*storekit.Owned[*secure]{}
	for _, k := range secureKinds {
		stop := func(s *secure) error {
			s.stop()
			return os.RemoveAll(s.dir)
		}
		out[k] = storekit.Own(k.build.Available, func() (*secure, error) { return newSecure(k.build, k.cluster) }, stop).Lazily()
	}
	return out
}()

// sharedSecure is the shared secure deployment of build b (or its
// Cluster), started at the first call; it skips t when the build is not
// installed.
func sharedSecure(t *testing.T, b *rediskit.Build, cluster bool) *secure {
	t.Helper()
	return secures[secureKind{b, cluster}].Need(t)
}

// startSecure starts a TLS-only server of build b (or a three-node
// Cluster) of t's own, stopped when t ends: for a test that must see
// every byte its deployment ever wrote or logged.
func startSecure(t *testing.T, b *rediskit.Build, cluster bool) *secure {
	t.Helper()
	if b == rediskit.Valkey81 {
		valkey81.Need(t)
	} else {
		redis7.Need(t)
	}
	s, err := newSecure(b, cluster)
	require.NoError(t, err)
	t.Cleanup(func() {
		s.stop()
		assert.NoError(t, os.RemoveAll(s.dir))
	})
	return s
}

// newSecure starts a TLS-only server of build b (or a three-node Cluster)
// with certificates made in a folder of its own and the two tenants.
func newSecure(b *rediskit.Build, cluster bool) (*secure, error) {
	dir, err := os.MkdirTemp("", "kvblob-redis-secure-")
	if err != nil {
		return nil, err
	}
	certs, err := storekit.NewCerts(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cfg := rediskit.Config{Build: b, TLS: certs, Users: [][]string{
		rediskit.TenantUser(tenantA, passA, tenantA, cluster), rediskit.TenantUser(tenantB, passB, tenantB, cluster),
	}}
	s := &secure{cluster: cluster, certs: certs, dir: dir}
	if cluster {
		c, err := rediskit.StartClusterWith(3, cfg)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.addrs, s.servers, s.stop = c.Addrs(), c.Nodes, c.Stop
	} else {
		srv, err := rediskit.StartWith(cfg)
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		s.addrs, s.servers, s.stop = []string{srv.Addr}, []*rediskit.Server{srv}, srv.Stop
	}
	return s, nil
}

// options are a tenant's options: TLS with the CA, the client certificate
// and the certificate's DNS name.
func (s *secure) options(user, pass string) redis.Options {
	return redis.Options{Addrs: s.addrs, Cluster: s.cluster, Username: user, Password: pass, DialTimeout: 5 * time.Second,
		TLS: &redis.TLS{CAFile: s.certs.CAFile, CertFile: s.certs.ClientCertFile, KeyFile: s.certs.ClientKey, ServerName: storekit.ServerName}}
}

// deployments runs fn over a secure server and Cluster of each build
// (secures, shared by every test that calls it).
func deployments(t *testing.T, fn func(t *testing.T, s *secure)) {
	for _, k := range secureKinds {
		name := k.build.Name + "/" + map[bool]string{false: "standalone", true: "cluster"}[k.cluster]
		t.Run(name, func(t *testing.T) { fn(t, sharedSecure(t, k.build, k.cluster)) })
	}
}

// tenant is a driver opened as one tenant, with a registered region.
type tenant struct {
	d *redis.Driver
	r *hostmem.Mapping
}

func openTenant(t *testing.T, opt redis.Options) *tenant {
	t.Helper()
	// Open within a bound: a dialer that never returns (a TLS dial whose
	// plain-port probe's wait never ends) fails the test here, not at the
	// test binary's timeout.
	d, err := redis.Open(conformance.Within(30*time.Second), opt)
	require.NoError(t, err)
	r, err := hostmem.Map("slots", driver.Layout{SlotBytes: 4096, Slots: 8})
	require.NoError(t, err)
	reg, err := d.Register(r.Region)
	require.NoError(t, err)
	t.Cleanup(func() {
		if d.Drain(conformance.Within(5*time.Second)) && d.Unregister(reg) == nil {
			_ = d.Close()
			_ = r.Close()
		}
	})
	return &tenant{d: d, r: r}
}

func (tn *tenant) row(key string, slot int) driver.Row {
	return driver.Row{Key: key, Spans: []driver.Span{tn.r.Slot(slot)}}
}

func (tn *tenant) fill(slot int, b byte) {
	s := tn.r.Slot(slot).Bytes()
	for i := range s {
		s[i] = b + byte(i)
	}
}

func (tn *tenant) put(t *testing.T, rows ...driver.Row) []driver.Result {
	t.Helper()
	op, err := tn.d.Put(context.Background(), rows)
	require.NoError(t, err, "a store refusal is a row result, never an error")
	res, done := op.Poll()
	require.True(t, done)
	return res
}

func (tn *tenant) get(t *testing.T, rows ...driver.Row) []driver.Result {
	t.Helper()
	op, err := tn.d.Get(context.Background(), rows, driver.Hint{})
	require.NoError(t, err, "a store refusal is a row result, never an error")
	res, done := op.Poll()
	require.True(t, done)
	return res
}

// TestTLSAndACLRoundTrip publishes and fetches rows over TLS, with a client
// certificate, as an ACL user.
func TestTLSAndACLRoundTrip(t *testing.T) {
	deployments(t, func(t *testing.T, s *secure) {
		a := openTenant(t, s.options(tenantA, passA))
		var src, dst []driver.Row
		for i := 0; i < 3; i++ {
			a.fill(i, byte(10*i+1))
			key := fmt.Sprintf("%s/v1/%02x", tenantA, i)
			src, dst = append(src, a.row(key, i)), append(dst, a.row(key, 4+i))
		}
		for i, r := range a.put(t, src...) {
			require.Equal(t, driver.Ready, r.Status, "put %d: %v", i, r)
		}
		for i, r := range a.get(t, dst...) {
			require.Equal(t, driver.Ready, r.Status, "get %d: %v", i, r)
			assert.Equal(t, a.r.Slot(i).Bytes(), a.r.Slot(4+i).Bytes())
		}
	})
}

// TestOpenRefusesABadCredentialOrCertificate: a wrong password, an
// untrusted CA, a wrong server name and no client certificate are each a
// clear Open error that quotes no password.
func TestOpenRefusesABadCredentialOrCertificate(t *testing.T) {
	deployments(t, func(t *testing.T, s *secure) {
		cases := []struct {
			name string
			opt  func(o *redis.Options)
			want []string
		}{
			{"wrong password", func(o *redis.Options) { o.Password = "not-" + passA }, []string{`refused user "tenantA": wrong password`, "WRONGPASS"}},
			{"another tenant's password", func(o *redis.Options) { o.Password = passB }, []string{"wrong password"}},
			{"no password", func(o *redis.Options) { o.Username, o.Password = "", "" }, nil}, // the default user: succeeds
			{"untrusted CA", func(o *redis.Options) { o.TLS.CAFile = s.certs.OtherCAFile }, []string{"does not verify", "unknown authority"}},
			{"wrong server name", func(o *redis.Options) { o.TLS.ServerName = "wrong.example" }, []string{"does not verify", "not wrong.example"}},
			{"no client certificate", func(o *redis.Options) { o.TLS.CertFile, o.TLS.KeyFile = "", "" }, []string{"client certificate", "Options.TLS.CertFile"}},
			{"half a client certificate", func(o *redis.Options) { o.TLS.KeyFile = "" }, []string{"both CertFile and KeyFile"}},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				opt := s.options(tenantA, passA)
				tlsCopy := *opt.TLS
				opt.TLS = &tlsCopy
				c.opt(&opt)
				d, err := redis.Open(context.Background(), opt)
				if c.want == nil {
					require.NoError(t, err)
					require.True(t, d.Drain(conformance.Within(time.Second)))
					require.NoError(t, d.Close())
					return
				}
				require.Error(t, err)
				for _, w := range c.want {
					assert.Contains(t, err.Error(), w)
				}
				assert.NotContains(t, err.Error(), passA)
				assert.NotContains(t, err.Error(), passB)
				t.Logf("%s: %v", c.name, err)
			})
		}
	})
}

// TestTenantsAreKeptApart: an ACL user limited to ~tenantA/* publishes and
// fetches its own rows, and gets a FAULT naming the refusal (NOPERM), never
// a MISS and never READY, for tenantB's rows, whose bytes it cannot touch.
func TestTenantsAreKeptApart(t *testing.T) {
	deployments(t, func(t *testing.T, s *secure) {
		a, b := openTenant(t, s.options(tenantA, passA)), openTenant(t, s.options(tenantB, passB))
		keyA, keyB := tenantA+"/v1/0a", tenantB+"/v1/0b"
		a.fill(0, 1)
		b.fill(0, 2)
		require.Equal(t, driver.Ready, a.put(t, a.row(keyA, 0))[0].Status)
		require.Equal(t, driver.Ready, b.put(t, b.row(keyB, 0))[0].Status)

		// tenantA reads its own row, and tenantB's is refused.
		a.fill(1, 0xEE)
		a.fill(2, 0xEE)
		before := bytes.Clone(a.r.Slot(2).Bytes())
		res := a.get(t, a.row(keyA, 1), a.row(keyB, 2))
		assert.Equal(t, driver.Ready, res[0].Status, "%v", res[0])
		assert.Equal(t, a.r.Slot(0).Bytes(), a.r.Slot(1).Bytes())
		assert.Equal(t, driver.Fault, res[1].Status, "another tenant's key: %v", res[1])
		assert.Equal(t, int64(redisgen.Noperm), res[1].Code, "%v", res[1])
		assert.Contains(t, res[1].Text, "outside the user's key pattern")
		assert.Equal(t, before, a.r.Slot(2).Bytes(), "a refused row's destination is untouched")

		// tenantA cannot overwrite tenantB's row either.
		a.fill(3, 0x99)
		res = a.put(t, a.row(keyB, 3))
		assert.Equal(t, driver.Fault, res[0].Status, "%v", res[0])
		assert.Equal(t, int64(redisgen.Noperm), res[0].Code, "%v", res[0])
		b.fill(1, 0)
		require.Equal(t, driver.Ready, b.get(t, b.row(keyB, 1))[0].Status)
		assert.Equal(t, b.r.Slot(0).Bytes(), b.r.Slot(1).Bytes(), "tenantB's row is as tenantB wrote it")
	})
}

// TestATLSMismatchFailsFastAndSaysTLS: a TLS client of a plain port and a
// plain client of a TLS port each fail Open within a fifth of the dial
// timeout, with an error that says TLS and what to set. (A plain server
// never answers a TLS handshake: the TLS client used to wait out its
// DialTimeout and fail with an i/o timeout; the plain client failed at
// once with an EOF that said nothing of TLS.)
func TestATLSMismatchFailsFastAndSaysTLS(t *testing.T) {
	for _, b := range builds() {
		t.Run(b.build.Name, func(t *testing.T) {
			b.owned.Need(t)
			certs, err := storekit.NewCerts(t.TempDir())
			require.NoError(t, err)
			tlsServer, err := rediskit.StartWith(rediskit.Config{Build: b.build, TLS: certs})
			require.NoError(t, err)
			t.Cleanup(tlsServer.Stop)
			const dial = 5 * time.Second
			withTLS := &redis.TLS{CAFile: certs.CAFile, CertFile: certs.ClientCertFile, KeyFile: certs.ClientKey, ServerName: storekit.ServerName}
			for _, c := range []struct {
				name string
				opt  redis.Options
				want []string
			}{
				{"TLS client, plain port", redis.Options{Addrs: []string{b.owned.Value().Addr}, TLS: withTLS, DialTimeout: dial, ReadTimeout: dial},
					[]string{"answers plain TCP on this port, not TLS", "unset Options.TLS"}},
				{"plain client, TLS port", redis.Options{Addrs: []string{tlsServer.Addr}, DialTimeout: dial, ReadTimeout: dial},
					[]string{"as a TLS-only port does", "set Options.TLS"}},
			} {
				t.Run(c.name, func(t *testing.T) {
					start := time.Now()
					d, err := redis.Open(context.Background(), c.opt)
					took := time.Since(start)
					if err == nil {
						_ = d.Close()
					}
					require.Error(t, err)
					for _, w := range c.want {
						assert.Contains(t, err.Error(), w)
					}
					assert.Less(t, took, dial/5, "Open failed after %v: %v", took, err)
					t.Logf("%s: after %v: %v", c.name, took.Round(time.Millisecond), err)
				})
			}
		})
	}
}

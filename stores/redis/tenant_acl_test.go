package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
)

// docACL are the ACL SETUSER lines of docs/security.md, in order: every
// tenant's, what a Cluster adds for its topology, what it adds for scripts.
func docACL(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../docs/security.md")
	require.NoError(t, err)
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "ACL SETUSER ") {
			lines = append(lines, l)
		}
	}
	require.Len(t, lines, 3, "docs/security.md's ACL SETUSER lines: every tenant's, a Cluster's two")
	return lines
}

// TestTheDocumentedTenantACL creates the tenant docs/security.md
// prescribes, from the doc's own lines, on a server and a Cluster of each
// build, and puts and gets rows as it: with no +info, and on a standalone
// server with no script command. On a standalone Redis 7 a put whose
// transaction aborts is still stored (in a transaction of its own, not by
// a script), and on every deployment the marker of a store that failed is
// released, so the key does not stay NOT_READY for the marker's TTL. The doc's lines are also
// held equal to rediskit's lists, which every other tenant test uses.
func TestTheDocumentedTenantACL(t *testing.T) {
	lines := docACL(t)
	stem, err := driver.KeyStem("tenantA")
	require.NoError(t, err)
	assert.Equal(t, "ACL SETUSER tenantA on >PASSWORD ~"+stem.Pattern()+" resetchannels "+strings.Join(rediskit.TenantCommands, " "), lines[0])
	assert.Equal(t, "ACL SETUSER tenantA "+strings.Join(rediskit.ClusterCommands, " "), lines[1])
	assert.Equal(t, "ACL SETUSER tenantA "+strings.Join(rediskit.ClusterScriptCommands, " "), lines[2])
	for i, line := range lines {
		assert.NotContains(t, line, "+info", "INFO shows every tenant's key count")
		for _, script := range []string{"+eval", "+evalsha", "+fcall", "+@scripting", "allcommands", "+@all"} {
			if i < 2 {
				assert.NotContains(t, line, script, "a tenant who may run a script can run one forever")
			}
		}
	}

	const pass = "pw-doc-4e1f0c"
	for _, b := range builds() {
		for _, cluster := range []bool{false, true} {
			name := b.build.Name + "/" + map[bool]string{false: "standalone", true: "cluster"}[cluster]
			t.Run(name, func(t *testing.T) {
				b.owned.Need(t)
				addrs := []string{b.owned.Value().Addr}
				apply := lines[:1]
				if cluster {
					addrs, apply = clusterOf(t, b.build).Addrs(), lines
				}
				ctx := context.Background()
				var admins []*goredis.Client
				for _, addr := range addrs {
					admin := goredis.NewClient(&goredis.Options{Addr: addr})
					admins = append(admins, admin)
					for _, line := range apply {
						var args []any
						for _, f := range strings.Fields(strings.ReplaceAll(line, "PASSWORD", pass)) {
							args = append(args, f)
						}
						require.NoError(t, admin.Do(ctx, args...).Err(), "%s on %s", line, addr)
					}
					t.Cleanup(func() {
						_ = admin.Do(ctx, "acl", "deluser", "tenantA").Err()
						_ = admin.Close()
					})
				}
				f := rediskit.NewFaults()
				opt := redis.Options{Addrs: addrs, Cluster: cluster, Username: "tenantA", Password: pass, Hooks: []goredis.Hook{f}}
				a := openTenant(t, opt)
				// c plays the admin and the neighbour: the tenant may not
				// GET or EXISTS.
				var c goredis.UniversalClient = admins[0]
				if cluster {
					c = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: addrs})
					t.Cleanup(func() { _ = c.Close() })
				}
				key := func(i int) string { return fmt.Sprintf("tenantA/v1/doc-%d-%02x", time.Now().UnixNano(), i) }

				// Rows put and got as the tenant.
				var src, dst []driver.Row
				for i := 0; i < 3; i++ {
					a.fill(i, byte(20*i+3))
					k := key(i)
					src, dst = append(src, a.row(k, i)), append(dst, a.row(k, 4+i))
				}
				aborts := b.build == rediskit.Redis7 && !cluster
				if aborts {
					// The put's transaction aborts: row 0's marker is
					// rewritten with the same bytes just before MULTI.
					f.Before("multi", src[0].Key, func() {
						aborts = false
						v := c.Get(ctx, src[0].Key).Val()
						_ = c.Set(ctx, src[0].Key, v, time.Minute).Err()
					})
				}
				for i, r := range a.put(t, src...) {
					require.Equal(t, driver.Ready, r.Status, "put %d: %v", i, r)
				}
				require.False(t, aborts, "the put's transaction never ran")
				for i, r := range a.get(t, dst...) {
					require.Equal(t, driver.Ready, r.Status, "get %d: %v", i, r)
					assert.Equal(t, a.r.Slot(i).Bytes(), a.r.Slot(4+i).Bytes())
				}

				// A store that fails (the server filled up after the claim)
				// releases its marker.
				k := key(7)
				memory := func(limit string) {
					for _, admin := range admins {
						require.NoError(t, admin.ConfigSet(ctx, "maxmemory-policy", "noeviction").Err())
						require.NoError(t, admin.ConfigSet(ctx, "maxmemory", limit).Err())
					}
				}
				t.Cleanup(func() { memory("0") })
				want := driver.Declined
				if b.build == rediskit.Redis7 && !cluster {
					// A full Redis 7 refuses the DEL a transaction holds
					// (a MULTI queues nothing on a full server), and a
					// tenant may not run the script: this store fails
					// with an error instead.
					f.Error("watch", k, rediskit.RedisError("ERR injected by the test"))
					want = driver.Fault
				} else {
					f.Before(rediskit.StoreHook(a.d), k, func() { memory("1") })
				}
				res := a.put(t, a.row(k, 7))
				require.Equal(t, want, res[0].Status, "%v", res[0])
				assert.Equal(t, int64(0), c.Exists(ctx, k).Val(), "the failed store's marker was not released: the key holds %q", c.Get(ctx, k).Val())
			})
		}
	}
}

// TestAMissingCommandIsNamed: a tenant whose ACL lacks one command of the
// documented recipe gets an error that names that command and says to
// grant it, never that the key is outside its pattern (which its key is
// not): a row FAULT for a put without +set and a get without +getrange.
// (Open sends only HELLO on a standalone server, which every user may
// run, as AUTH.)
func TestAMissingCommandIsNamed(t *testing.T) {
	recipe := docACL(t)[0]
	const pass = "pw-missing-9b2c"
	ctx := context.Background()
	for _, b := range builds() {
		t.Run(b.build.Name, func(t *testing.T) {
			b.owned.Need(t)
			admin := goredis.NewClient(&goredis.Options{Addr: b.owned.Value().Addr})
			t.Cleanup(func() {
				_ = admin.Do(ctx, "acl", "deluser", "tenantA").Err()
				_ = admin.Close()
			})
			for _, c := range []struct {
				drop string
				call func(t *testing.T, a *tenant, key string) string // the error text
			}{
				{"+set", func(t *testing.T, a *tenant, key string) string {
					r := a.put(t, a.row(key, 0))[0]
					require.Equal(t, driver.Fault, r.Status, "%v", r)
					return r.Text
				}},
				{"+getrange", func(t *testing.T, a *tenant, key string) string {
					r := a.get(t, a.row(key, 1))[0]
					require.Equal(t, driver.Fault, r.Status, "%v", r)
					return r.Text
				}},
			} {
				t.Run(c.drop, func(t *testing.T) {
					line := strings.Replace(recipe, " "+c.drop+" ", " ", 1)
					require.NotEqual(t, recipe, line)
					require.NoError(t, admin.Do(ctx, "acl", "deluser", "tenantA").Err())
					var args []any
					for _, f := range strings.Fields(strings.ReplaceAll(line, "PASSWORD", pass)) {
						args = append(args, f)
					}
					require.NoError(t, admin.Do(ctx, args...).Err())
					opt := redis.Options{Addrs: []string{b.owned.Value().Addr}, Username: "tenantA", Password: pass}
					text := c.call(t, openTenant(t, opt), fmt.Sprintf("tenantA/v1/missing-%x", time.Now().UnixNano()))
					cmd := strings.TrimPrefix(c.drop, "+")
					assert.Contains(t, text, "does not grant the "+cmd+" command")
					assert.Contains(t, text, "add "+c.drop)
					assert.NotContains(t, text, "outside the user's key pattern")
					t.Logf("without %s: %s", c.drop, text)
				})
			}
		})
	}
}

// TestAScriptThatRunsForeverIsAFaultThatSaysBusy: where a tenant may EVAL
// (a Redis 7 Cluster needs it), one that runs a script forever stalls the
// server; past busy-reply-threshold every other client's command answers
// BUSY, and the driver's rows are FAULTs that say so, at once (not after
// a timeout), until an admin's SCRIPT KILL; then they read again.
func TestAScriptThatRunsForeverIsAFaultThatSaysBusy(t *testing.T) {
	ctx := context.Background()
	for _, b := range builds() {
		t.Run(b.build.Name, func(t *testing.T) {
			b.owned.Need(t)
			s, err := rediskit.StartWith(rediskit.Config{Build: b.build, Extra: []string{"--busy-reply-threshold", "100"}})
			require.NoError(t, err)
			t.Cleanup(s.Stop)
			a := openTenant(t, redis.Options{Addrs: []string{s.Addr}})
			key := "busy/v1/00"
			a.fill(0, 9)
			require.Equal(t, driver.Ready, a.put(t, a.row(key, 0))[0].Status)

			neighbour := goredis.NewClient(&goredis.Options{Addr: s.Addr, ReadTimeout: -1})
			admin := goredis.NewClient(&goredis.Options{Addr: s.Addr})
			t.Cleanup(func() { _ = neighbour.Close(); _ = admin.Close() })
			ran := make(chan error, 1)
			go func() { ran <- neighbour.Eval(ctx, "while true do end", nil).Err() }()
			require.Eventually(t, func() bool {
				err := admin.Ping(ctx).Err()
				return err != nil && strings.HasPrefix(err.Error(), "BUSY")
			}, 5*time.Second, 5*time.Millisecond, "the server never answered BUSY")

			start := time.Now()
			res := a.get(t, a.row(key, 1))[0]
			took := time.Since(start)
			assert.Equal(t, driver.Fault, res.Status, "%v", res)
			assert.Contains(t, res.Text, "running a script past its busy-reply-threshold, another client's")
			assert.Contains(t, res.Text, "BUSY")
			assert.Less(t, took, time.Second, "the row waited %v", took)
			t.Logf("during the script: %v (after %v)", res, took.Round(time.Millisecond))

			require.NoError(t, admin.Do(ctx, "script", "kill").Err())
			assert.Error(t, <-ran, "the killed script")
			res = a.get(t, a.row(key, 1))[0]
			assert.Equal(t, driver.Ready, res.Status, "%v", res)
		})
	}
}

// TestConformanceAsTheDocumentedTenant runs the conformance suite, with
// each build's generated cases, over a server and a Cluster of each build
// as the tenant docs/security.md prescribes, created from the doc's own
// lines with one change: the key patterns are the stems of the suite's
// keys (~conformance/v1/* ~round-trip/v1/*, and the tenant check's
// ~kv/v1/* ~kv/model-a/v1/*). The suite sets the server up and plays the other
// writer as the default user (rediskit.Deployment.Username); its SDK
// checks, which ask the server itself, run in TestConformance.
func TestConformanceAsTheDocumentedTenant(t *testing.T) {
	lines := docACL(t)
	const pass = "pw-suite-71d3aa"
	for _, b := range builds() {
		for _, cluster := range []bool{false, true} {
			var addrs []string
			if b.owned.Value() != nil {
				addrs = []string{b.owned.Value().Addr}
				if cluster {
					addrs = clusterOf(t, b.build).Addrs()
				}
				apply := lines[:1]
				if cluster {
					apply = lines
				}
				ctx := context.Background()
				for _, addr := range addrs {
					admin := goredis.NewClient(&goredis.Options{Addr: addr})
					for _, line := range apply {
						line = strings.ReplaceAll(strings.ReplaceAll(line, "PASSWORD", pass), "~tenantA/v1/*", "~conformance/v1/* ~round-trip/v1/* ~kv/v1/* ~kv/model-a/v1/*")
						var args []any
						for _, f := range strings.Fields(line) {
							args = append(args, f)
						}
						require.NoError(t, admin.Do(ctx, args...).Err(), "%s on %s", line, addr)
					}
					t.Cleanup(func() {
						_ = admin.Do(ctx, "acl", "deluser", "tenantA").Err()
						_ = admin.Close()
					})
				}
			}
			dep := func() rediskit.Deployment {
				return rediskit.Deployment{Addrs: addrs, Cluster: cluster, Username: "tenantA", Password: pass}
			}
			name := b.build.Store + map[bool]string{false: "-tenant", true: "-cluster-tenant"}[cluster]
			s := b.build.Suite(name, dep, b.owned.Value() != nil, b.owned.Why())
			s.SDKChecks = nil
			conformance.Run(t, s)
		}
	}
}

// TestNestedTenantPrefixesStayApart: tenants "kv" and "kv/model-a", one
// prefix the start of the other, each an ACL user made from
// docs/security.md's recipe, on Redis 7 and Valkey 8.1. Each puts and
// gets its own rows; neither can read, overwrite or delete the other's:
// a get or a put of the other's key is a FAULT with NOPERM, and so is a
// DEL on a client of its own, and the row is still its owner's,
// unchanged. With the pattern ~PREFIX/* the doc gave, tenant "kv" read,
// overwrote and deleted "kv/model-a"'s rows (this test failed so).
func TestNestedTenantPrefixesStayApart(t *testing.T) {
	recipe := docACL(t)[0]
	ctx := context.Background()
	tenants := []struct{ user, prefix, pass string }{
		{"tenant-kv", "kv", "pw-kv-51c0"},
		{"tenant-kv-model-a", "kv/model-a", "pw-kv-model-a-9e2d"},
	}
	for _, b := range builds() {
		t.Run(b.build.Name, func(t *testing.T) {
			b.owned.Need(t)
			admin := goredis.NewClient(&goredis.Options{Addr: b.owned.Value().Addr})
			t.Cleanup(func() { _ = admin.Close() })
			type open struct {
				a    *tenant
				raw  *goredis.Client
				stem driver.Stem
			}
			var ts []open
			for i, tn := range tenants {
				line := strings.Replace(recipe, "SETUSER tenantA ", "SETUSER "+tn.user+" ", 1)
				line = strings.Replace(line, "~tenantA/", "~"+tn.prefix+"/", 1)
				line = strings.ReplaceAll(line, "PASSWORD", tn.pass)
				require.NotEqual(t, recipe, line)
				var args []any
				for _, f := range strings.Fields(line) {
					args = append(args, f)
				}
				require.NoError(t, admin.Do(ctx, args...).Err(), line)
				t.Cleanup(func() { _ = admin.Do(ctx, "acl", "deluser", tn.user).Err() })
				stem, err := driver.KeyStem(tn.prefix)
				require.NoError(t, err)
				a := openTenant(t, redis.Options{Addrs: []string{b.owned.Value().Addr}, Username: tn.user, Password: tn.pass})
				raw := goredis.NewClient(&goredis.Options{Addr: b.owned.Value().Addr, Username: tn.user, Password: tn.pass})
				t.Cleanup(func() { _ = raw.Close() })
				a.fill(0, byte(40*i+1))
				ts = append(ts, open{a, raw, stem})
			}
			keyOf := func(o open) string {
				k, err := o.stem.Key([]byte(fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano())))
				require.NoError(t, err)
				t.Cleanup(func() { _ = admin.Del(ctx, k).Err() })
				return k
			}
			for i, owner := range ts {
				other := ts[1-i]
				key := keyOf(owner)
				res := owner.a.put(t, owner.a.row(key, 0))
				require.Equal(t, driver.Ready, res[0].Status, "%s puts its own row: %v", tenants[i].prefix, res[0])
				res = owner.a.get(t, owner.a.row(key, 1))
				require.Equal(t, driver.Ready, res[0].Status, "%s gets its own row: %v", tenants[i].prefix, res[0])
				stored := admin.Get(ctx, key).Val()

				who := fmt.Sprintf("%s on %s's key %s", tenants[1-i].prefix, tenants[i].prefix, key)
				dst := other.a.r.Slot(2).Bytes()
				for j := range dst {
					dst[j] = 0xEE
				}
				res = other.a.get(t, other.a.row(key, 2))
				assert.Equal(t, driver.Fault, res[0].Status, "%s: get: %v", who, res[0])
				assert.Contains(t, res[0].Text, "NOPERM", "%s: get", who)
				assert.Equal(t, bytes.Repeat([]byte{0xEE}, len(dst)), dst, "%s: the get wrote the slot", who)
				res = other.a.put(t, other.a.row(key, 0))
				assert.Equal(t, driver.Fault, res[0].Status, "%s: put: %v", who, res[0])
				assert.Contains(t, res[0].Text, "NOPERM", "%s: put", who)
				err := other.raw.Del(ctx, key).Err()
				assert.ErrorContains(t, err, "NOPERM", "%s: DEL", who)
				assert.Equal(t, stored, admin.Get(ctx, key).Val(), "%s: the row changed", who)
			}
		})
	}
}

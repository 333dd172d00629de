package redis_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/internal/witness"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
	"github.com/kvblob/kvblob/stores/trailer"
)

// The witnesses of the Redis 7 and Valkey 8.1 specs: the real driver and
// go-redis over a real server, through a witness.Proxy, each run making
// one rule apply and checking its claims (internal/witness).

const (
	wRowBytes = 16 << 10
	wCanary   = 0xEE
	wPrefix   = "wit"
)

// wfx is one witness's world: a server of its own, the proxy in front of
// it, the driver through the proxy, and a client straight to the server
// that plants and inspects.
type wfx struct {
	srv    *rediskit.Server
	proxy  *witness.Proxy
	d      *redis.Driver
	direct *goredis.Client
	region *hostmem.Mapping
	reg    driver.Registration
	n      int // keys handed out
}

// wTenant is the ACL user a tenant witness's driver connects as: its
// keys are wPrefix's (rediskit.TenantUser).
const wTenant, wTenantPassword = "witness", "witness-password"

// newWfx starts the world; tenant: the driver connects as wTenant.
func newWfx(t *testing.T, b *rediskit.Build, tenant ...bool) *wfx {
	t.Helper()
	cfg := rediskit.Config{Build: b}
	asTenant := len(tenant) > 0 && tenant[0]
	if asTenant {
		cfg.Users = [][]string{rediskit.TenantUser(wTenant, wTenantPassword, wPrefix, false)}
	}
	srv, err := rediskit.StartWith(cfg)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	f := &wfx{srv: srv}
	f.proxy, err = witness.StartProxy(srv.Addr)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.proxy.Close()) })
	f.direct = goredis.NewClient(&goredis.Options{Addr: srv.Addr, Protocol: 2})
	t.Cleanup(func() { _ = f.direct.Close() })
	// ReadTimeout is what ends a call over a stalled connection; it is
	// longer than a witness takes to change the server under a stall.
	opt := redis.Options{Addrs: []string{f.proxy.Addr()},
		DialTimeout: time.Second, ReadTimeout: 700 * time.Millisecond, WriteTimeout: 700 * time.Millisecond, DownFor: -1}
	if asTenant {
		opt.Username, opt.Password = wTenant, wTenantPassword
	}
	f.d, err = redis.Open(t.Context(), opt)
	require.NoError(t, err)
	f.region, err = hostmem.Map("wit", driver.Layout{SlotBytes: wRowBytes, Slots: 4})
	require.NoError(t, err)
	f.reg, err = f.d.Register(f.region.Region)
	require.NoError(t, err)
	t.Cleanup(func() {
		f.proxy.Disarm()
		assert.True(t, f.d.Drain(context.Background()))
		assert.NoError(t, f.d.Unregister(f.reg))
		assert.NoError(t, f.d.Close())
		assert.NoError(t, f.region.Close())
	})
	// One put first: the driver's one-time questions (may the user
	// transact) are asked before any fault is armed.
	f.src(1)
	f.put(t, f.row(f.key(), 0))
	return f
}

// warm leaves an idle connection in each of the driver's clients, so a
// fault armed next meets no handshake.
func (f *wfx) warm(t *testing.T) {
	t.Helper()
	f.put(t, f.row(f.key(), 0))
	op, err := f.d.Get(t.Context(), []driver.Row{f.row(f.key(), 1)}, driver.Hint{})
	require.NoError(t, err)
	_, done := op.Poll()
	require.True(t, done)
}

func (f *wfx) key() string {
	f.n++
	k, err := driver.KeyStem(wPrefix)
	if err != nil {
		panic(err)
	}
	key, err := k.Key([]byte{byte(f.n), byte(f.n >> 8)})
	if err != nil {
		panic(err)
	}
	return key
}

// row is key over slot i (0: the source, 1: the destination), of n bytes
// (default the slot's).
func (f *wfx) row(key string, slot int, n ...int64) driver.Row {
	s := f.region.Slot(slot)
	if len(n) > 0 {
		s.Length = n[0]
	}
	return driver.Row{Key: key, Spans: []driver.Span{s}}
}

// src fills the source slot with a pattern of seed.
func (f *wfx) src(seed byte) {
	b := f.region.Slot(0).Bytes()
	for i := range b {
		b[i] = byte(i*31) ^ seed
	}
}

func (f *wfx) dst() []byte { return f.region.Slot(1).Bytes() }

func untouched(b []byte) bool { return bytes.Count(b, []byte{wCanary}) == len(b) }

func (f *wfx) put(t *testing.T, row driver.Row) (driver.Result, bool) {
	t.Helper()
	op, err := f.d.Put(t.Context(), []driver.Row{row})
	require.NoError(t, err)
	res, done := op.Poll()
	require.True(t, done, "every Redis call ends on return")
	return res[0], op.AccessEnded()
}

// stored is the payload the server holds under key, nil when it holds no
// object.
func (f *wfx) stored(t *testing.T, key string) []byte {
	t.Helper()
	v, err := f.direct.Get(t.Context(), key).Bytes()
	if err == goredis.Nil {
		return nil
	}
	require.NoError(t, err)
	p, err := (*trailer.Integrity)(nil).Check(v, key)
	if err != nil {
		return nil
	}
	return p
}

// wget runs a get of row under fault (armed before the call; nil: none),
// releases every connection, and says what happened to the destination.
func (f *wfx) wget(t *testing.T, row driver.Row, fault *witness.Fault) witness.Observed {
	t.Helper()
	b := f.dst()
	for i := range b {
		b[i] = wCanary
	}
	var a *witness.Armed
	if fault != nil {
		a = f.proxy.Arm(*fault)
	}
	op, err := f.d.Get(t.Context(), []driver.Row{row}, driver.Hint{})
	require.NoError(t, err)
	res, done := op.Poll()
	require.True(t, done)
	o := witness.Observed{Result: res[0], AccessEnded: op.AccessEnded(), Written: !untouched(b),
		Whole: bytes.Equal(b[:row.Spans[0].Length], f.region.Slot(0).Bytes()[:row.Spans[0].Length])}
	if a != nil {
		select {
		case <-a.Fired():
		default:
			t.Fatalf("the fault (%v) never fired: the witness staged nothing", a.Fault)
		}
	}
	// Release: held bytes go on, every connection ends, and no byte of
	// theirs can land after this.
	f.proxy.Disarm()
	f.proxy.Drop()
	o.LateWritten = !o.Written && !untouched(b)
	return o
}

// wput runs a put of the source row under fault; during, when set, runs
// once the fault fired (the server changed under a stalled step), then
// releases it. After the call it overwrites the source, releases every
// connection, and says whether the server got the new bytes.
func (f *wfx) wput(t *testing.T, row driver.Row, fault *witness.Fault, during func()) witness.Observed {
	t.Helper()
	f.src(0x5A)
	before := bytes.Clone(row.Spans[0].Bytes())
	var a *witness.Armed
	if fault != nil {
		a = f.proxy.Arm(*fault)
	}
	type answer struct {
		r     driver.Result
		ended bool
	}
	got := make(chan answer, 1)
	go func() {
		op, err := f.d.Put(context.Background(), []driver.Row{row})
		if err != nil {
			got <- answer{r: driver.FaultResult(0, "Put: %v", err)}
			return
		}
		res, _ := op.Poll()
		got <- answer{res[0], op.AccessEnded()}
	}()
	var ans answer
	if a != nil && during != nil {
		select {
		case <-a.Fired():
			during()
			a.Release()
			ans = <-got
		case ans = <-got:
			t.Fatalf("the put returned (%v) before the fault (%v) fired", ans.r, a.Fault)
		}
	} else {
		ans = <-got
	}
	if a != nil {
		select {
		case <-a.Fired():
		default:
			t.Fatalf("the fault (%v) never fired: the witness staged nothing", a.Fault)
		}
	}
	o := witness.Observed{Result: ans.r, AccessEnded: ans.ended, SourceWritten: !bytes.Equal(before, row.Spans[0].Bytes())}
	f.src(0xA5) // after the return: no byte of this may reach the server
	f.proxy.Disarm()
	f.proxy.Drop()
	if p := f.stored(t, row.Key); p != nil && bytes.Equal(p, row.Spans[0].Bytes()) {
		o.LateRead = true
	}
	return o
}

// redisWitness is one witness: the rule it holds (call.answer), how it
// makes the rule apply, and the run.
type redisWitness struct {
	rule, how string
	run       func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed
}

// midValue is a fault in the reply of a get of a published row, 100
// bytes into the value (the count starts after the bulk reply's header:
// the handshake of a connection dialled for the get goes first).
func midValue(a witness.Action) *witness.Fault {
	return &witness.Fault{Dir: witness.Reply, Action: a, After: []byte(fmt.Sprintf("$%d\r\n", wRowBytes+trailer.Size)), At: 100}
}

// published puts the source row under a new key and returns it.
func published(t *testing.T, f *wfx) driver.Row {
	row := f.row(f.key(), 0)
	f.src(0x33)
	r, _ := f.put(t, row)
	require.Equal(t, driver.Ready, r.Status, "%v", r)
	return row
}

// getOf is the destination row for a source row.
func getOf(f *wfx, src driver.Row) driver.Row { return f.row(src.Key, 1, src.Spans[0].Length) }

// storeStep is the store step's request: the second SET of a put (the
// claim is the first), on every build: Redis 7's MULTI/SET/EXEC, Valkey's
// SET IFEQ.
func storeStep(a witness.Action, at int64) *witness.Fault {
	return &witness.Fault{Dir: witness.Request, Action: a, After: []byte("\r\nset\r\n"), Skip: 1, At: at}
}

var getOtherwise = func(a witness.Action) func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
	return func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wget(t, getOf(f, published(t, f)), midValue(a))
	}
}

var redisWitnesses = []redisWitness{
	{"get.whole", "reply sliced into 7-byte writes", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wget(t, getOf(f, published(t, f)), &witness.Fault{Dir: witness.Reply, Action: witness.Slice, SliceBytes: 7})
	}},
	{"get.short", "an object of half the row's length under the key", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		src := published(t, f)
		half := f.row(f.key(), 0, wRowBytes/2)
		r, _ := f.put(t, half)
		require.Equal(t, driver.Ready, r.Status)
		return f.wget(t, f.row(half.Key, 1, src.Spans[0].Length), nil)
	}},
	{"get.NIL", "absent key, reply sliced", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wget(t, f.row(f.key(), 1), &witness.Fault{Dir: witness.Reply, Action: witness.Slice})
	}},
	{"get.PENDING", "another writer's marker under the key", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		key := f.key()
		require.NoError(t, f.direct.Set(t.Context(), key, trailer.NewMarker(), 0).Err())
		return f.wget(t, f.row(key, 1), nil)
	}},
	{"get.CORRUPT", "an object's length of bytes that fail the trailer", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		key := f.key()
		require.NoError(t, f.direct.Set(t.Context(), key, bytes.Repeat([]byte{7}, wRowBytes+trailer.Size), 0).Err())
		return f.wget(t, f.row(key, 1), nil)
	}},
	{"get.otherwise", "stall the reply mid-value past the read timeout", getOtherwise(witness.Stall)},
	{"get.otherwise", "cut the reply mid-value", getOtherwise(witness.Cut)},
	{"get.otherwise", "reset the reply mid-value", getOtherwise(witness.Reset)},
	{"get.otherwise", "truncate the reply mid-value", getOtherwise(witness.Truncate)},
	{"get.otherwise", "reset the request", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wget(t, getOf(f, published(t, f)), &witness.Fault{Dir: witness.Request, Action: witness.Reset, After: []byte("getrange"), At: 5})
	}},

	{"claim.OK", "request sliced into 64-byte writes", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wput(t, f.row(f.key(), 0), &witness.Fault{Dir: witness.Request, Action: witness.Slice, SliceBytes: 64}, nil)
	}},
	{"claim.otherwise", "cut the claim's request", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wput(t, f.row(f.key(), 0), &witness.Fault{Dir: witness.Request, Action: witness.Cut, After: []byte("\r\nset\r\n"), At: 10}, nil)
	}},
	{"claim.otherwise", "reset the claim's reply", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		// The claim's reply is the first of its round trip; a handshake's
		// (HELLO's) holds "proto".
		f.warm(t)
		return f.wput(t, f.row(f.key(), 0), &witness.Fault{Dir: witness.Reply, Action: witness.Reset}, nil)
	}},
	{"claim.NIL", "the key holds this row's object", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		row := f.row(f.key(), 0)
		f.src(0x5A) // what wput puts
		r, _ := f.put(t, row)
		require.Equal(t, driver.Ready, r.Status)
		o := f.wput(t, row, nil, nil)
		o.Branch = witness.Exists
		return o
	}},
	{"claim.NIL", "the key holds another writer's marker", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		row := f.row(f.key(), 0)
		require.NoError(t, f.direct.Set(t.Context(), row.Key, trailer.NewMarker(), 0).Err())
		o := f.wput(t, row, nil, nil)
		o.Branch = witness.Absent
		return o
	}},
	{"claim.NIL", "the key holds another row's object", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		row := f.row(f.key(), 0)
		f.src(0x77)
		r, _ := f.put(t, row)
		require.Equal(t, driver.Ready, r.Status)
		o := f.wput(t, row, nil, nil)
		o.Branch = witness.Other
		return o
	}},
	{"get.NOPERM", asTenant("an ACL user reads another tenant's key"), func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wget(t, otherTenants(f, 1), nil)
	}},
	{"claim.NOPERM", asTenant("an ACL user puts another tenant's key"), func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wput(t, otherTenants(f, 0), nil, nil)
	}},
	{"store.NOPERM", asTenant("the ACL takes the key from the user while its store is stalled"), func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wput(t, f.row(f.key(), 0), storeStep(witness.Stall, 0), func() {
			require.NoError(t, f.direct.Do(context.Background(), "acl", "setuser", wTenant, "resetkeys", "~other/v1/*").Err())
		})
	}},
	{"claim.OOM", "a server over its maxmemory (noeviction)", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		full(t, f)
		return f.wput(t, f.row(f.key(), 0), nil, nil)
	}},
	{"store.OK", "store's request sliced into 64-byte writes", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wput(t, f.row(f.key(), 0), storeStep(witness.Slice, 0), nil)
	}},
	{"store.otherwise", "cut the store's request mid-object", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wput(t, f.row(f.key(), 0), storeStep(witness.Cut, 200), nil)
	}},
	{"store.otherwise", "stall the store's request past the read timeout", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wput(t, f.row(f.key(), 0), storeStep(witness.Stall, 200), nil)
	}},
	{"store.OOM", "the server fills while the store's request is stalled", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		return f.wput(t, f.row(f.key(), 0), storeStep(witness.Stall, 0), func() { full(t, f) })
	}},
}

// full makes the server refuse every write (maxmemory under what it uses,
// noeviction) until the test ends.
func full(t *testing.T, f *wfx) {
	require.NoError(t, f.direct.ConfigSet(context.Background(), "maxmemory-policy", "noeviction").Err())
	require.NoError(t, f.direct.ConfigSet(context.Background(), "maxmemory", "1").Err())
	t.Cleanup(func() { _ = f.direct.ConfigSet(context.Background(), "maxmemory", "0").Err() })
}

// lostWitness: another writer takes the key while this writer's store is
// stalled on the wire (what a marker whose TTL ran out lets happen); the
// store finds its marker gone: Redis 7 derives LOST, Valkey's SET IFEQ
// answers nil.
func lostWitness(rule string) redisWitness {
	return redisWitness{rule, "another writer takes the key while the store's request is stalled", func(t *testing.T, f *wfx, b *rediskit.Build) witness.Observed {
		row := f.row(f.key(), 0)
		o := f.wput(t, row, storeStep(witness.Stall, 0), func() {
			require.NoError(t, f.direct.Set(context.Background(), row.Key, "another writer's", 0).Err())
		})
		v, err := f.direct.Get(t.Context(), row.Key).Result()
		require.NoError(t, err)
		assert.Equal(t, "another writer's", v, "the stalled store overwrote the key another writer took")
		return o
	}}
}

// asTenant marks the witness of how as one whose driver connects as
// wTenant.
func asTenant(how string) string {
	tenantHows[how] = true
	return how
}

var tenantHows = map[string]bool{}

// otherTenants is a row over slot of a key under another tenant's prefix.
func otherTenants(f *wfx, slot int) driver.Row {
	stem, err := driver.KeyStem("other")
	if err != nil {
		panic(err)
	}
	key, err := stem.Key([]byte{0x42})
	if err != nil {
		panic(err)
	}
	return f.row(key, slot)
}

// redisUnreached are the rules of both specs no witness here reaches, and
// why.
var redisUnreached = map[string]string{
	"release.OK":        "a cleanup: its answer never reaches a row's result",
	"release.otherwise": "a cleanup: its answer never reaches a row's result",
}

func TestWitness(t *testing.T) {
	specs, err := witness.Specs()
	require.NoError(t, err)
	for _, b := range rediskit.Builds {
		stem := witness.Stem(b.Spec.Source)
		all := append([]redisWitness(nil), redisWitnesses...)
		if b == rediskit.Valkey81 {
			all = append(all, lostWitness("store.NIL"))
		} else {
			all = append(all, lostWitness("store.LOST"))
		}
		t.Run(stem, func(t *testing.T) {
			var ids []string
			for _, w := range all {
				ids = append(ids, w.rule)
			}
			require.NoError(t, witness.Covered(specs, stem, ids, redisUnreached))
			storekit.NeedInstalled(t, b.Available)
			for _, w := range all {
				rule, err := witness.Find(specs, stem, w.rule)
				require.NoError(t, err)
				t.Run(w.rule+"/"+w.how, func(t *testing.T) {
					rule.Announce(t)
					f := newWfx(t, b, tenantHows[w.how])
					o := w.run(t, f, b)
					t.Logf("%s: %v", w.how, o.Result)
					if err := rule.Check(o); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

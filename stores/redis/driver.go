// Package redis is kvblob's driver for Redis 7 and Valkey 8.1 (standalone
// or Cluster) over github.com/redis/go-redis/v9.
//
// A row is one Redis string: the row's spans concatenated, then the
// trailer of stores/trailer (keyed when Options.Integrity is set). A
// connection may authenticate as an ACL user and run over TLS (Options).
// A put claims each key with a pending marker
// (SET NX PX; trailer.NewMarker, a form no object has: a get checks the
// object's trailer first, then trailer.IsMarker, so a payload that begins
// with a marker's bytes is its row's), then replaces its own marker with
// the object: on a
// standalone Redis 7 with WATCH, GET and MULTI/SET/EXEC, pipelined across
// keys, and no script; on a Redis 7 Cluster (or for a user who may not
// transact) with a compare-and-set script; on Valkey 8.1 with one SET IFEQ
// per key. A get checks the trailer
// before any byte reaches the caller's slots.
//
// Each server build has its own spec (spec/redis-7.yaml,
// spec/redis-valkey-8.1.yaml), which says why and holds every code-to-result
// rule: Open asks the server what it is (ServerIdentity) and picks the spec
// that holds for it, refusing any other (builds.go); this package only
// classifies replies and errors into the spec's codes (classify.go).
package redis

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvblob/kvblob/stores/trailer"

	goredis "github.com/redis/go-redis/v9"

	redisgen "github.com/kvblob/kvblob/generated/redis"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/runtime/rules"
)

// casScript replaces KEYS[1] with ARGV[2] only if it still holds this
// writer's marker ARGV[1]: 1 when stored, 0 when the marker was gone.
const casScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0`

// delScript deletes KEYS[1] only if it holds this writer's marker ARGV[1].
const delScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

// Driver is a driver.Driver over one Redis deployment.
type Driver struct {
	c goredis.UniversalClient
	// g is the client gets go out on: c itself with
	// Options.FetchesShareConns, else a client of its own, and gate the
	// gets in flight c's connections yield to with Options.PublishesYield
	// (lanes.go).
	g    goredis.UniversalClient
	gate *fetchGate
	opt  Options
	ver  string

	// build is the server build the driver talks to; its spec's Calls
	// map the answer of each call the driver makes.
	build build

	life driverkit.Lifecycle

	// bufs holds the object buffers of puts and gets between calls.
	bufs bufPool

	// tx is whether the user may run WATCH, MULTI and EXEC (txUnknown
	// until the first store asks).
	tx atomic.Int32
}

const (
	txUnknown = iota
	txAllowed
	txRefused
)

var _ driver.Driver = (*Driver)(nil)

// Open connects, picks the spec that holds for the server it reached (its
// name and version, from HELLO), refusing a server no spec holds
// for, and returns the driver.
func Open(ctx context.Context, opt Options) (*Driver, error) {
	if len(opt.Addrs) == 0 {
		return nil, fmt.Errorf("redis: no address; set Options.Addrs to the server's host:port")
	}
	if opt.PendingTTL == 0 {
		opt.PendingTTL = 30 * time.Second
	}
	var tlsConfig *tls.Config
	if opt.TLS != nil {
		var err error
		if tlsConfig, err = opt.TLS.config(); err != nil {
			return nil, err
		}
	}
	// Over TLS the driver dials itself (tlsDialer), so a plain port fails
	// the dial at once, saying so, instead of at DialTimeout.
	dialTimeout := opt.DialTimeout
	if dialTimeout <= 0 {
		dialTimeout = 5 * time.Second // go-redis's default, which its own dialer applies
	}
	base := goredis.NewDialer(&goredis.Options{DialTimeout: dialTimeout})
	if tlsConfig != nil {
		base = tlsDialer(tlsConfig, opt.DialTimeout)
	}
	// Gets on a client of their own, publishes yielding to them when
	// asked (lanes.go).
	var gate *fetchGate
	if !opt.FetchesShareConns && opt.PublishesYield {
		gate = &fetchGate{}
	}
	c := newClient(opt, tlsConfig, yielding(base, gate))
	g := c
	if !opt.FetchesShareConns {
		g = newClient(opt, tlsConfig, base)
	}
	// One dial per attempt (DialerRetries: 1): go-redis's default of five
	// with 100 ms back-off cost 0.4 s per call to a server that is down.
	// The guard goes first: it routes the client's log lines to
	// Options.Logger and fails dials at once for DownFor after one failed.
	guard := newGuard(opt)
	for _, cl := range unique(c, g) {
		cl.AddHook(guard)
		for _, h := range opt.Hooks {
			cl.AddHook(h)
		}
	}
	closeAll := func() {
		for _, cl := range unique(c, g) {
			_ = cl.Close()
		}
	}
	hellos, err := serverHellos(ctx, c)
	if err != nil {
		closeAll()
		return nil, openError(opt, err)
	}
	b, ver, err := pickBuildOf(hellos)
	if err != nil {
		closeAll()
		return nil, err
	}
	return &Driver{c: c, g: g, gate: gate, opt: opt, ver: ver, build: b}, nil
}

// serverHellos asks each server the driver writes to for HELLO: the one
// server, or every master of a Cluster, by address.
func serverHellos(ctx context.Context, c goredis.UniversalClient) (map[string]map[string]string, error) {
	cc, ok := c.(*goredis.ClusterClient)
	if !ok {
		hello, err := Hello(ctx, c)
		return map[string]map[string]string{"": hello}, err
	}
	var mu sync.Mutex
	hellos := map[string]map[string]string{}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
		hello, err := Hello(ctx, n)
		mu.Lock()
		defer mu.Unlock()
		hellos[n.Options().Addr] = hello
		return err
	})
	return hellos, err
}

// String names the server and the options, Password redacted.
func (d *Driver) String() string {
	return "redis driver (server " + d.ver + ", " + d.opt.String() + ")"
}

// ServerVersion is the server and version HELLO reported at Open
// ("redis-server 7.0.15", "valkey-server 8.1.1").
func (d *Driver) ServerVersion() string { return d.ver }

// Spec is the spec that holds for the server the driver talks to.
func (d *Driver) Spec() *rules.Spec { return d.build.spec.Spec }

// Client returns the go-redis client puts go out on (for tests and
// diagnostics).
func (d *Driver) Client() goredis.UniversalClient { return d.c }

// FetchClient returns the go-redis client gets go out on: a client of its
// own, or Client with Options.FetchesShareConns (for baselines and
// diagnostics: blobbench's raw pipeline reads on it, so that it reads on
// the same connections the driver does).
func (d *Driver) FetchClient() goredis.UniversalClient { return d.g }

// Capabilities are the server's spec's.
func (d *Driver) Capabilities() driver.Capabilities { return d.build.spec.Capabilities }

// Register admits a host region; Redis needs no registration of its own.
func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	return d.life.Register(r, d.build.spec.Admission.Register, nil)
}

// Unregister refuses while a call that may touch the region is in progress.
func (d *Driver) Unregister(reg driver.Registration) error { return d.life.Unregister(reg, nil) }

// Drain waits for the calls in progress. Every call ends its access on
// return, so no operation is ever unprovable.
func (d *Driver) Drain(ctx context.Context) bool { return d.life.Drain(ctx, nil) }

// Close closes the client once every call ended and every region is
// unregistered (driverkit.Lifecycle.Close), and drops the object buffers
// it kept.
func (d *Driver) Close() error {
	return d.life.Close(func() error {
		d.bufs.drop()
		var err error
		if d.g != d.c {
			err = d.g.Close()
		}
		return errors.Join(d.c.Close(), err)
	})
}

// As reaches the go-redis client: target may be a *goredis.UniversalClient.
func (d *Driver) As(target any) bool {
	if p, ok := target.(*goredis.UniversalClient); ok {
		*p = d.c
		return true
	}
	return false
}

// Put claims each key, stores the objects of the rows it claimed, and asks
// about the keys it found present.
func (d *Driver) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return d.build.spec.Admission.Put(rows, live) })
	if err != nil {
		return nil, err
	}
	defer call.End()
	results := make([]driver.Result, len(rows))
	marker := trailer.NewMarker()
	if c, ok := d.c.(*goredis.Client); ok && d.build.watched && d.mayTransact(ctx, c) {
		d.putWatched(ctx, c, rows, marker, results)
		return driverkit.Finished(results), nil
	}

	// 1. Claim every key.
	pipe := d.c.Pipeline()
	claims := make([]*goredis.BoolCmd, len(rows))
	for i, r := range rows {
		claims[i] = pipe.SetNX(ctx, r.Key, marker, d.opt.PendingTTL)
	}
	_, _ = pipe.Exec(ctx)
	var store, exists []int
	asked := map[int]rules.Mapping{}
	for i, cmd := range claims {
		m, cerr := d.claimed(cmd.Result())
		switch {
		case m.Continue:
			store = append(store, i)
		case m.FollowUp == rules.FollowAskExistence:
			exists = append(exists, i)
			asked[i] = m
		default:
			results[i] = m.WithCause(cerr)
		}
	}

	// 2. Store the claimed rows. The value is copied out of the caller's
	// slots here, so access ends before the call even starts.
	if len(store) > 0 {
		objs := make([][]byte, len(rows))
		for _, i := range store {
			objs[i] = d.object(rows[i])
		}
		// go-redis has written every object to its connection once the
		// store step returns: the buffers go back to the pool.
		defer func() {
			for _, i := range store {
				d.bufs.put(objs[i])
			}
		}()
		codes := make([]redisgen.Code, len(rows))
		errs := make([]error, len(rows))
		d.build.store(d, ctx, rows, store, objs, marker, codes, errs)
		d.stored(ctx, rows, store, marker, codes, errs, results)
	}

	// 3. A present key is READY if it holds this row's whole object,
	// NOT_READY if it holds another writer's marker (or vanished), and
	// what the spec's if_other says if it holds anything else.
	if len(exists) > 0 {
		pipe = d.c.Pipeline()
		gets := make([]*goredis.StringCmd, len(exists))
		for k, i := range exists {
			gets[k] = pipe.GetRange(ctx, rows[i].Key, 0, d.readMax(rows[i]))
		}
		_, _ = pipe.Exec(ctx)
		for k, i := range exists {
			results[i] = d.present(asked[i], gets[k], rows[i])
		}
	}
	return driverkit.Finished(results), nil
}

// claimed maps a claim's reply (SET NX: true when set, false when the key
// was present).
func (d *Driver) claimed(ok bool, err error) (rules.Mapping, error) {
	code, cerr := classify(err)
	if err == nil && !ok {
		code = redisgen.Nil
	}
	return d.build.spec.Calls.Claim.Map(int64(code)), cerr
}

// present answers the existence question of a row whose key the claim
// found present, from a bounded read of the key (GETRANGE key 0
// readMax(row); m is the claim's mapping): READY if it holds this row's
// whole object, NOT_READY if it holds another writer's marker (or
// vanished), and what the spec's if_other says if it holds anything else,
// a value longer than any object of the row included, of which no more
// than readMax+1 bytes crossed the network.
func (d *Driver) present(m rules.Mapping, get *goredis.StringCmd, row driver.Row) driver.Result {
	v, err := get.Bytes()
	switch {
	case err != nil && err != goredis.Nil:
		return m.WithCause(err)
	case err != nil || len(v) == 0:
		return driver.Result{Status: m.IfAbsent}
	case int64(len(v)) > d.readMax(row):
		return m.Other(fmt.Sprintf("key %q holds more than %d bytes, longer than any object of this %d-byte row; the driver read no further", row.Key, d.readMax(row), row.Bytes()))
	case d.holdsRow(v, row):
		return driver.Result{Status: m.IfExists}
	case trailer.IsMarker(v): // after the object's check: a payload may begin with a marker's bytes
		return driver.Result{Status: m.IfAbsent}
	default:
		return m.Other(fmt.Sprintf("key %q holds %d bytes that are not this row's %d-byte object", row.Key, len(v), row.Bytes()))
	}
}

// readMax is the longest value under row's key the driver reads whole: the
// row's object with a keyed trailer (the longer format), or a marker. Every
// read of a key is GETRANGE key 0 readMax, so at most readMax+1 bytes of a
// value cross the network, however long another writer made it; a reply
// of readMax+1 bytes is a value no object of this row can be. (GETRANGE
// answers an empty string for an absent key as for an empty value; no
// object and no marker is empty, and an empty value left by another
// writer is read as the absent key it might as well be: deleting it is no
// more than that writer could do.)
func (d *Driver) readMax(row driver.Row) int64 {
	return max(row.Bytes()+trailer.TailSize, markerLen)
}

// markerLen is the length of every marker (trailer.NewMarker).
const markerLen = int64(trailer.MarkerLen)

// stored maps the store step's code of each row of idx into its result,
// and releases the rows that were not stored.
func (d *Driver) stored(ctx context.Context, rows []driver.Row, idx []int, marker string, codes []redisgen.Code, errs []error, results []driver.Result) {
	var release []int
	for _, i := range idx {
		m := d.build.spec.Calls.Store.Map(int64(codes[i]))
		results[i] = m.WithCause(errs[i])
		// A release deletes the key only if it still holds this
		// writer's marker, so it is safe after any answer, also one
		// that says the marker is gone.
		if m.Result.Status != driver.Ready {
			release = append(release, i)
		}
	}
	d.release(ctx, rows, release, marker)
}

// putWatched is Put on a standalone Redis 7 whose user may run
// transactions, in two round trips.
//
// The first sends, for each key, the claim (SET NX PX), a WATCH and a
// GET, pipelined on one connection. A claimed row whose GET answers this
// writer's marker was still ours when its WATCH went in; a row whose GET
// answers anything else is LOST (its marker expired and another writer
// took the key) or faults with the GET's error. A key the claim found
// present has its existence question answered by that GET. It is watched
// too (which keys are ours is known only from the replies): if another
// writer changes it before EXEC, the transaction aborts and the claimed
// rows go to the script, which is slower but decides them the same way.
// A put none of whose keys it claimed ends with an UNWATCH, a second
// round trip, as the claim and the existence GET were before.
//
// The second stores the rows still ours in one MULTI/SET/EXEC (transact);
// the rows it could not settle (another watched key changed) are stored
// one key per transaction (storeWatchedOne), and only rows whose WATCH the
// ACL refused go to the compare-and-set script (storeObjects).
func (d *Driver) putWatched(ctx context.Context, c *goredis.Client, rows []driver.Row, marker string, results []driver.Result) {
	objs := make([][]byte, len(rows))
	// go-redis has written every object to its connection once the store
	// step returns: the buffers go back to the pool.
	defer func() {
		for _, o := range objs {
			if o != nil {
				d.bufs.put(o)
			}
		}
	}()
	codes := make([]redisgen.Code, len(rows))
	errs := make([]error, len(rows))
	var store, undecided, aborted []int
	_ = c.Watch(ctx, func(tx *goredis.Tx) error {
		claims := make([]*goredis.BoolCmd, len(rows))
		watches := make([]*goredis.StatusCmd, len(rows))
		gets := make([]*goredis.StringCmd, len(rows))
		_, _ = tx.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for i, r := range rows {
				claims[i] = p.SetNX(ctx, r.Key, marker, d.opt.PendingTTL)
				watches[i] = goredis.NewStatusCmd(ctx, "watch", r.Key)
				_ = p.Process(ctx, watches[i])
				gets[i] = p.GetRange(ctx, r.Key, 0, d.readMax(r))
			}
			return nil
		})
		var ours []int
		for i := range rows {
			m, cerr := d.claimed(claims[i].Result())
			switch {
			case m.Continue:
			case m.FollowUp == rules.FollowAskExistence:
				results[i] = d.present(m, gets[i], rows[i])
				continue
			default:
				results[i] = m.WithCause(cerr)
				continue
			}
			store = append(store, i)
			// The value is copied out of the caller's slots here, so
			// access ends before the call returns.
			objs[i] = d.object(rows[i])
			switch d.watchedRow(i, watches[i], gets[i], marker, codes, errs) {
			case rowOurs:
				ours = append(ours, i)
			case rowUndecided:
				undecided = append(undecided, i)
			}
		}
		aborted = d.transact(ctx, tx, rows, ours, objs, codes, errs)
		return nil
	})
	for _, i := range aborted {
		codes[i], errs[i] = d.storeWatchedOne(ctx, c, rows[i].Key, objs[i], marker)
	}
	d.storeObjects(ctx, rows, undecided, objs, marker, codes, errs)
	d.stored(ctx, rows, store, marker, codes, errs, results)
}

// watchAttempts bounds the transactions storeWatchedOne runs for one key.
const watchAttempts = 3

// storeWatchedOne stores obj under key, a key this writer claimed whose
// row a put's transaction could not settle (another watched key changed),
// in a transaction of its own: WATCH key and read it; if it still holds
// marker, MULTI/SET/EXEC; LOST once it does not. No script: a tenant who
// may not EVAL stores all the same (docs/security.md). A transaction that
// aborts again (the key itself changed, but still holds the marker: it was
// rewritten with the same bytes) is tried again, at most watchAttempts
// times; then the row faults with ERR, saying so.
func (d *Driver) storeWatchedOne(ctx context.Context, c *goredis.Client, key string, obj []byte, marker string) (redisgen.Code, error) {
	for range watchAttempts {
		var code redisgen.Code
		var cerr error
		err := c.Watch(ctx, func(tx *goredis.Tx) error {
			var get *goredis.StringCmd
			_, _ = tx.Pipelined(ctx, func(p goredis.Pipeliner) error {
				_ = p.Process(ctx, goredis.NewStatusCmd(ctx, "watch", key))
				get = p.GetRange(ctx, key, 0, markerLen)
				return nil
			})
			v, err := get.Result()
			switch {
			case err == goredis.Nil || err == nil && v != marker:
				code = redisgen.Lost
				return tx.Unwatch(ctx).Err()
			case err != nil:
				code, cerr = classify(err)
				return tx.Unwatch(ctx).Err()
			}
			var set *goredis.StatusCmd
			_, err = tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
				set = p.Set(ctx, key, obj, 0)
				return nil
			})
			if err == nil || !errors.Is(err, goredis.TxFailedErr) {
				code, cerr = classify(set.Err())
			}
			return err
		})
		switch {
		case err != nil && code == redisgen.OK: // no reply decided the row
			return classify(err)
		case !errors.Is(err, goredis.TxFailedErr):
			return code, cerr
		}
	}
	return redisgen.Err, fmt.Errorf("the key changed under each of %d transactions while it held this writer's marker", watchAttempts)
}

// storeObjects is a Redis 7 store for rows already claimed: it replaces
// this writer's marker with objs[i] for each row i of idx, setting
// codes[i] (OK, LOST or how the reply classified) and errs[i], with the
// compare-and-set script, one key at a time in a pipeline, which decides
// each alone: OK while the key still holds this writer's marker, LOST once
// it does not.
//
// A standalone server whose user may transact never gets here: Put takes
// putWatched, whose transactions store without the script (the script
// copies the object into a Lua string and again into the key; a plain SET
// does not, which is why transactions are preferred; and a tenant who may
// not EVAL cannot stall every other tenant with an endless script),
// except a row whose WATCH the ACL refused. On a Cluster, WATCH
// and MULTI need every key of a transaction in one slot, and a request's
// keys spread over all of them: a transaction per key would cost three
// round trips each where the script costs one, so a Cluster keeps the
// script; so does a user without transactions, and a put whose first
// question whether the user may transact found no answer (the next put
// asks again).
func (d *Driver) storeObjects(ctx context.Context, rows []driver.Row, idx []int, objs [][]byte, marker string, codes []redisgen.Code, errs []error) {
	if len(idx) == 0 {
		return
	}
	pipe := d.c.Pipeline()
	cas := make([]*goredis.Cmd, len(idx))
	for k, i := range idx {
		cas[k] = pipe.Eval(ctx, casScript, []string{rows[i].Key}, marker, objs[i])
	}
	_, _ = pipe.Exec(ctx)
	for k, i := range idx {
		n, err := cas[k].Int()
		codes[i], errs[i] = classify(err)
		if err == nil && n == 0 {
			codes[i] = redisgen.Lost
		}
	}
}

// mayTransact reports whether the ACL user may run MULTI and EXEC, asking
// the server once: a refused MULTI would let the SETs run outside any
// transaction, and a refused EXEC would leave the connection queueing.
// The DISCARD ends a MULTI whose EXEC was refused. A user without them
// (docs/security.md's tenant, before it listed @transaction) stores with
// the script.
func (d *Driver) mayTransact(ctx context.Context, c *goredis.Client) bool {
	switch d.tx.Load() {
	case txAllowed:
		return true
	case txRefused:
		return false
	}
	var multi, exec *goredis.Cmd
	_, _ = c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		multi, exec = p.Do(ctx, "multi"), p.Do(ctx, "exec")
		// On the same connection: a MULTI the ACL allowed with an EXEC it
		// refused leaves that connection inside a transaction. (Its error,
		// "DISCARD without MULTI" otherwise, is not asked.)
		p.Do(ctx, "discard")
		return nil
	})
	if multi.Err() == nil && exec.Err() == nil {
		d.tx.Store(txAllowed)
		return true
	}
	if isNoperm(multi.Err()) || isNoperm(exec.Err()) {
		d.tx.Store(txRefused)
	}
	return false // asked again next time if it was not a refusal
}

func isNoperm(err error) bool {
	code, _ := classify(err)
	return code == redisgen.Noperm
}

// What the replies to a claimed row's WATCH and GET say of it.
const (
	rowDecided   = iota // its code is set: LOST, or the reply's error
	rowOurs             // the key held this writer's marker when watched
	rowUndecided        // the ACL refused WATCH: the script decides
)

// watchedRow sorts claimed row i by the replies to its WATCH and GET,
// setting codes[i] and errs[i] when they decide it.
func (d *Driver) watchedRow(i int, watch *goredis.StatusCmd, get *goredis.StringCmd, marker string, codes []redisgen.Code, errs []error) int {
	err := watch.Err()
	if err == nil {
		err = get.Err()
	}
	switch v := get.Val(); {
	case isNoperm(watch.Err()) && strings.Contains(watch.Err().Error(), "'watch' command"):
		d.tx.Store(txRefused) // the ACL changed under us: the script decides
		return rowUndecided
	case err == goredis.Nil || err == nil && v != marker:
		codes[i], errs[i] = redisgen.Lost, nil
	case err != nil:
		codes[i], errs[i] = classify(err)
	default:
		return rowOurs
	}
	return rowDecided
}

// transact replaces this writer's marker with the object of each row of
// ours in one MULTI/SET/EXEC on tx, which runs only if no key tx watches
// changed since its WATCH, and returns the rows it could not settle (it
// aborted, or another row's SET was refused). With no row, it only ends
// the watch.
func (d *Driver) transact(ctx context.Context, tx *goredis.Tx, rows []driver.Row, ours []int, objs [][]byte, codes []redisgen.Code, errs []error) (undecided []int) {
	if len(ours) == 0 {
		_ = tx.Unwatch(ctx).Err()
		return nil
	}
	sets := make([]*goredis.StatusCmd, len(ours))
	_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		for k, i := range ours {
			sets[k] = p.Set(ctx, rows[i].Key, objs[i], 0)
		}
		return nil
	})
	aborted := errors.Is(err, goredis.TxFailedErr) || goredis.IsExecAbortError(err)
	for k, i := range ours {
		serr := sets[k].Err()
		switch {
		case aborted && (serr == nil || goredis.IsExecAbortError(serr) || errors.Is(serr, goredis.TxFailedErr)):
			undecided = append(undecided, i)
		default:
			codes[i], errs[i] = classify(serr)
		}
	}
	if err != nil && !aborted {
		_ = tx.Unwatch(ctx).Err() // EXEC may never have run
	}
	return undecided
}

// object is row's payload and trailer in a buffer of d.bufs. The CRC (and
// with a row key the tag) is taken as the spans are copied, in one pass
// over memory (trailer.CopyCRC, trailer.Sealer.Copy).
func (d *Driver) object(row driver.Row) []byte {
	n := row.Bytes()
	if in := d.opt.Integrity; in.On() {
		obj := d.bufs.get(n + in.Overhead())[:n]
		sl := in.Sealer(n)
		off := 0
		for _, s := range row.Spans {
			off += sl.Copy(obj[off:], s.Bytes())
		}
		return sl.Finish(obj, row.Key)
	}
	obj := d.bufs.get(n + trailer.Size)[:n+trailer.Size]
	var crc uint32
	off := 0
	for _, s := range row.Spans {
		crc = trailer.CopyCRC(crc, obj[off:], s.Bytes())
		off += len(s.Bytes())
	}
	trailer.Put(obj[off:], trailer.NameDigest(row.Key), off, crc)
	return obj
}

// release deletes this writer's markers from rows whose store failed, so a
// later put need not wait out the TTL; a marker that cannot be deleted
// expires. On a standalone server whose user may transact it runs no
// script (releaseWatched); on a Cluster, or when the server refused the
// transaction (a full Redis 7 refuses every command queued in MULTI, DEL
// too), a script deletes each key only if it holds the marker, and a
// tenant without +eval leaves the marker to expire. (Valkey 8.1's SET IFEQ
// could release a marker with PX 1, but a full server refuses a SET, and a
// full server is when stores fail most.)
func (d *Driver) release(ctx context.Context, rows []driver.Row, idx []int, marker string) {
	if len(idx) == 0 {
		return
	}
	if c, ok := d.c.(*goredis.Client); ok && d.mayTransact(ctx, c) && d.releaseWatched(ctx, c, rows, idx, marker) {
		return
	}
	pipe := d.c.Pipeline()
	for _, i := range idx {
		pipe.Eval(ctx, delScript, []string{rows[i].Key}, marker)
	}
	_, _ = pipe.Exec(ctx)
}

// releaseWatched is release in two round trips and no script: WATCH and
// GET each key, then MULTI, DEL of each key that held this writer's
// marker, EXEC. If another writer changed a watched key in between, the
// transaction aborts and the markers expire after their TTL. It reports
// false when a command failed otherwise, and the release is not done.
func (d *Driver) releaseWatched(ctx context.Context, c *goredis.Client, rows []driver.Row, idx []int, marker string) bool {
	err := c.Watch(ctx, func(tx *goredis.Tx) error {
		gets := make([]*goredis.StringCmd, len(idx))
		_, _ = tx.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for k, i := range idx {
				_ = p.Process(ctx, goredis.NewStatusCmd(ctx, "watch", rows[i].Key))
				gets[k] = p.GetRange(ctx, rows[i].Key, 0, markerLen)
			}
			return nil
		})
		var ours []string
		for k, i := range idx {
			if v, err := gets[k].Result(); err == nil && v == marker {
				ours = append(ours, rows[i].Key)
			}
		}
		if len(ours) == 0 {
			return tx.Unwatch(ctx).Err()
		}
		_, err := tx.TxPipelined(ctx, func(p goredis.Pipeliner) error {
			p.Del(ctx, ours...)
			return nil
		})
		return err
	})
	return err == nil || errors.Is(err, goredis.TxFailedErr)
}

// holdsRow reports whether v is row's whole object: it passes the trailer
// check and its payload is the row's bytes.
func (d *Driver) holdsRow(v []byte, row driver.Row) bool {
	payload, err := d.opt.Integrity.Check(v, row.Key)
	if err != nil || int64(len(payload)) != row.Bytes() {
		return false
	}
	for _, s := range row.Spans {
		if !bytes.Equal(payload[:s.Length], s.Bytes()) {
			return false
		}
		payload = payload[s.Length:]
	}
	return true
}

// Get reads each row's object, checks its trailer and only then copies its
// payload into the row's spans.
//
// Each object is read straight from the connection into a buffer of d.bufs
// (GETRANGE key 0 readMax, with go-redis's zero-copy reply), sized for the
// row's object in either trailer format plus one byte and the reply's CRLF:
// a 4 MiB call then neither allocates nor zeroes 4 MiB of replies, whose
// garbage made the collector run about ten times per 64 MiB fetch. A key
// holding a value longer than any object of its row (another writer's, of
// any length up to 512 MiB) fills the buffer and is refused by that length:
// readMax+1 bytes of it crossed the network, never the rest.
func (d *Driver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return d.build.spec.Admission.Get(rows, hint, live) })
	if err != nil {
		return nil, err
	}
	defer call.End()
	results := make([]driver.Result, len(rows))
	if d.gate != nil {
		d.gate.enter()
		defer d.gate.leave()
	}
	pipe := d.g.Pipeline()
	gets := make([]*goredis.ZeroCopyStringCmd, len(rows))
	into := make([][]byte, len(rows))
	defer func() {
		for _, b := range into {
			d.bufs.put(b)
		}
	}()
	for i, r := range rows {
		n := d.readMax(r) + 1 + 2
		into[i] = d.bufs.get(n)[:n]
		gets[i] = goredis.NewZeroCopyStringCmd(ctx, into[i], "getrange", r.Key, 0, d.readMax(r))
		_ = pipe.Process(ctx, gets[i])
	}
	_, _ = pipe.Exec(ctx)
	for i, cmd := range gets {
		results[i] = d.got(rows[i], cmd.Bytes(), cmd.Err())
	}
	return driverkit.Finished(results), nil
}

// got is the result of a read of row's key (GETRANGE key 0 readMax) that
// answered v or err: an empty v is an absent key, a v longer than readMax
// a value no object of the row can be, refused by its length; the trailer
// is checked before any byte of v reaches the row's spans.
func (d *Driver) got(row driver.Row, v []byte, err error) driver.Result {
	if err == nil && len(v) == 0 {
		err = goredis.Nil
	}
	if err != nil {
		code, cerr := classify(err)
		return d.build.spec.Calls.Get.Map(int64(code), row.Bytes()).WithCause(cerr)
	}
	if long := d.readMax(row); int64(len(v)) > long {
		// The size rule (payload length differs), with the length the
		// driver knows: more than long bytes.
		return d.build.spec.Calls.Get.Map(int64(len(v)), row.Bytes()).WithCause(
			fmt.Errorf("the key holds more than %d bytes, longer than any object of this row; the driver read no further", long))
	}
	// The object's trailer first, then the marker's exact form
	// (trailer.IsMarker): a payload may begin with a marker's bytes, or be
	// one, and is its row's all the same.
	payload, err := d.opt.Integrity.Check(v, row.Key)
	if err != nil {
		if trailer.IsMarker(v) {
			return d.build.spec.Calls.Get.Map(int64(redisgen.Pending), row.Bytes()).Result
		}
		return d.build.spec.Calls.Get.Map(int64(redisgen.Corrupt), row.Bytes()).WithCause(err)
	}
	m := d.build.spec.Calls.Get.Map(int64(len(payload)), row.Bytes())
	if m.Written == rules.WrittenYes {
		for _, s := range row.Spans {
			payload = payload[copy(s.Bytes(), payload):]
		}
	}
	return m.Result
}

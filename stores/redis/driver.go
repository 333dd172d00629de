// Package redis is kvblob's driver for Redis 7 and Valkey 8.1 (standalone
// or Cluster) over github.com/redis/go-redis/v9.
//
// A row is one Redis string: the row's spans concatenated, then the
// trailer of stores/trailer (keyed when Options.Integrity is set). A
// connection may authenticate as an ACL user and run over TLS (Options).
// A put claims each key with a pending marker
// (SET NX PX), then replaces its own marker with the object: on a
// standalone server with WATCH, GET and MULTI/SET/EXEC, pipelined across
// keys; on a Cluster (or when a transaction aborts) with a compare-and-set
// script; on Valkey 8.1 with one SET IFEQ per key. A get checks the trailer
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
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kvblob/kvblob/stores/trailer"

	goredis "github.com/redis/go-redis/v9"

	gen "github.com/kvblob/kvblob/generated/redis"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/runtime/rules"
)

// markerPrefix starts every pending marker. An object always ends in a
// trailer, so a marker (which has none) is never read as an object.
const markerPrefix = "kvblob-pending:"

// casScript replaces KEYS[1] with ARGV[2] only if it still holds this
// writer's marker ARGV[1]: 1 when stored, 0 when the marker was gone.
const casScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('SET', KEYS[1], ARGV[2]) return 1 end return 0`

// delScript deletes KEYS[1] only if it holds this writer's marker ARGV[1].
const delScript = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

// Driver is a driver.Driver over one Redis deployment.
type Driver struct {
	c   goredis.UniversalClient
	opt Options
	ver string

	// build is the server build the driver talks to, and calls the rules
	// of its spec for each call the driver makes.
	build build
	calls calls

	life driverkit.Lifecycle

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
// name and version, from INFO server), refusing a server no spec holds
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
	var c goredis.UniversalClient
	if opt.Cluster {
		c = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: opt.Addrs, Username: opt.Username, Password: opt.Password,
			TLSConfig: tlsConfig, DialTimeout: opt.DialTimeout, DialerRetries: 1,
			ReadTimeout: opt.ReadTimeout, WriteTimeout: opt.WriteTimeout, MaxRetries: -1, MaxRedirects: 8})
	} else {
		// No retries: a retried compare-and-set whose first reply was lost
		// would answer LOST for an object it stored.
		c = goredis.NewClient(&goredis.Options{Addr: opt.Addrs[0], Username: opt.Username, Password: opt.Password,
			TLSConfig: tlsConfig, DialTimeout: opt.DialTimeout, DialerRetries: 1,
			ReadTimeout: opt.ReadTimeout, WriteTimeout: opt.WriteTimeout, MaxRetries: -1})
	}
	// One dial per attempt (DialerRetries: 1): go-redis's default of five
	// with 100 ms back-off cost 0.4 s per call to a server that is down.
	// The guard goes first: it routes the client's log lines to
	// Options.Logger and fails dials at once for DownFor after one failed.
	c.AddHook(newGuard(opt))
	for _, h := range opt.Hooks {
		c.AddHook(h)
	}
	infos, err := serverInfos(ctx, c)
	if err != nil {
		_ = c.Close()
		return nil, openError(opt, err)
	}
	b, calls, ver, err := pickBuildOf(infos)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return &Driver{c: c, opt: opt, ver: ver, build: b, calls: calls}, nil
}

// serverInfos asks each server the driver writes to for INFO server: the
// one server, or every master of a Cluster, by address.
func serverInfos(ctx context.Context, c goredis.UniversalClient) (map[string]string, error) {
	cc, ok := c.(*goredis.ClusterClient)
	if !ok {
		info, err := c.Info(ctx, "server").Result()
		return map[string]string{"": info}, err
	}
	var mu sync.Mutex
	infos := map[string]string{}
	err := cc.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
		info, err := n.Info(ctx, "server").Result()
		mu.Lock()
		defer mu.Unlock()
		infos[n.Options().Addr] = info
		return err
	})
	return infos, err
}

// String names the server and the options, Password redacted.
func (d *Driver) String() string {
	return "redis driver (server " + d.ver + ", " + d.opt.String() + ")"
}

// ServerVersion is the server and version INFO reported at Open
// ("redis-server 7.0.15", "valkey-server 8.1.1").
func (d *Driver) ServerVersion() string { return d.ver }

// Spec is the spec that holds for the server the driver talks to.
func (d *Driver) Spec() *rules.Spec { return d.build.spec }

// Client returns the go-redis client (for tests and diagnostics).
func (d *Driver) Client() goredis.UniversalClient { return d.c }

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

// Close closes the client once a drain returned true and every region is
// unregistered.
func (d *Driver) Close() error { return d.life.Close(d.c.Close) }

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
	marker := newMarker()

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
		ok, err := cmd.Result()
		code, cerr := classify(err)
		if err == nil && !ok {
			code = gen.Nil
		}
		m := d.calls.claim.Map(int64(code), 0)
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
				putBuf(objs[i])
			}
		}()
		codes := make([]gen.Code, len(rows))
		errs := make([]error, len(rows))
		d.build.store(d, ctx, rows, store, objs, marker, codes, errs)
		var release []int
		for _, i := range store {
			m := d.calls.store.Map(int64(codes[i]), 0)
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

	// 3. A present key is READY if it holds this row's whole object,
	// NOT_READY if it holds another writer's marker (or vanished), and
	// what the spec's if_other says if it holds anything else.
	if len(exists) > 0 {
		pipe = d.c.Pipeline()
		gets := make([]*goredis.StringCmd, len(exists))
		for k, i := range exists {
			gets[k] = pipe.Get(ctx, rows[i].Key)
		}
		_, _ = pipe.Exec(ctx)
		for k, i := range exists {
			m := asked[i]
			v, err := gets[k].Bytes()
			switch {
			case err != nil && err != goredis.Nil:
				results[i] = m.WithCause(err)
			case err != nil || bytes.HasPrefix(v, []byte(markerPrefix)):
				results[i] = driver.Result{Status: m.IfAbsent}
			case d.holdsRow(v, rows[i]):
				results[i] = driver.Result{Status: m.IfExists}
			default:
				results[i] = m.Other(fmt.Sprintf("key %q holds %d bytes that are not this row's %d-byte object", rows[i].Key, len(v), rows[i].Bytes()))
			}
		}
	}
	return driverkit.Finished(results), nil
}

// storeObjects is a Redis 7 store: it replaces this writer's marker with
// objs[i] for each row i of idx, setting codes[i] (OK, LOST or how the
// reply classified) and errs[i].
//
// On a standalone server it is one WATCH/GET pass and one MULTI/SET/EXEC
// pass over every key, pipelined: a key whose GET no longer answers the
// marker is LOST, the others are SET in one transaction that runs only if
// no watched key changed since. Rows the transaction could not settle (it
// aborted because a watched key changed, or another row's SET was refused)
// fall back to the compare-and-set script, one key at a time in a
// pipeline, which decides each alone. The script copies the object into a
// Lua string and again into the key; a plain SET does not, which is the
// point (issue 18).
//
// On a Cluster, WATCH and MULTI need every key of a transaction in one
// slot, and a request's keys spread over all of them: a transaction per
// key would cost three round trips each where the script costs one, so a
// Cluster keeps the script.
func (d *Driver) storeObjects(ctx context.Context, rows []driver.Row, idx []int, objs [][]byte, marker string, codes []gen.Code, errs []error) {
	if c, ok := d.c.(*goredis.Client); ok && d.mayTransact(ctx, c) {
		idx = d.storeWatched(ctx, c, rows, idx, objs, marker, codes, errs)
	}
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
			codes[i] = gen.Lost
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
	return code == gen.Noperm
}

// storeWatched is storeObjects' WATCH/MULTI/EXEC path. It returns the rows
// it left undecided.
func (d *Driver) storeWatched(ctx context.Context, c *goredis.Client, rows []driver.Row, idx []int, objs [][]byte, marker string, codes []gen.Code, errs []error) (undecided []int) {
	_ = c.Watch(ctx, func(tx *goredis.Tx) error {
		// One WATCH per key, so a refusal (NOPERM) or an injected error is
		// the row's own.
		watches := make([]*goredis.StatusCmd, len(idx))
		gets := make([]*goredis.StringCmd, len(idx))
		_, _ = tx.Pipelined(ctx, func(p goredis.Pipeliner) error {
			for k, i := range idx {
				watches[k] = goredis.NewStatusCmd(ctx, "watch", rows[i].Key)
				_ = p.Process(ctx, watches[k])
				gets[k] = p.Get(ctx, rows[i].Key)
			}
			return nil
		})
		var ours []int
		for k, i := range idx {
			err := watches[k].Err()
			if err == nil {
				err = gets[k].Err()
			}
			switch v := gets[k].Val(); {
			case isNoperm(watches[k].Err()) && strings.Contains(watches[k].Err().Error(), "'watch' command"):
				d.tx.Store(txRefused) // the ACL changed under us: the script decides
				undecided = append(undecided, i)
			case err == goredis.Nil || err == nil && v != marker:
				codes[i], errs[i] = gen.Lost, nil
			case err != nil:
				codes[i], errs[i] = classify(err)
			default:
				ours = append(ours, i)
			}
		}
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
		return nil
	})
	return undecided
}

// object is row's payload and trailer in a buffer of bufs. Without a row
// key the CRC is taken as the spans are copied, in one pass over memory
// (trailer.CopyCRC); with one, the tag is a second pass anyway.
func (d *Driver) object(row driver.Row) []byte {
	n := row.Bytes()
	if d.opt.Integrity.On() {
		payload := getBuf(n + trailer.TagSize + trailer.Size)
		for _, s := range row.Spans {
			payload = append(payload, s.Bytes()...)
		}
		return d.opt.Integrity.Append(payload, row.Key, payload)
	}
	obj := getBuf(n + trailer.Size)[:n+trailer.Size]
	var crc uint32
	off := 0
	for _, s := range row.Spans {
		crc = trailer.CopyCRC(crc, obj[off:], s.Bytes())
		off += len(s.Bytes())
	}
	trailer.Put(obj[off:], trailer.NameDigest(row.Key), off, crc)
	return obj
}

// bufs holds object buffers between puts, so a put of large rows neither
// allocates nor zeroes (nor faults in) a fresh buffer per row.
var bufs sync.Pool

// getBuf returns an empty buffer of capacity at least n.
func getBuf(n int64) []byte {
	if p, ok := bufs.Get().(*[]byte); ok && int64(cap(*p)) >= n {
		return (*p)[:0]
	}
	return make([]byte, 0, n)
}

func putBuf(b []byte) {
	if cap(b) <= 64<<20 {
		bufs.Put(&b)
	}
}

// release deletes this writer's markers from rows whose store failed, so a
// later put need not wait out the TTL; a marker that cannot be deleted
// expires.
func (d *Driver) release(ctx context.Context, rows []driver.Row, idx []int, marker string) {
	if len(idx) == 0 {
		return
	}
	pipe := d.c.Pipeline()
	for _, i := range idx {
		pipe.Eval(ctx, delScript, []string{rows[i].Key}, marker)
	}
	_, _ = pipe.Exec(ctx)
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

func newMarker() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return markerPrefix + hex.EncodeToString(b[:])
}

// Get reads each row's object, checks its trailer and only then copies its
// payload into the row's spans.
func (d *Driver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	call, err := d.life.Begin(rows, func(live func(*driver.Region) bool) error { return d.build.spec.Admission.Get(rows, hint, live) })
	if err != nil {
		return nil, err
	}
	defer call.End()
	results := make([]driver.Result, len(rows))
	pipe := d.c.Pipeline()
	gets := make([]*goredis.StringCmd, len(rows))
	for i, r := range rows {
		gets[i] = pipe.Get(ctx, r.Key)
	}
	_, _ = pipe.Exec(ctx)
	for i, cmd := range gets {
		v, err := cmd.Bytes()
		if err != nil {
			code, cerr := classify(err)
			results[i] = d.calls.get.Map(int64(code), rows[i].Bytes()).WithCause(cerr)
			continue
		}
		if bytes.HasPrefix(v, []byte(markerPrefix)) {
			results[i] = d.calls.get.Map(int64(gen.Pending), rows[i].Bytes()).Result
			continue
		}
		payload, err := d.opt.Integrity.Check(v, rows[i].Key)
		if err != nil {
			results[i] = d.calls.get.Map(int64(gen.Corrupt), rows[i].Bytes()).WithCause(err)
			continue
		}
		m := d.calls.get.Map(int64(len(payload)), rows[i].Bytes())
		if m.Written == rules.WrittenYes {
			for _, s := range rows[i].Spans {
				payload = payload[copy(s.Bytes(), payload):]
			}
		}
		results[i] = m.Result
	}
	return driverkit.Finished(results), nil
}

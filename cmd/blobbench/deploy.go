package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/redis"
	"github.com/kvblob/kvblob/stores/redis/rediskit"
	"github.com/kvblob/kvblob/stores/trailer"
)

// written is every key a run may have written into a store it does not
// own, so that it deletes them all at the end, on failure, or on Ctrl-C.
// A key is recorded before the publish that writes it.
type written struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

func (w *written) add(keys []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.keys == nil {
		w.keys = map[string]struct{}{}
	}
	for _, k := range keys {
		w.keys[k] = struct{}{}
	}
}

func (w *written) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	ks := make([]string, 0, len(w.keys))
	for k := range w.keys {
		ks = append(ks, k)
	}
	return ks
}

// active are the rigs whose backends may have calls in flight.
var active rigs

type rigs struct {
	mu sync.Mutex
	rs map[*rig]struct{}
}

func (a *rigs) add(r *rig) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.rs == nil {
		a.rs = map[*rig]struct{}{}
	}
	a.rs[r] = struct{}{}
}

func (a *rigs) remove(r *rig) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.rs, r)
}

// shutdown stops every active backend and waits (at most timeout) for
// the calls in flight, so that no store call lands after the keys it
// wrote are deleted. The measurement, if still running, fails.
func (a *rigs) shutdown(timeout time.Duration) {
	a.mu.Lock()
	var bs []*rig
	for r := range a.rs {
		bs = append(bs, r)
	}
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, r := range bs {
		_ = r.be.Shutdown(ctx)
	}
}

// cleanups run at the end of a run, or when it is interrupted; each once.
var cleanups struct {
	mu  sync.Mutex
	fns []func()
}

// atCleanup registers fn and returns it, to be run once: at the end of the
// run, when it is interrupted, or when the caller calls it first.
func atCleanup(fn func()) func() {
	var once sync.Once
	f := func() { once.Do(fn) }
	cleanups.mu.Lock()
	defer cleanups.mu.Unlock()
	cleanups.fns = append(cleanups.fns, f)
	return f
}

// cleanupAll runs every registered cleanup, newest first.
func cleanupAll() {
	cleanups.mu.Lock()
	fns := cleanups.fns
	cleanups.fns = nil
	cleanups.mu.Unlock()
	for i := len(fns) - 1; i >= 0; i-- {
		fns[i]()
	}
}

// redisTarget is a Redis deployment to bench: a server blobbench started
// on loopback, or one the user runs.
type redisTarget struct {
	opt    redis.Options
	name   string // the store's name in the tables (when empty: its build's, asked of the server)
	prefix string // key prefix; the bench writes only under prefix + "/"
	force  bool   // bench even if keys exist under the prefix
	stop   func() // stops a server blobbench started
}

// redisSharedConns is -redis-shared-conns: the Redis servers the run starts
// are benched with redis.Options.FetchesShareConns.
var redisSharedConns bool

// redisYield is -redis-yield: with redis.Options.PublishesYield.
var redisYield bool

// redisStore starts a server of build b on loopback for the run.
func redisStore(b *rediskit.Build, prefix string, log io.Writer) (store, error) {
	if ok, why := b.Available(); !ok {
		return store{}, fmt.Errorf("%s", why)
	}
	srv, err := rediskit.StartWith(rediskit.Config{Build: b})
	if err != nil {
		return store{}, err
	}
	s, err := openRedis(redisTarget{opt: redis.Options{Addrs: []string{srv.Addr}, FetchesShareConns: redisSharedConns, PublishesYield: redisYield}, name: b.Store, prefix: prefix, stop: srv.Stop}, log)
	if err != nil {
		srv.Stop()
		return s, err
	}
	// A second server of the same build, started when first asked and
	// stopped with the run's cleanups (-latency-publish-elsewhere).
	var second *store
	s.elsewhere = func() (store, error) {
		if second == nil {
			s2, err := redisStore(b, prefix, log)
			if err != nil {
				return store{}, err
			}
			second = &s2
		}
		return *second, nil
	}
	return s, nil
}

// openRedis checks that the deployment holds nothing under the prefix
// (unless forced) and returns the store. Its stop deletes every key the
// run wrote, and only those.
func openRedis(t redisTarget, log io.Writer) (store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var c goredis.UniversalClient
	if t.opt.Cluster {
		c = goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: t.opt.Addrs, Username: t.opt.Username, Password: t.opt.Password})
	} else {
		c = goredis.NewClient(&goredis.Options{Addr: t.opt.Addrs[0], Username: t.opt.Username, Password: t.opt.Password})
	}
	fail := func(err error) (store, error) {
		_ = c.Close()
		return store{}, err
	}
	found, err := keysUnder(ctx, c, t.prefix+"/")
	if err != nil {
		return fail(fmt.Errorf("redis at %v: looking for keys under %q: %w", t.opt.Addrs, t.prefix+"/", err))
	}
	if len(found) > 0 && !t.force {
		return fail(fmt.Errorf("redis at %v holds keys under %q (e.g. %q): blobbench writes there and would bench beside them; "+
			"pick an empty -prefix, or pass -force (it then deletes only the keys it wrote)", t.opt.Addrs, t.prefix+"/", found[0]))
	}
	w := &written{}
	del := func(keys []string) error {
		pipe := c.Pipeline() // one DEL per key: a Cluster spreads them over slots
		for _, k := range keys {
			pipe.Del(context.Background(), k)
		}
		_, err := pipe.Exec(context.Background())
		return err
	}
	name := t.name
	if name == "" {
		// A server the user runs is named by the build it is, as the
		// gate names it (a Valkey is not "redis").
		d, err := redis.Open(ctx, t.opt)
		if err != nil {
			return fail(fmt.Errorf("redis at %v: %w", t.opt.Addrs, err))
		}
		name = rediskit.BuildOf(d.Spec()).Store
		if d.Drain(ctx) {
			_ = d.Close()
		}
	}
	// The baseline over the rig's driver's clients, kept while the rig
	// lives (its reply buffers with it).
	var base *pipeline
	var baseOf driver.Driver
	s := store{name: name, prefix: t.prefix, written: w, rounds: shortStepRounds,
		make: func() (driver.Driver, error) { return redis.Open(context.Background(), t.opt) },
		keyed: func(in *trailer.Integrity) (driver.Driver, error) {
			o := t.opt
			o.Integrity = in
			return redis.Open(context.Background(), o)
		},
		forget: func(_ driver.Driver, keys []string) {
			if len(keys) > 0 {
				_ = del(keys)
			}
		},
		plainName: "pipeline",
		plain: func(d driver.Driver, w plainWork) (plainTimes, error) {
			if baseOf != d {
				p, err := pipelineOf(d)
				if err != nil {
					return plainTimes{}, err
				}
				base, baseOf = p, d
			}
			return base.run(w.keys, w.objs, w.perCall, w.putConc, w.getConc)
		}}
	atCleanup(func() {
		keys := w.all()
		fmt.Fprintf(log, "blobbench: %s: deleting the %d keys the run wrote under %q\n", name, len(keys), t.prefix+"/")
		for len(keys) > 0 {
			n := min(len(keys), 1000)
			if err := del(keys[:n]); err != nil {
				fmt.Fprintf(log, "blobbench: %s: deleting keys: %v (pending markers expire on their own)\n", name, err)
			}
			keys = keys[n:]
		}
		_ = c.Close()
		if t.stop != nil {
			t.stop()
		}
	})
	s.stop = cleanupAll
	return s, nil
}

// keysUnder returns up to 10 keys that start with prefix, on every master.
func keysUnder(ctx context.Context, c goredis.UniversalClient, prefix string) ([]string, error) {
	var mu sync.Mutex
	var found []string
	scan := func(ctx context.Context, c goredis.Cmdable) error {
		var cursor uint64
		for {
			keys, next, err := c.Scan(ctx, cursor, prefix+"*", 1000).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			found = append(found, keys...)
			n := len(found)
			mu.Unlock()
			if cursor = next; cursor == 0 || n >= 10 {
				return nil
			}
		}
	}
	if cc, ok := c.(*goredis.ClusterClient); ok {
		err := cc.ForEachMaster(ctx, func(ctx context.Context, m *goredis.Client) error { return scan(ctx, m) })
		return found, err
	}
	return found, scan(ctx, c)
}

// pipeline is the baseline of the redis ratios (publish_vs_pipeline,
// fetch_vs_pipeline): go-redis doing the driver's work with nothing of
// kvblob in the way, like for like, so that a ratio near 1 says the
// driver is as fast as its client and a ratio above 1 can only mean the
// driver does less than the client (it never does):
//
//   - the same connections: the driver's own clients, SETs on the one its
//     puts go out on and GETs on the one its gets go out on (a client of
//     its own by default), so the pools, dialer, timeouts and buffer
//     sizes are the driver's, and the connections are as warm as the
//     driver's calls of the same rep left them;
//   - the same batching and concurrency: perCall keys per pipeline (the
//     rows of one driver call: the backend's RowsPerBatch and
//     BytesPerBatch), sent by putConc and getConc goroutines (the calls
//     the driver has in flight publishing and fetching, reached);
//   - the same buffers: each SET sends an object built before the clock
//     starts in a buffer kept from rep to rep (as the driver's pool keeps
//     its object buffers), and each GET is read straight from the
//     connection into a reply buffer allocated and faulted in once and
//     kept from rep to rep, as the driver reads each reply into a buffer
//     of its pool. (The baseline before read each GET into a fresh
//     string, so it allocated, zeroed and collected a view's bytes per
//     rep, and ran on a client of its own with cold connections: the
//     driver beat it 1.3-3.8 times.)
//
// It does less than the driver, on purpose: one round trip of plain SETs
// where the driver claims each key first, no trailer to build or check
// (the objects already hold one), no copy into the caller's slots. What
// the ratio shows is the price of those steps.
type pipeline struct {
	put, get goredis.UniversalClient
	// replies are the GETs' reply buffers, getConc x perCall of them,
	// each room for an object and its CRLF; kept across reps.
	replies [][]byte
}

// pipelineOf is the baseline over d's clients (a *redis.Driver).
func pipelineOf(d driver.Driver) (*pipeline, error) {
	var r *redis.Driver
	if !driver.As(d, &r) {
		return nil, fmt.Errorf("the pipeline baseline needs the redis driver, got %T", d)
	}
	return &pipeline{put: r.Client(), get: r.FetchClient()}, nil
}

// buffers makes sure there are conc x perCall reply buffers of at least n
// bytes (goroutine g's k-th is replies[g*perCall+k]); each is allocated
// and faulted in before any clock starts, and kept.
func (p *pipeline) buffers(conc, perCall, n int) {
	for len(p.replies) < conc*perCall {
		p.replies = append(p.replies, nil)
	}
	for i := range p.replies {
		if cap(p.replies[i]) < n {
			p.replies[i] = make([]byte, n)
			clear(p.replies[i]) // faulted in now, not on the clock
		}
	}
}

// run SETs objs[i] under keys[i], then GETs each, perCall keys per
// pipeline, from putConc and getConc goroutines, and returns each
// phase's time. Every GET must answer the object SET stored.
func (p *pipeline) run(keys []string, objs [][]byte, perCall, putConc, getConc int) (plainTimes, error) {
	ctx := context.Background()
	chunks := (len(keys) + perCall - 1) / perCall
	chunk := func(c int) (lo, hi int) { return c * perCall, min(len(keys), (c+1)*perCall) }
	longest := 0
	for _, o := range objs {
		longest = max(longest, len(o))
	}
	p.buffers(getConc, perCall, longest+2) // the reply's CRLF is read into it too
	put, err := eachKey(chunks, putConc, func(_, c int) error {
		lo, hi := chunk(c)
		pipe := p.put.Pipeline()
		for i := lo; i < hi; i++ {
			pipe.Set(ctx, keys[i], objs[i], 0)
		}
		_, err := pipe.Exec(ctx)
		return err
	})
	if err != nil {
		return plainTimes{}, err
	}
	cmds := make([][]*goredis.ZeroCopyStringCmd, getConc) // each goroutine's, made before the clock
	for g := range cmds {
		cmds[g] = make([]*goredis.ZeroCopyStringCmd, perCall)
	}
	get, err := eachKey(chunks, getConc, func(g, c int) error {
		lo, hi := chunk(c)
		pipe := p.get.Pipeline()
		for i := lo; i < hi; i++ {
			cmds[g][i-lo] = goredis.NewZeroCopyStringCmd(ctx, p.replies[g*perCall+i-lo], "get", keys[i])
			_ = pipe.Process(ctx, cmds[g][i-lo])
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return err
		}
		for i := lo; i < hi; i++ {
			if !bytes.Equal(cmds[g][i-lo].Bytes(), objs[i]) {
				return fmt.Errorf("GET %s answered %d bytes that are not the %d SET stored", keys[i], len(cmds[g][i-lo].Bytes()), len(objs[i]))
			}
		}
		return nil
	})
	return plainTimes{put: put, get: get}, err
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// plainObject is the bytes a store's own client sends for a row: its
// payload and trailer, as the driver stores it, built in dst's memory
// (which a caller keeps from rep to rep, as a driver keeps its object
// buffers) when it is large enough.
func plainObject(dst []byte, key string, payload []byte) []byte {
	return trailer.Append(append(dst[:0], payload...), key, payload)
}

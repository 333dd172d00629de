package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/kvblob/kvblob/internal/rediskit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/redis"
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
	}
	return s, err
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
	s := store{name: name, prefix: t.prefix, written: w,
		make: func() (driver.Driver, error) { return redis.Open(context.Background(), t.opt) },
		forget: func(_ driver.Driver, keys []string) {
			if len(keys) > 0 {
				_ = del(keys)
			}
		},
		plainName: "pipeline",
		plain: func(_ driver.Driver, w plainWork) (plainTimes, error) {
			return plainPipeline(c, w.keys, w.objs, w.perCall, w.putConc, w.getConc)
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

// plainPipeline is the baseline of the redis ratios: a plain go-redis
// pipelined SET of objs[i] under keys[i], then a pipelined GET of each, cut
// into pipelines of perCall keys sent by workers goroutines, as the
// backend cuts a view into driver calls.
func plainPipeline(c goredis.UniversalClient, keys []string, objs [][]byte, perCall, putConc, getConc int) (plainTimes, error) {
	ctx := context.Background()
	run := func(workers int, op func(p goredis.Pipeliner, i int)) (time.Duration, error) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		next := 0
		t0 := time.Now()
		for g := 0; g < workers; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					mu.Lock()
					lo := next
					next = min(len(keys), next+perCall)
					hi := next
					mu.Unlock()
					if lo == hi {
						return
					}
					pipe := c.Pipeline()
					for i := lo; i < hi; i++ {
						op(pipe, i)
					}
					if _, err := pipe.Exec(ctx); err != nil {
						mu.Lock()
						first = cmpErr(first, err)
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		return time.Since(t0), first
	}
	put, err := run(putConc, func(p goredis.Pipeliner, i int) { p.Set(ctx, keys[i], objs[i], 0) })
	if err != nil {
		return plainTimes{}, err
	}
	get, err := run(getConc, func(p goredis.Pipeliner, i int) { p.Get(ctx, keys[i]) })
	return plainTimes{put: put, get: get}, err
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

// plainObject is the bytes a plain SET sends for a row: its payload and
// trailer, as the driver stores it.
func plainObject(key string, payload []byte) []byte { return trailer.Encode(key, payload) }

package rediskit

import (
	"context"
	"net"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// Faults is a go-redis hook that stages what a real server cannot be made
// to answer on cue: a command held inside the client, an error or reply
// injected for one command on one key, and an action run just before a
// command goes out (deleting a marker, killing the server).
type Faults struct {
	mu      sync.Mutex
	errs    map[cmdKey][]error
	replies map[cmdKey][]string
	before  map[cmdKey][]func()
	holds   map[cmdKey][]*Held
}

type cmdKey struct{ cmd, key string }

// Held is a command held inside the client.
type Held struct {
	Entered chan struct{}
	release chan struct{}
	once    sync.Once
}

// Release lets the held command go on.
func (h *Held) Release() { h.once.Do(func() { close(h.release) }) }

// NewFaults returns an empty hook.
func NewFaults() *Faults {
	return &Faults{errs: map[cmdKey][]error{}, replies: map[cmdKey][]string{}, before: map[cmdKey][]func(){}, holds: map[cmdKey][]*Held{}}
}

// Error makes the next cmd (get, set, set ifeq, eval) on key fail with err.
func (f *Faults) Error(cmd, key string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := cmdKey{cmd, key}
	f.errs[k] = append(f.errs[k], err)
}

// Reply makes the next cmd on key whose reply is a string (GET) read val,
// whatever the server answered: what the server held an instant before or
// after, when no hook can run between two commands of one pipeline.
func (f *Faults) Reply(cmd, key, val string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := cmdKey{cmd, key}
	f.replies[k] = append(f.replies[k], val)
}

// Before runs fn just before the next cmd on key is sent. Before("multi",
// key, fn) runs fn just before the next transaction (MULTI ... EXEC) that
// holds a command on key is sent; Before("multi", "", fn) before the next
// MULTI whatever it holds.
func (f *Faults) Before(cmd, key string, fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := cmdKey{cmd, key}
	f.before[k] = append(f.before[k], fn)
}

// BeforeAny runs fn just before the next command on key is sent, whatever
// the command (so a test need not know how the driver spells a step).
func (f *Faults) BeforeAny(key string, fn func()) { f.Before("", key, fn) }

// Hold holds the next cmd on key inside the client until Release.
func (f *Faults) Hold(cmd, key string) *Held {
	f.mu.Lock()
	defer f.mu.Unlock()
	h := &Held{Entered: make(chan struct{}), release: make(chan struct{})}
	k := cmdKey{cmd, key}
	f.holds[k] = append(f.holds[k], h)
	return h
}

// RedisError is an error reply, as the server would send it.
type RedisError string

func (e RedisError) Error() string { return string(e) }

// RedisError marks it as a reply error for go-redis.
func (RedisError) RedisError() {}

// ConnError is a dropped connection.
var ConnError error = &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}

// keyOf names a command as Error, Before and Hold take it: its name in
// lower case, except a SET with IFEQ (Valkey 8.1's store), which is "set
// ifeq" so that it is told from the claim's SET NX on the same key; and the
// key it acts on.
func keyOf(c goredis.Cmder) (string, string) {
	args := c.Args()
	name := strings.ToLower(c.Name())
	switch {
	case name == "eval" && len(args) > 3:
		return name, argString(args[3])
	case name == "set" && len(args) > 4 && strings.EqualFold(argString(args[3]), "ifeq"):
		return "set ifeq", argString(args[1])
	case len(args) > 1:
		return name, argString(args[1])
	}
	return name, ""
}

func argString(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

func (f *Faults) take(cmds []goredis.Cmder) (befores []func(), holds []*Held) {
	f.mu.Lock()
	defer f.mu.Unlock()
	inMulti := false
	for _, c := range cmds {
		name, key := keyOf(c)
		k := cmdKey{name, key}
		if fs := f.before[k]; len(fs) > 0 {
			befores, f.before[k] = append(befores, fs[0]), fs[1:]
		}
		switch name {
		case "multi":
			inMulti = true
		case "exec", "discard":
			inMulti = false
		}
		if tx := (cmdKey{"multi", key}); inMulti && key != "" && len(f.before[tx]) > 0 {
			befores, f.before[tx] = append(befores, f.before[tx][0]), f.before[tx][1:]
		}
		if any := (cmdKey{"", key}); key != "" && len(f.before[any]) > 0 {
			befores, f.before[any] = append(befores, f.before[any][0]), f.before[any][1:]
		}
		if hs := f.holds[k]; len(hs) > 0 {
			holds, f.holds[k] = append(holds, hs[0]), hs[1:]
		}
	}
	return befores, holds
}

func (f *Faults) after(cmds []goredis.Cmder) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cmds {
		name, key := keyOf(c)
		k := cmdKey{name, key}
		if es := f.errs[k]; len(es) > 0 {
			c.SetErr(es[0])
			f.errs[k] = es[1:]
		}
		if rs := f.replies[k]; len(rs) > 0 {
			if sc, ok := c.(*goredis.StringCmd); ok {
				sc.SetVal(rs[0])
				sc.SetErr(nil)
				f.replies[k] = rs[1:]
			}
		}
	}
}

func (f *Faults) run(ctx context.Context, cmds []goredis.Cmder, next func() error) error {
	befores, holds := f.take(cmds)
	for _, h := range holds {
		close(h.Entered)
		<-h.release
	}
	for _, fn := range befores {
		fn()
	}
	err := next()
	f.after(cmds)
	return err
}

func (f *Faults) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (f *Faults) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		return f.run(ctx, []goredis.Cmder{cmd}, func() error { return next(ctx, cmd) })
	}
}

func (f *Faults) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		return f.run(ctx, cmds, func() error { return next(ctx, cmds) })
	}
}

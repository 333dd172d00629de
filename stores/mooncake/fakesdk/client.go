package fakesdk

// The client: its registered buffers, how a request reaches the master,
// and the metadata calls.

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/stores/mooncake"
)

// Client is one SDK client of a master: a mooncake.SDK.
type Client struct {
	m       *Master
	id      int
	version string
	local   map[string]span // its put sessions; under m.mu
	sealed  map[string]bool // local sessions an end was sent for: no more writes; under m.mu
	epoch   int             // the master's epoch of the client's connection; under m.mu
	mu      sync.Mutex
	buffers map[uintptr]int64 // registered base -> length
	closed  atomic.Bool       // torn down: no transfer of its lands any more
}

var _ mooncake.SDK = (*Client)(nil)

// Version is the build the fake reports by default: the fake models
// Mooncake's main at 3b5a594, the build spec/mooncake-0.3.13.yaml was
// verified on, and reports it as that build does.
const Version = "0.3.12.post1 (git: 3b5a59413)"

// NewClient returns a client of m reporting version (use Version).
func NewClient(m *Master, version string) *Client {
	m.mu.Lock()
	m.nextID++
	id := m.nextID
	m.mu.Unlock()
	return &Client{m: m, id: id, version: version, buffers: map[uintptr]int64{}, local: map[string]span{},
		sealed: map[string]bool{}, epoch: m.epoch}
}

func (c *Client) Version() string { return c.version }

// Master returns the client's master.
func (c *Client) Master() *Master { return c.m }

// HoldsSession reports whether the client holds a local put session for key.
func (c *Client) HoldsSession(key string) bool {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	_, ok := c.local[key]
	return ok
}

// RegisterBuffer refuses a buffer that overlaps one already registered,
// the same one included. A fault staged for CallRegister under AnyBuffer
// answers its code without effect, raises without effect, or registers and
// then raises.
func (c *Client) RegisterBuffer(b mooncake.Buffer) (int64, error) {
	f, staged := c.m.bufferFault(CallRegister)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case staged && f.raise:
		return 0, errBufferRaised(CallRegister)
	case staged && !f.raiseAfter:
		return int64(f.code), nil
	}
	if b.Addr == 0 || b.Len <= 0 {
		return codeInvalidParams, nil
	}
	for base, n := range c.buffers {
		if b.Addr < base+uintptr(n) && base < b.Addr+uintptr(b.Len) {
			return codeInvalidParams, nil
		}
	}
	c.buffers[b.Addr] = b.Len
	if staged {
		return 0, errBufferRaised(CallRegister)
	}
	return codeOK, nil
}

// UnregisterBuffer refuses a buffer that is not registered. A fault staged
// for CallUnregister under AnyBuffer answers its code without effect (the
// buffer stays registered), raises without effect, or unregisters and then
// raises.
func (c *Client) UnregisterBuffer(b mooncake.Buffer) (int64, error) {
	f, staged := c.m.bufferFault(CallUnregister)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case staged && f.raise:
		return 0, errBufferRaised(CallUnregister)
	case staged && !f.raiseAfter:
		return int64(f.code), nil
	}
	if _, ok := c.buffers[b.Addr]; !ok {
		return codeInvalidParams, nil
	}
	delete(c.buffers, b.Addr)
	if staged {
		return 0, errBufferRaised(CallUnregister)
	}
	return codeOK, nil
}

// Closed reports whether the client was torn down (Close): its
// registrations went with it, whatever Registered lists.
func (c *Client) Closed() bool { return c.closed.Load() }

// Registered returns the buffers the client holds registered, by address.
func (c *Client) Registered() []mooncake.Buffer {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]mooncake.Buffer, 0, len(c.buffers))
	for base, n := range c.buffers {
		out = append(out, mooncake.Buffer{Addr: base, Len: n})
	}
	slices.SortFunc(out, func(a, b mooncake.Buffer) int { return cmp.Compare(a.Addr, b.Addr) })
	return out
}

func errBufferRaised(call string) error {
	return fmt.Errorf("fakesdk: %s raised (staged under AnyBuffer)", call)
}

// bufferFault pops the fault staged for a buffer call.
func (m *Master) bufferFault(call string) (fault, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[call]++
	fk := faultKey{call, AnyBuffer}
	fs := m.faults[fk]
	if len(fs) == 0 {
		return fault{}, false
	}
	m.faults[fk] = fs[1:]
	return fs[0], true
}

var errClosed = errors.New("fakesdk: client closed")

// rpc is how a request reaches the master.
type rpc uint8

const (
	rpcMetadata rpc = iota + 1 // fails at once while the master is down (m-master-killed)
	rpcLookup                  // a get's replica lookup: fails after the connect retries (m-master-killed)
)

// reachLocked sends a request to the master and reports whether it
// answers: it does not when it is down (every key's answer is then fail,
// RPC_FAIL) or stays frozen past the RPC timeout (RPC_TIMEOUT; the caller
// queues the request's effect for the thaw, its answer lost). m.mu is held.
func (m *Master) reachLocked(kind rpc) (fail int64, reached bool) {
	if m.down {
		if kind == rpcLookup {
			m.takeTimeLocked(m.knobs.Retries)
		}
		return codeRPCFail, false
	}
	if m.frozen {
		if !m.waitLocked(m.now.Add(m.knobs.RPCTimeout), func() bool { return !m.frozen || m.down }) {
			return codeRPCTimeout, false
		}
		if m.down {
			return codeRPCFail, false
		}
	}
	return 0, true
}

// metadataCall runs a call that touches only metadata: it waits at any
// staged hold, raises if staged, answers each key with a staged code, the
// client's own answer (localLocked) or the master's (applyLocked), then
// lets the client see each answer the master gave (afterLocked). sizes are
// a start's, nil for the other calls.
func (c *Client) metadataCall(call string, keys []string, sizes []int64) ([]int64, error) {
	m := c.m
	m.enter(call, keys)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.raiseLocked(call, keys); err != nil {
		return nil, err
	}
	out := make([]int64, len(keys))
	sc := m.scratchLocked()
	defer m.spareLocked(sc)
	ask := sc.ask[:0]
	for i, k := range keys {
		if f, ok := m.takeLocked(call, k); ok {
			out[i] = int64(f.code)
			continue
		}
		if code, ok := c.localLocked(call, k, sizeAt(sizes, i)); ok {
			out[i] = code
			continue
		}
		ask = append(ask, i)
	}
	sc.ask = ask
	if len(ask) == 0 {
		return m.finishLocked(call, keys, out)
	}
	placed := driverkit.Resize(sc.placed, len(ask)) // a start's span per asked key
	sc.placed = placed
	clear(placed)
	if !m.down && c.epoch != m.epoch {
		// The client's connection died with the master it was to: the
		// first call after a restart fails on it at once, and the next
		// one connects again (m-master-restarted).
		c.epoch = m.epoch
		for _, i := range ask {
			out[i] = codeRPCFail
		}
	} else if fail, reached := m.reachLocked(rpcMetadata); !reached {
		for _, i := range ask {
			out[i] = fail
		}
		if fail == codeRPCTimeout {
			m.atThaw = append(m.atThaw, c.applyAtThaw(call, keys, sizes, ask))
		}
	} else {
		for j, i := range ask {
			out[i], placed[j] = m.applyLocked(call, c.id, keys[i], sizeAt(sizes, i))
		}
	}
	for j, i := range ask {
		c.afterLocked(call, keys[i], out[i], placed[j])
	}
	return m.finishLocked(call, keys, out)
}

// sizeAt is sizes[i], or 0 for a call without sizes.
func sizeAt(sizes []int64, i int) int64 {
	if sizes == nil {
		return 0
	}
	return sizes[i]
}

// localLocked is the client's own answer to key k of a metadata call, given
// before the master is asked (ok), if it has one: it refuses a start of an
// empty key, of a size under 1 or of a key it holds a session for, however
// old (probe rows b3, b6), and an end or a revoke of a key it holds no
// session for (c1-c5, h5); an end seals the session (sealLocalSession).
func (c *Client) localLocked(call, k string, size int64) (int64, bool) {
	switch call {
	case CallStart:
		if _, held := c.local[k]; held || k == "" || size <= 0 {
			return codeInvalidParams, true
		}
	case CallEnd:
		return c.sealLocalSession(k)
	case CallRevoke:
		return c.noLocalSession(k)
	}
	return 0, false
}

// applyLocked is the master's side of a metadata call for key k, and the
// span a start placed.
func (m *Master) applyLocked(call string, owner int, k string, size int64) (int64, span) {
	switch call {
	case CallStart:
		return m.startLocked(owner, k, size)
	case CallEnd:
		return m.endLocked(owner, k), span{}
	case CallRevoke:
		return m.revokeLocked(owner, k), span{}
	case CallExist:
		if _, ok := m.objects[k]; ok {
			return 1, span{}
		}
		return 0, span{}
	}
	panic("fakesdk: no metadata call " + call)
}

// afterLocked is the client's side of the master's answer code to key k: a
// started session becomes the client's own; one ended or revoked is
// forgotten only on OK.
func (c *Client) afterLocked(call, k string, code int64, placed span) {
	switch call {
	case CallStart:
		if code == codeOK {
			c.local[k] = placed
			delete(c.sealed, k)
		}
	case CallEnd, CallRevoke:
		c.forgetOnOK(k, code)
	}
}

// applyAtThaw is the effect a request that timed out on a frozen master
// takes when it thaws: the master's side of the call for each asked key,
// in order, its answers lost. It copies what it needs of keys and sizes:
// the caller may reuse them once the call returned.
func (c *Client) applyAtThaw(call string, keys []string, sizes []int64, ask []int) func() {
	m, owner := c.m, c.id
	ks := make([]string, len(ask))
	var ss []int64
	if sizes != nil {
		ss = make([]int64, len(ask))
	}
	for j, i := range ask {
		ks[j] = keys[i]
		if sizes != nil {
			ss[j] = sizes[i]
		}
	}
	return func() {
		for j, k := range ks {
			m.applyLocked(call, owner, k, sizeAt(ss, j))
		}
	}
}

// BatchIsExist answers 1 for a key with a complete object, 0 otherwise.
func (c *Client) BatchIsExist(keys []string) ([]int64, error) {
	return c.metadataCall(CallExist, keys, nil)
}

// Close tears the client down. Its transfer engine goes with it: a get
// whose wait gave up (TRANSFER_FAIL) while its transfer went on never lands
// after Close returned (spec/mooncake-0.3.13.yaml says why; scenario p1-get-peer-frozen-teardown checks it on a real build). It takes the master's
// lock, so a landing under way finishes first.
func (c *Client) Close() error {
	c.m.mu.Lock()
	defer c.m.mu.Unlock()
	if c.closed.Swap(true) {
		return errClosed
	}
	return nil
}

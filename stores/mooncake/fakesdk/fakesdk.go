// Package fakesdk is a Mooncake store 0.3.13 in process: a master (objects,
// put sessions, a capacity) shared by clients, each with its registered
// buffers, moving real bytes. It follows 0.3.13's answers as
// spec/mooncake-0.3.13.yaml records them, and stages the scenarios the
// conformance suite and the generated cases need.
package fakesdk

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	gen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake"
)

// Master is the store every client of a pool shares.
type Master struct {
	mu       sync.Mutex
	objects  map[string][]byte
	sessions map[string]*session
	capacity int64 // 0: no bound
	used     int64
	now      time.Time
	discard  time.Duration // put_start_discard_timeout_sec
	nextID   int
	faults   map[faultKey][]fault
	holds    map[faultKey][]*Held
	calls    map[string]int
	late     sync.WaitGroup // transfers still writing after their call answered
}

type session struct {
	client  int
	started time.Time
	data    []byte
	written bool
}

type faultKey struct{ call, key string }

// fault is one staged answer: a code, a raise, a short write or a
// transfer that still writes after its failure is answered.
type fault struct {
	code     gen.Code
	raise    bool
	short    bool
	write    bool          // the bytes land although the code is answered (LEASE_EXPIRED, TRANSFER_FAIL)
	late     time.Duration // the transfer goes on writing this long after the call answered
	miscount bool          // the call answers one value fewer than its keys
}

// The calls, as the spec names them.
const (
	CallStart   = "batch_put_session_start"
	CallScatter = "batch_put_from_multi_buffer_ranges"
	CallEnd     = "batch_put_session_end"
	CallRevoke  = "batch_put_session_revoke"
	CallGet     = "batch_get_into"
	CallExist   = "batch_is_exist"
)

// DefaultDiscard is 0.3.13's default put_start_discard_timeout_sec.
const DefaultDiscard = 30 * time.Second

// NewMaster returns an empty pool holding at most capacity bytes (0: no
// bound).
func NewMaster(capacity int64) *Master {
	return &Master{objects: map[string][]byte{}, sessions: map[string]*session{}, capacity: capacity,
		now: time.Unix(1_700_000_000, 0), discard: DefaultDiscard, faults: map[faultKey][]fault{},
		holds: map[faultKey][]*Held{}, calls: map[string]int{}}
}

// Advance moves the master's clock, so a put can outlive the discard
// timeout without a test sleeping.
func (m *Master) Advance(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.now = m.now.Add(d)
}

// SetCapacity bounds the pool's bytes (0: no bound).
func (m *Master) SetCapacity(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = n
}

// Answer makes the next call of call for key answer code.
func (m *Master) Answer(call, key string, code gen.Code) { m.stage(call, key, fault{code: code}) }

// AnswerAfterWriting makes the next call of call for key write the bytes
// and then answer code (a get whose lease expired, a transfer that failed
// after landing).
func (m *Master) AnswerAfterWriting(call, key string, code gen.Code) {
	m.stage(call, key, fault{code: code, write: true})
}

// TransferStillRunning makes the next get of key answer TRANSFER_FAIL while
// its transfer goes on: after the call answered, the buffer is written once
// more, after delay. Wait waits for such transfers.
func (m *Master) TransferStillRunning(key string, delay time.Duration) {
	m.stage(CallGet, key, fault{code: gen.TransferFail, write: true, late: delay})
}

// Wait waits until every transfer still running has finished writing.
func (m *Master) Wait() { m.late.Wait() }

// Raise makes the next call of call that names key raise.
func (m *Master) Raise(call, key string) { m.stage(call, key, fault{raise: true}) }

// Miscount makes the next call of call that names key answer one value
// fewer than its keys, after doing its work.
func (m *Master) Miscount(call, key string) { m.stage(call, key, fault{miscount: true}) }

// miscountLocked pops a staged miscount for any key of the call. m.mu is held.
func (m *Master) miscountLocked(call string, keys []string) bool {
	for _, k := range keys {
		fk := faultKey{call, k}
		if fs := m.faults[fk]; len(fs) > 0 && fs[0].miscount {
			m.faults[fk] = fs[1:]
			return true
		}
	}
	return false
}

// answered applies a staged miscount to out.
func (m *Master) answered(call string, keys []string, out []int64) ([]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.miscountLocked(call, keys) && len(out) > 0 {
		out = out[:len(out)-1]
	}
	return out, nil
}

// Short makes the next scatter of key write only half the row.
func (m *Master) Short(key string) { m.stage(CallScatter, key, fault{short: true}) }

func (m *Master) stage(call, key string, f fault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := faultKey{call, key}
	m.faults[k] = append(m.faults[k], f)
}

// Held is a call held inside the SDK.
type Held struct {
	Entered chan struct{} // closed once the call is held
	release chan struct{}
	once    sync.Once
}

// Release lets the held call go on.
func (h *Held) Release() { h.once.Do(func() { close(h.release) }) }

// Hold makes the next call of call that names key wait inside the SDK.
func (m *Master) Hold(call, key string) *Held {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := &Held{Entered: make(chan struct{}), release: make(chan struct{})}
	k := faultKey{call, key}
	m.holds[k] = append(m.holds[k], h)
	return h
}

// BeginForeign starts a put session for key as another client would, and
// leaves it unfinished.
func (m *Master) BeginForeign(key string, size int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.nextID++
	m.sessions[key] = &session{client: -m.nextID, started: m.now, data: make([]byte, size)}
}

// DropForeign ends a foreign session of key without committing it.
func (m *Master) DropForeign(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.sessions[key]; ok && s.client < 0 {
		delete(m.sessions, key)
	}
}

// Delete drops key's complete object.
func (m *Master) Delete(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used -= int64(len(m.objects[key]))
	delete(m.objects, key)
}

// Plant stores obj as a complete object under key.
func (m *Master) Plant(key string, obj []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used += int64(len(obj)) - int64(len(m.objects[key]))
	m.objects[key] = append([]byte(nil), obj...)
}

// Object returns a copy of key's complete object.
func (m *Master) Object(key string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.objects[key]
	return append([]byte(nil), o...), ok
}

// SessionOpen reports whether key has an unfinished put session.
func (m *Master) SessionOpen(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.sessions[key]
	return ok
}

// Calls returns how many times call was made.
func (m *Master) Calls(call string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[call]
}

// enter counts the call and waits at any hold staged for one of its keys.
func (m *Master) enter(call string, keys []string) {
	m.mu.Lock()
	m.calls[call]++
	var held []*Held
	for _, k := range keys {
		fk := faultKey{call, k}
		if hs := m.holds[fk]; len(hs) > 0 {
			held = append(held, hs[0])
			m.holds[fk] = hs[1:]
		}
	}
	m.mu.Unlock()
	for _, h := range held {
		close(h.Entered)
		<-h.release
	}
}

// begin starts a data call: it waits at any staged hold, then raises if a
// raise is staged for one of its keys.
func (m *Master) begin(call string, keys []string) error {
	m.enter(call, keys)
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.raiseLocked(call, keys)
}

// take pops the fault staged for call and key. m.mu is held.
func (m *Master) takeLocked(call, key string) (fault, bool) {
	fk := faultKey{call, key}
	fs := m.faults[fk]
	if len(fs) == 0 || fs[0].raise || fs[0].miscount { // those apply to the whole call
		return fault{}, false
	}
	m.faults[fk] = fs[1:]
	return fs[0], true
}

// raiseLocked pops a staged raise for any key of the call. m.mu is held.
func (m *Master) raiseLocked(call string, keys []string) error {
	for _, k := range keys {
		fk := faultKey{call, k}
		if fs := m.faults[fk]; len(fs) > 0 && fs[0].raise {
			m.faults[fk] = fs[1:]
			return fmt.Errorf("fakesdk: %s raised (staged for key %q)", call, k)
		}
	}
	return nil
}

// Client is one SDK client of a master: a mooncake.SDK.
type Client struct {
	m       *Master
	id      int
	version string
	mu      sync.Mutex
	buffers map[uintptr]int64 // registered base -> length
	closed  bool
}

var _ mooncake.SDK = (*Client)(nil)

// NewClient returns a client of m reporting version (use "0.3.13").
func NewClient(m *Master, version string) *Client {
	m.mu.Lock()
	m.nextID++
	id := m.nextID
	m.mu.Unlock()
	return &Client{m: m, id: id, version: version, buffers: map[uintptr]int64{}}
}

func (c *Client) Version() string { return c.version }

// Master returns the client's master.
func (c *Client) Master() *Master { return c.m }

func (c *Client) RegisterBuffer(b mooncake.Buffer) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if b.Addr == 0 || b.Len <= 0 {
		return int64(gen.InvalidParams), nil
	}
	c.buffers[b.Addr] = b.Len
	return int64(gen.OK), nil
}

func (c *Client) UnregisterBuffer(b mooncake.Buffer) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.buffers[b.Addr]; !ok {
		return int64(gen.InvalidParams), nil
	}
	delete(c.buffers, b.Addr)
	return int64(gen.OK), nil
}

// bytesOf returns the registered memory of b, or false when b is not inside
// one registered buffer (the transfer engine would refuse it).
func (c *Client) bytesOf(b mooncake.Buffer) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for base, n := range c.buffers {
		if b.Addr >= base && b.Addr+uintptr(b.Len) <= base+uintptr(n) {
			return unsafe.Slice((*byte)(addrPointer(b.Addr)), b.Len), true
		}
	}
	return nil, false
}

var errClosed = errors.New("fakesdk: client closed")

func (c *Client) BatchPutSessionStart(keys []string, sizes []int64) ([]int64, error) {
	size := make(map[string]int64, len(keys))
	for i, k := range keys {
		size[k] = sizes[i]
	}
	m := c.m
	return c.metadataCall(CallStart, keys, func(k string) int64 {
		if _, ok := m.objects[k]; ok {
			return int64(gen.ObjectAlreadyExists)
		}
		if s, ok := m.sessions[k]; ok {
			if m.now.Sub(s.started) < m.discard {
				return int64(gen.ObjectAlreadyExists)
			}
			m.used -= int64(len(s.data)) // the master discards the unfinished put
			delete(m.sessions, k)
		}
		switch {
		case size[k] <= 0:
			return int64(gen.InvalidParams)
		case m.capacity > 0 && m.used+size[k] > m.capacity:
			return int64(gen.NoAvailableHandle)
		}
		m.used += size[k]
		m.sessions[k] = &session{client: c.id, started: m.now, data: make([]byte, size[k])}
		return int64(gen.OK)
	})
}

func (c *Client) BatchPutFromMultiBufferRanges(keys []string, buffers [][]mooncake.Buffer) ([]int64, error) {
	m := c.m
	if err := m.begin(CallScatter, keys); err != nil {
		return nil, err
	}
	out := make([]int64, len(keys))
	for i, k := range keys {
		m.mu.Lock()
		f, staged := m.takeLocked(CallScatter, k)
		s, ok := c.ownSessionLocked(k)
		m.mu.Unlock()
		if !ok {
			out[i] = int64(gen.InvalidParams)
			continue
		}
		if staged && !f.short && !f.write {
			out[i] = int64(f.code)
			continue
		}
		var n int64
		for _, b := range buffers[i] {
			src, ok := c.bytesOf(b)
			if !ok {
				n = int64(gen.InvalidParams)
				break
			}
			if staged && f.short {
				src = src[:len(src)/2]
			}
			n += int64(copy(s.data[n:], src))
		}
		if staged && f.write {
			n = int64(f.code)
		}
		s.written = n == int64(len(s.data))
		out[i] = n
	}
	return m.answered(CallScatter, keys, out)
}

// metadataCall runs a call that touches only the master's metadata: it
// waits at any staged hold, raises if staged, and answers each key with a
// staged code or with answer(key), all under the master's lock.
func (c *Client) metadataCall(call string, keys []string, answer func(key string) int64) ([]int64, error) {
	m := c.m
	m.enter(call, keys)
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.raiseLocked(call, keys); err != nil {
		return nil, err
	}
	out := make([]int64, len(keys))
	for i, k := range keys {
		if f, ok := m.takeLocked(call, k); ok {
			out[i] = int64(f.code)
			continue
		}
		out[i] = answer(k)
	}
	return out, nil
}

// ownSessionLocked returns key's session if this client started it.
func (c *Client) ownSessionLocked(key string) (*session, bool) {
	s, ok := c.m.sessions[key]
	return s, ok && s.client == c.id
}

func (c *Client) BatchPutSessionEnd(keys []string) ([]int64, error) {
	return c.metadataCall(CallEnd, keys, func(k string) int64 {
		s, ok := c.ownSessionLocked(k)
		if !ok {
			return int64(gen.ObjectNotFound)
		}
		delete(c.m.sessions, k)
		c.m.objects[k] = s.data
		return int64(gen.OK)
	})
}

func (c *Client) BatchPutSessionRevoke(keys []string) ([]int64, error) {
	return c.metadataCall(CallRevoke, keys, func(k string) int64 {
		s, ok := c.ownSessionLocked(k)
		if !ok {
			return int64(gen.ObjectNotFound)
		}
		c.m.used -= int64(len(s.data))
		delete(c.m.sessions, k)
		return int64(gen.OK)
	})
}

func (c *Client) BatchGetInto(keys []string, buffers []mooncake.Buffer) ([]int64, error) {
	m := c.m
	if err := m.begin(CallGet, keys); err != nil {
		return nil, err
	}
	out := make([]int64, len(keys))
	for i, k := range keys {
		m.mu.Lock()
		f, staged := m.takeLocked(CallGet, k)
		obj, ok := m.objects[k]
		_, writing := m.sessions[k]
		m.mu.Unlock()
		if staged && !f.write {
			out[i] = int64(f.code)
			continue
		}
		switch {
		case !ok && writing:
			out[i] = int64(gen.ReplicaIsNotReady)
		case !ok:
			out[i] = int64(gen.ObjectNotFound)
		case int64(len(obj)) > buffers[i].Len:
			out[i] = int64(gen.InvalidParams) // refused before any transfer
		default:
			dst, ok := c.bytesOf(buffers[i])
			if !ok {
				out[i] = int64(gen.InvalidParams)
				continue
			}
			out[i] = int64(copy(dst, obj)) // a shorter object lands in the head
			if staged && f.write {
				out[i] = int64(f.code)
			}
			if staged && f.late > 0 {
				m.late.Add(1)
				go func(dst []byte, n int, d time.Duration) {
					defer m.late.Done()
					time.Sleep(d) // the transfer engine's timing, not a test's synchronisation
					for j := 0; j < n; j++ {
						dst[j] ^= 0x5A
					}
				}(dst, len(obj), f.late)
			}
		}
	}
	return m.answered(CallGet, keys, out)
}

func (c *Client) BatchIsExist(keys []string) ([]int64, error) {
	return c.metadataCall(CallExist, keys, func(k string) int64 {
		if _, ok := c.m.objects[k]; ok {
			return 1
		}
		return 0
	})
}

func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return errClosed
	}
	c.closed = true
	return nil
}

// addrPointer turns a registered buffer's address back into a pointer, as
// the transfer engine does in C. The memory is off the Go heap (it was
// registered by address from runtime/hostmem), so the collector neither
// moves nor frees it; the indirection keeps vet's uintptr check, which is
// about heap memory, quiet.
func addrPointer(addr uintptr) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&addr))
}

// Package fakesdk is a Mooncake store in process: a master (objects, put
// sessions, the segment they live in) shared by clients, each with its own
// local put sessions and registered buffers, moving real bytes.
//
// It answers as a real build (Mooncake main at 3b5a594, reporting
// 0.3.12.post1) answered in the runs docs/mooncake-sdk.md records, and
// stores/mooncake/testdata/mcscenario holds those answers; the replay test
// in stores/mooncake/mooncakekit fails when this fake disagrees with one. Its
// decisions are its own: it names codes (generated/mooncake's Code names the
// values of types.h), but never asks our spec what an answer means.
//
// What it models, and the real behaviour each rests on:
//   - The client keeps its own put sessions: a second start of a key it holds,
//     an empty key, and an end or revoke of a key it holds no session for are
//     refused with INVALID_PARAMS before the master is asked (probe rows
//     b3, b6, c1-c5). The local session is dropped only when the master
//     answers OK, so one taken over (ILLEGAL_CLIENT, g1) or completed by a
//     late end (INVALID_WRITE, h11-15) stays forever.
//   - The master holds sessions and objects over one segment of real bytes:
//     freed space keeps its old bytes (d6), a discarded session's space is
//     kept until put_start_release_timeout (g1), a start into a full
//     segment answers NO_AVAILABLE_HANDLE at once, even when complete
//     objects fill it, and that refusal makes the eviction thread drop the
//     oldest objects whose lease ran out as soon as time passes (b4e,
//     recorded: -200 at once, then 4 of the 16 objects dropped, the 4
//     oldest, and starts after 1, 4 and 14 s answered OK; evictShare); a
//     segment full of open sessions answers NO_AVAILABLE_HANDLE and has
//     nothing to evict.
//   - Data calls need no registration (tcp, a5); a scatter larger than its
//     session is refused whole (d2).
//   - An end seals its local session before the master is asked: a scatter
//     after any end is refused, whatever the end answered (m-master-killed).
//   - The environment: a master killed (metadata calls answer RPC_FAIL at
//     once, a get after the connect retries, a scatter into a session still
//     works), restarted (everything forgotten; a client's first metadata
//     call fails RPC_FAIL at once on its dead connection, then starts
//     answer NO_AVAILABLE_HANDLE until the segment is remounted) or frozen (calls answer RPC_TIMEOUT
//     after MC_RPC_TIMEOUT_MS and take effect when it thaws); the segment's
//     owner frozen (transfers stall; the TCP status timeout, the fixed 60 s
//     transfer wait, the lease, and the master's client_ttl act on them)
//     or killed (its gets answer TRANSFER_FAIL at once until client_ttl
//     unmounts its segment). A client's Close ends its transfers: a get
//     whose wait gave up never lands after it.
//
// Time is the master's clock: a call that takes time in a real build waits
// on it, and Advance, Await and Settle move and observe it, so no test sleeps.
package fakesdk

import (
	"sync"
	"time"

	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/driverkit"
)

// The answers, by their names in types.h.
const (
	codeOK                = int64(mooncakegen.OK)
	codeNoAvailableHandle = int64(mooncakegen.NoAvailableHandle)
	codeInvalidParams     = int64(mooncakegen.InvalidParams)
	codeIllegalClient     = int64(mooncakegen.IllegalClient)
	codeInvalidWrite      = int64(mooncakegen.InvalidWrite)
	codeReplicaNotReady   = int64(mooncakegen.ReplicaIsNotReady)
	codeObjectNotFound    = int64(mooncakegen.ObjectNotFound)
	codeAlreadyExists     = int64(mooncakegen.ObjectAlreadyExists)
	codeLeaseExpired      = int64(mooncakegen.LeaseExpired)
	codeTransferFail      = int64(mooncakegen.TransferFail)
	codeRPCFail           = int64(mooncakegen.RPCFail)
	codeRPCTimeout        = int64(mooncakegen.RPCTimeout)
)

// Knobs are the timings and sizes of a real deployment the fake acts on,
// each named by what sets it there.
type Knobs struct {
	Discard       time.Duration // master --put_start_discard_timeout_sec (30 s)
	Release       time.Duration // master --put_start_release_timeout_sec (600 s)
	Lease         time.Duration // master --default_kv_lease_ttl (10 s)
	ClientTTL     time.Duration // master --client_ttl (10 s)
	RPCTimeout    time.Duration // client MC_RPC_TIMEOUT_MS (30 s)
	StatusTimeout time.Duration // client MC_TCP_STATUS_TIMEOUT_SEC (30 s)
	TransferWait  time.Duration // a get's transfer wait, fixed (transfer_task.cpp:830): 60 s
	Retries       time.Duration // a get's lookup with the master down: the connect retries (recorded: 1-10 s)
	Remount       time.Duration // after a master restart, until the segment is mounted again: ~1 s
	// SocketWindow is how much of a scatter a frozen peer's connection
	// takes in before the sender blocks (socket buffers): a scatter that
	// fits waits for its ack under StatusTimeout; a larger one blocks
	// until the peer thaws.
	SocketWindow int64
	// Evicts also runs the master's watermark eviction as time passes:
	// while the segment is full it drops complete objects without a live
	// lease, oldest first (master_service.cpp, EvictionThreadFunc and
	// BatchEvict: over eviction_high_watermark_ratio, leases expired). Off
	// by default: the eviction a real master was seen to make is the one a
	// refused start triggers (b4e-pool-full-declines-then-evicts), which
	// the fake always runs (evictLocked).
	Evicts bool
}

// DefaultKnobs are a real build's defaults.
func DefaultKnobs() Knobs {
	return Knobs{Discard: DefaultDiscard, Release: 600 * time.Second, Lease: 10 * time.Second,
		ClientTTL: 10 * time.Second, RPCTimeout: 30 * time.Second, StatusTimeout: 30 * time.Second,
		TransferWait: 60 * time.Second, Retries: 4200 * time.Millisecond, Remount: time.Second,
		SocketWindow: 4 << 20}
}

// DefaultDiscard is the default put_start_discard_timeout_sec.
const DefaultDiscard = 30 * time.Second

type span struct{ off, size int64 }

type object struct {
	span
	putAt      time.Time
	leaseUntil time.Time
	readers    int  // gets that read it with the lock released, or once a frozen owner thaws
	gone       bool // out of the master's objects: spare once no get reads it
}

type session struct {
	owner   int // client id; negative for BeginForeign's writer
	started time.Time
	span
}

type discarded struct {
	span
	at time.Time
}

// waiter is a call waiting on the clock or the environment.
type waiter struct {
	deadline time.Time // zero: none
	ready    func() bool
}

// Master is the store every client of a pool shares, and the segment its
// objects live in.
type Master struct {
	mu    sync.Mutex
	cond  *sync.Cond
	knobs Knobs
	now   time.Time

	// the segment
	capacity int64         // 0: no bound
	arena    []byte        // the segment's bytes
	fixed    bool          // arena is a reservation that never moves (see reserve)
	pins     map[int64]int // spans (by offset) a transfer copies into or out of without the lock
	deferred []span        // spans freed while pinned: freed at the last unpin
	copying  func()        // a test's look at the master while a copy runs without the lock; set before any call
	top      int64
	free     []span // sorted by offset
	used     int64
	// needEviction: a start was refused for lack of room; the eviction
	// thread drops objects when the clock next moves (evictLocked).
	needEviction bool
	discards     []discarded

	objects  map[string]*object
	sessions map[string]session
	nextID   int

	// the environment
	down      bool      // killed
	epoch     int       // kills so far: a client whose connection predates the last kill has a dead one
	frozen    bool      // SIGSTOPped
	atThaw    []func()  // requests a frozen master applies when it thaws
	remountAt time.Time // after a restart, starts find no space until then
	owner     int       // the client whose segment holds the pool (0: none that can freeze)
	peerFroze bool
	frozeAt   time.Time
	peerDead  bool // the owner was killed (KillPeer)
	diedAt    time.Time
	unmounted bool     // the owner was expired (client_ttl)
	atPeer    []func() // transfers a frozen owner applies when it thaws

	waiters map[*waiter]struct{}
	active  int // calls started by Go and not returned
	holding int // calls waiting at a Hold

	faults map[faultKey][]fault
	holds  map[faultKey][]*Held
	calls  map[string]int
	late   sync.WaitGroup // transfers still writing after their call answered

	spare        driverkit.Stack[scratch] // calls' working space, for the next calls
	spareObjects driverkit.Stack[object]  // objects dropped, for the next ones
}

type faultKey struct{ call, key string }

// fault is one staged answer: a code, a raise, a short write or a
// transfer that still writes after its failure is answered.
type fault struct {
	code       mooncakegen.Code
	raise      bool
	raiseAfter bool // the call takes effect, then raises
	short      bool
	write      bool          // the bytes land although the code is answered (LEASE_EXPIRED, TRANSFER_FAIL)
	late       time.Duration // the transfer goes on writing this long after the call answered
	miscount   bool          // the call answers one value fewer than its keys
}

// The calls, as the SDK names them.
const (
	CallStart   = "batch_put_session_start"
	CallScatter = "batch_put_from_multi_buffer_ranges"
	CallEnd     = "batch_put_session_end"
	CallRevoke  = "batch_put_session_revoke"
	CallGet     = "batch_get_into"
	CallExist   = "batch_is_exist"

	// register_buffer and unregister_buffer name no key: stage their
	// answers, raises and raises-after-applying under AnyBuffer, and the
	// next such call of any client of the master takes it.
	CallRegister   = "register_buffer"
	CallUnregister = "unregister_buffer"
)

// AnyBuffer is the key a fault for CallRegister or CallUnregister is staged
// under.
const AnyBuffer = ""

// NewMaster returns an empty pool holding at most capacity bytes (0: no
// bound), with DefaultKnobs.
func NewMaster(capacity int64) *Master {
	m := &Master{objects: map[string]*object{}, sessions: map[string]session{}, capacity: capacity,
		now: time.Unix(1_700_000_000, 0), knobs: DefaultKnobs(), faults: map[faultKey][]fault{},
		holds: map[faultKey][]*Held{}, calls: map[string]int{}, waiters: map[*waiter]struct{}{}, pins: map[int64]int{}}
	m.cond = sync.NewCond(&m.mu)
	if mem := reserve(m, reserveBytes); mem != nil {
		m.arena, m.fixed = mem, true
	}
	return m
}

// SetKnobs replaces the master's timings and sizes.
func (m *Master) SetKnobs(k Knobs) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.knobs = k
}

// SetCapacity bounds the pool's bytes (0: no bound).
func (m *Master) SetCapacity(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.capacity = n
}

// SetOwner names the client whose segment holds the pool: FreezePeer
// freezes it.
func (m *Master) SetOwner(c *Client) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owner = c.id
}

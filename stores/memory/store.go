package memory

import (
	"hash/crc32"
	"sync"
	"sync/atomic"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"

	memorygen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/stores/trailer"
)

// Store is the in-process byte store: the memory driver's "SDK". Several
// drivers may share one Store, as several clients share a real store. Its
// calls answer the codes of spec/memory.yaml.
//
// Tests stage scenarios on it: an injected answer, a call held inside the
// store, another writer holding a key, a capacity.
type Store struct {
	mu       sync.Mutex
	arena    arena
	keys     keyTable
	objects  int                     // committed objects (entries with an obj)
	spare    driverkit.Stack[object] // objects whose block went back to the arena
	entries  driverkit.Stack[entry]  // entries out of the table that no write refers to
	staged   atomic.Bool             // an injection or hold was ever staged
	nextID   int
	used     int64
	capacity int64 // 0: unbounded
	inject   map[callKey][]memorygen.Code
	holds    map[callKey][]chan struct{}
	entered  map[callKey]chan struct{}
}

type callKey struct{ call, key string }

// entry is what the store holds under a key: its committed object (nil:
// none) and the id of the writer holding the key (0: none), so that a put
// finds both with one lookup and commits through the entry it reserved,
// with none. An entry with neither leaves the table.
type entry struct {
	obj    *object
	writer int
	h      uint64 // its key's hash, while in the table (keyTable.insert)
	// writes: the writes (begin's) that refer to the entry and are not
	// yet committed or aborted. An entry that left the table is reused
	// (Store.entries) once none does, as an object is once no reader
	// holds it: once warm, a put of a new key takes nothing from the Go
	// heap for its entry either.
	writes int
	// gone: the entry left the table while writes referred to it (its
	// writer's reservation was taken over and ended while no object was
	// committed); a writer that still holds it commits through the key's
	// entry found again.
	gone bool
}

// object is a stored object: its bytes (room for the trailer included) in
// an arena block, and whether the store wrote it itself. The block goes
// back to the arena once the object is replaced or deleted and no reader
// holds it.
type object struct {
	b []byte
	// own: the store wrote the object from a put into b, which nothing
	// else writes, and left its trailer unwritten (the block's last
	// trailer.Size bytes hold whatever the block held before): whole
	// writes it, name digest and CRC32 included, for a reader that sees
	// the object whole. An object planted with SetObject is not the
	// store's own, and is kept as planted.
	own   bool
	refs  int  // readers copying out of b
	freed bool // replaced or deleted: b goes back once refs is 0
}

// The store's calls, as spec/memory.yaml names them.
const (
	CallPut = "store_put"
	CallGet = "store_get"
)

// NewStore returns an empty store holding at most capacity bytes of objects
// (0: no bound).
func NewStore(capacity int64) *Store {
	return &Store{
		keys: newKeyTable(), capacity: capacity,
		inject: map[callKey][]memorygen.Code{}, holds: map[callKey][]chan struct{}{}, entered: map[callKey]chan struct{}{},
	}
}

// Inject makes the next call of call for key answer code.
func (s *Store) Inject(call, key string, code memorygen.Code) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := callKey{call, key}
	s.inject[k] = append(s.inject[k], code)
	s.staged.Store(true)
}

// Hold makes the next call of call for key wait inside the store until
// release is called. entered is closed once the call is waiting.
func (s *Store) Hold(call, key string) (entered <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := callKey{call, key}
	ch := make(chan struct{})
	s.holds[k] = append(s.holds[k], ch)
	e := make(chan struct{})
	s.entered[k] = e
	s.staged.Store(true)
	var once sync.Once
	return e, func() { once.Do(func() { close(ch) }) }
}

// BeginExternal makes key look as if another client is writing it, until
// finish is called (which commits nothing).
func (s *Store) BeginExternal(key string) (finish func()) {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.entryLocked(key).writer = id
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if e := s.keys.get(key); e != nil && e.writer == id {
			e.writer = 0
			s.dropIfEmptyLocked(e)
		}
	}
}

// SetCapacity bounds the bytes of stored objects (0: no bound).
func (s *Store) SetCapacity(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.capacity = n
}

// Len returns the number of committed objects.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.objects
}

// Object returns a copy of the object under key, trailer included.
func (s *Store) Object(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.keys.get(key)
	if e == nil || e.obj == nil {
		return nil, false
	}
	return e.obj.whole(key), true
}

// whole returns a copy of the object under key as a reader outside the
// store sees it: for the store's own object, with the trailer its put left
// unwritten (the name digest of key, the length, the CRC32).
func (o *object) whole(key string) []byte {
	b := append([]byte(nil), o.b...)
	if o.own {
		n := len(b) - trailer.Size
		trailer.Put(b[n:], trailer.NameDigest(key), n, crc32.ChecksumIEEE(b[:n]))
	}
	return b
}

// SetObject stores obj under key as is, with no check: tests use it to
// plant short, long or corrupt objects. Every read of a planted object
// checks its whole trailer, checksum included.
func (s *Store) SetObject(key string, obj []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.newObjectLocked(len(obj), false)
	copy(o.b, obj)
	s.setLocked(s.entryLocked(key), o)
}

// newObjectLocked returns an object with a block of n bytes, reusing the
// struct of an object released before: once warm, storing an object takes
// nothing from the Go heap. s.mu is held.
func (s *Store) newObjectLocked(n int, own bool) *object {
	o := s.spare.Get()
	*o = object{b: s.arena.alloc(n), own: own}
	return o
}

// releaseLocked gives o's block back to the arena and keeps o for reuse.
// Nothing may refer to o any more: it is out of the table, no reader holds
// it, and its writer is done with it. s.mu is held.
func (s *Store) releaseLocked(o *object) {
	s.arena.release(o.b)
	*o = object{}
	s.spare.Put(o)
}

// Delete drops the object under key.
func (s *Store) Delete(key string) {
	h := s.keys.hash(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, _ := s.keys.findHashed(key, h); e != nil {
		s.setLocked(e, nil)
	}
}

// entryLocked returns key's entry, putting an empty one in the table when
// it has none. s.mu is held.
func (s *Store) entryLocked(key string) *entry {
	e, p := s.keys.find(key)
	if e == nil {
		e = s.newEntryLocked()
		s.keys.insert(p, key, e)
	}
	return e
}

// newEntryLocked returns an empty entry, reusing one released before.
// s.mu is held.
func (s *Store) newEntryLocked() *entry { return s.entries.Get() }

// releaseEntryLocked keeps e, out of the table, for reuse once no write
// refers to it; until then it is gone. s.mu is held.
func (s *Store) releaseEntryLocked(e *entry) {
	if e.writes > 0 {
		e.gone = true
		return
	}
	*e = entry{}
	s.entries.Put(e)
}

// dropIfEmptyLocked takes e, an entry in the table, out of it once it
// holds neither an object nor a writer, and releases it
// (releaseEntryLocked). s.mu is held.
func (s *Store) dropIfEmptyLocked(e *entry) {
	if e.obj == nil && e.writer == 0 && !e.gone {
		s.keys.remove(e)
		s.releaseEntryLocked(e)
	}
}

// setLocked puts o (nil: nothing) in e, an entry in the table, releasing
// the object it replaces once no reader holds it. s.mu is held.
func (s *Store) setLocked(e *entry, o *object) {
	if old := e.obj; old != nil {
		s.used -= int64(len(old.b))
		s.objects--
		old.freed = true
		if old.refs == 0 {
			s.releaseLocked(old)
		}
	}
	e.obj = o
	if o == nil {
		s.dropIfEmptyLocked(e)
		return
	}
	s.used += int64(len(o.b))
	s.objects++
}

// enter runs a call's staged hold and injection. It returns the injected
// code, if any.
func (s *Store) enter(call, key string) (memorygen.Code, bool) {
	if !s.staged.Load() {
		return memorygen.OK, false // nothing was ever staged: no lock to take
	}
	k := callKey{call, key}
	s.mu.Lock()
	var hold chan struct{}
	if hs := s.holds[k]; len(hs) > 0 {
		hold, s.holds[k] = hs[0], hs[1:]
		if e := s.entered[k]; e != nil {
			close(e)
			delete(s.entered, k)
		}
	}
	s.mu.Unlock()
	if hold != nil {
		<-hold
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cs := s.inject[k]; len(cs) > 0 {
		c := cs[0]
		s.inject[k] = cs[1:]
		return c, true
	}
	return memorygen.OK, false
}

// begin reserves key for a writer and gives it an object of n bytes to
// fill (own: the store writes it from a put; see object.own), as a write
// to commit. It answers PENDING while another writer holds the key.
func (s *Store) begin(key string, n int, own bool) (write, memorygen.Code) {
	h := s.keys.hash(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.beginLocked(key, h, n, own)
}

// beginLocked is begin of key, hashed h (keyTable.hash). s.mu is held.
func (s *Store) beginLocked(key string, h uint64, n int, own bool) (write, memorygen.Code) {
	e, p := s.keys.findHashed(key, h)
	if e == nil {
		e = s.newEntryLocked()
		s.keys.insert(p, key, e)
	} else if e.writer != 0 {
		return write{}, memorygen.Pending
	}
	s.nextID++
	e.writer = s.nextID
	e.writes++
	return write{id: s.nextID, e: e, obj: s.newObjectLocked(n, own)}, memorygen.OK
}

// commitLocked stores w's object under key and drops w's reservation. It
// answers FULL when the object does not fit, and then releases it. s.mu
// is held: a put commits its rows under one lock.
func (s *Store) commitLocked(key string, w write) memorygen.Code {
	e := w.e
	e.writes--
	if e.writer == w.id {
		e.writer = 0
	}
	if e.gone { // another writer took the key over and ended: find it again
		s.releaseEntryLocked(e)
		e = s.entryLocked(key)
	}
	grow := int64(len(w.obj.b))
	if e.obj != nil {
		grow -= int64(len(e.obj.b))
	}
	if s.capacity > 0 && s.used+grow > s.capacity {
		s.releaseLocked(w.obj)
		s.dropIfEmptyLocked(e)
		return memorygen.Full
	}
	s.setLocked(e, w.obj)
	return memorygen.OK
}

// abortLocked gives back w, a reservation whose row never started: its
// key is no longer w's writer's, and w's object goes back to the arena.
// s.mu is held.
func (s *Store) abortLocked(w write) {
	e := w.e
	e.writes--
	if e.writer == w.id {
		e.writer = 0
	}
	s.releaseLocked(w.obj)
	if e.gone {
		s.releaseEntryLocked(e)
	} else {
		s.dropIfEmptyLocked(e)
	}
}

// puts is a put's reservations (begin's answers) for up to putChunk
// consecutive rows, from row start on, each held until its row takes it
// or unreserve gives it back.
type puts struct {
	start, n int
	w        [putChunk]write
	codes    [putChunk]memorygen.Code
}

// putChunk is how many rows a put reserves under one hold of the store's
// lock. Besides the lock taken once per chunk instead of once per row,
// the chunk's lookups in the store's map run back to back, where their
// cache misses overlap, instead of each behind a row's copy: begin was an
// eighth of a 4 KiB put's time, most of it the map's misses. A reserved
// key answers PENDING to others from its chunk's reservation on, up to
// putChunk-1 rows before its copy starts.
const putChunk = 32

// reserved returns row i's reservation (a write to fill, or begin's
// code), reserving rows i to i+putChunk-1 when i is past what p holds.
// Rows are asked in order; a reservation taken is no longer p's.
func (s *Store) reserved(p *puts, rows []driver.Row, i int) (write, memorygen.Code) {
	if i >= p.start+p.n {
		// The chunk's keys are hashed and its rows sized (reading their
		// spans) before the lock is taken, and the keys' slots read
		// together (keyTable.warm) before they are looked up.
		p.start, p.n = i, min(putChunk, len(rows)-i)
		var hs [putChunk]uint64
		var ns [putChunk]int
		for k := range p.n {
			r := rows[i+k]
			hs[k], ns[k] = s.keys.hash(r.Key), ownBytes(r)
		}
		s.mu.Lock()
		s.keys.warm(hs[:p.n])
		for k := range p.n {
			p.w[k], p.codes[k] = s.beginLocked(rows[i+k].Key, hs[k], ns[k], true)
		}
		s.mu.Unlock()
	}
	k := i - p.start
	w := p.w[k]
	p.w[k] = write{}
	return w, p.codes[k]
}

// unreserve gives back every reservation p still holds: those of rows
// that never started (the put was cancelled in their chunk).
func (s *Store) unreserve(p *puts) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range p.n {
		if w := p.w[k]; w.obj != nil {
			s.abortLocked(w)
			p.w[k] = write{}
		}
	}
	p.n = 0
}

// get returns the object under key, held until done is called (its block
// is not reused while held): NOT_FOUND when absent, PENDING when absent
// and being written.
func (s *Store) get(key string) (*object, memorygen.Code) {
	h := s.keys.hash(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getLocked(key, h)
}

// getLocked is get of key, hashed h (keyTable.hash). s.mu is held.
func (s *Store) getLocked(key string, h uint64) (*object, memorygen.Code) {
	switch e, _ := s.keys.findHashed(key, h); {
	case e == nil:
		return nil, memorygen.NotFound
	case e.obj != nil:
		e.obj.refs++
		return e.obj, memorygen.OK
	case e.writer != 0:
		return nil, memorygen.Pending
	}
	return nil, memorygen.NotFound
}

// done lets go of an object get returned.
func (s *Store) done(o *object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.doneLocked(o)
}

func (s *Store) doneLocked(o *object) {
	o.refs--
	if o.refs == 0 && o.freed {
		s.releaseLocked(o)
	}
}

// reads is a get's objects for up to readChunk consecutive rows, from
// row start on, each held (as get holds it) until the next refill or
// letGo.
type reads struct {
	start, n int
	objs     [readChunk]*object
	codes    [readChunk]memorygen.Code
}

// readChunk is how many rows a get looks up under one hold of the store's
// lock: a get of many rows takes the lock twice per chunk instead of twice
// per row (so two workers' gets do not take turns on it at every row),
// and holds it for a few dozen map lookups at most.
const readChunk = 32

// at returns row i's object (held) or code, looking up rows i to
// i+readChunk-1 when i is past what rd holds. Rows are asked in order.
func (s *Store) at(rd *reads, rows []driver.Row, i int) (*object, memorygen.Code) {
	if i >= rd.start+rd.n {
		// As reserved: hashed before the lock, the slots read together.
		n := min(readChunk, len(rows)-i)
		var hs [readChunk]uint64
		for k := range n {
			hs[k] = s.keys.hash(rows[i+k].Key)
		}
		s.mu.Lock()
		s.letGoLocked(rd)
		rd.start, rd.n = i, n
		s.keys.warm(hs[:n])
		for k := range n {
			rd.objs[k], rd.codes[k] = s.getLocked(rows[i+k].Key, hs[k])
		}
		s.mu.Unlock()
	}
	return rd.objs[i-rd.start], rd.codes[i-rd.start]
}

// letGo lets go of every object rd holds.
func (s *Store) letGo(rd *reads) {
	s.mu.Lock()
	s.letGoLocked(rd)
	s.mu.Unlock()
}

func (s *Store) letGoLocked(rd *reads) {
	for k := range rd.n {
		if o := rd.objs[k]; o != nil {
			s.doneLocked(o)
			rd.objs[k] = nil
		}
	}
	rd.n = 0
}

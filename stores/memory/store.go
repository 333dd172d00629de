package memory

import (
	"sync"

	gen "github.com/kvblob/kvblob/generated/memory"
)

// Store is the in-process byte store: the memory driver's "SDK". Several
// drivers may share one Store, as several clients share a real store. Its
// calls answer the codes of spec/memory.yaml.
//
// Tests stage scenarios on it: an injected answer, a call held inside the
// store, another writer holding a key, a capacity.
type Store struct {
	mu       sync.Mutex
	objects  map[string][]byte
	pending  map[string]int // key -> writer id
	nextID   int
	used     int64
	capacity int64 // 0: unbounded
	inject   map[callKey][]gen.Code
	holds    map[callKey][]chan struct{}
	entered  map[callKey]chan struct{}
}

type callKey struct{ call, key string }

// The store's calls, as spec/memory.yaml names them.
const (
	CallPut = "store_put"
	CallGet = "store_get"
)

// NewStore returns an empty store holding at most capacity bytes of objects
// (0: no bound).
func NewStore(capacity int64) *Store {
	return &Store{
		objects: map[string][]byte{}, pending: map[string]int{}, capacity: capacity,
		inject: map[callKey][]gen.Code{}, holds: map[callKey][]chan struct{}{}, entered: map[callKey]chan struct{}{},
	}
}

// Inject makes the next call of call for key answer code.
func (s *Store) Inject(call, key string, code gen.Code) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := callKey{call, key}
	s.inject[k] = append(s.inject[k], code)
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
	var once sync.Once
	return e, func() { once.Do(func() { close(ch) }) }
}

// BeginExternal makes key look as if another client is writing it, until
// finish is called (which commits nothing).
func (s *Store) BeginExternal(key string) (finish func()) {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.pending[key] = id
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.pending[key] == id {
			delete(s.pending, key)
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
	return len(s.objects)
}

// Object returns a copy of the object under key, trailer included.
func (s *Store) Object(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := s.objects[key]
	return append([]byte(nil), o...), ok
}

// SetObject stores obj under key as is, with no check: tests use it to
// plant short, long or corrupt objects.
func (s *Store) SetObject(key string, obj []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used += int64(len(obj)) - int64(len(s.objects[key]))
	s.objects[key] = append([]byte(nil), obj...)
}

// Delete drops the object under key.
func (s *Store) Delete(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.used -= int64(len(s.objects[key]))
	delete(s.objects, key)
}

// enter runs a call's staged hold and injection. It returns the injected
// code, if any.
func (s *Store) enter(call, key string) (gen.Code, bool) {
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
	return gen.OK, false
}

// begin reserves key for a writer. It answers PENDING while another writer
// holds it.
func (s *Store) begin(key string) (int, gen.Code) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[key]; ok {
		return 0, gen.Pending
	}
	s.nextID++
	s.pending[key] = s.nextID
	return s.nextID, gen.OK
}

// commit stores obj under key for writer id and drops its reservation. It
// answers FULL when the object does not fit.
func (s *Store) commit(key string, id int, obj []byte) gen.Code {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending[key] == id {
		delete(s.pending, key)
	}
	grow := int64(len(obj)) - int64(len(s.objects[key]))
	if s.capacity > 0 && s.used+grow > s.capacity {
		return gen.Full
	}
	s.used += grow
	s.objects[key] = obj
	return gen.OK
}

// get returns the object under key: NOT_FOUND when absent, PENDING when
// absent and being written.
func (s *Store) get(key string) ([]byte, gen.Code) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.objects[key]; ok {
		return o, gen.OK
	}
	if _, ok := s.pending[key]; ok {
		return nil, gen.Pending
	}
	return nil, gen.NotFound
}

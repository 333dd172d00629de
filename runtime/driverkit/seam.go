package driverkit

import (
	"errors"
	"fmt"
	"sync"
)

// Seam is the one place an adapter's store calls pass through, keyed by the
// names the store's spec gives its calls, so that a test kit can stage a
// fault on any store without knowing its client: hold a call for a key until
// released, make it raise, or make it answer one of the spec's codes
// without asking the store.
//
// An adapter calls Enter before each store call it makes, with the spec's
// name for the call and the keys the call carries, and consults the Pass it
// gets. A nil *Seam (production) costs one nil check and changes nothing.
// Each armed fault applies to the next call of that name carrying the key,
// once. All methods are safe for concurrent use.
type Seam struct {
	mu     sync.Mutex
	armed  map[seamKey][]*fault
	active int // armed faults not yet used
}

type seamKey struct{ call, key string }

type fault struct {
	answer   *int64
	err      error
	entered  chan struct{} // closed when a held call arrives
	released chan struct{} // closed by release
}

// ErrStaged is what a raise armed with a nil error raises.
var ErrStaged = errors.New("driverkit: a raise staged through the seam")

func (s *Seam) arm(call, key string, f *fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.armed == nil {
		s.armed = map[seamKey][]*fault{}
	}
	k := seamKey{call, key}
	s.armed[k] = append(s.armed[k], f)
	s.active++
}

// Answer makes the next call named call that carries key answer code for
// that key, as the store would; the store is not asked for that key.
func (s *Seam) Answer(call, key string, code int64) { s.arm(call, key, &fault{answer: &code}) }

// Raise makes the next call named call that carries key fail as a whole
// with err (ErrStaged when nil), as a client library's raise would.
func (s *Seam) Raise(call, key string, err error) {
	if err == nil {
		err = ErrStaged
	}
	s.arm(call, key, &fault{err: err})
}

// Hold makes the next call named call that carries key wait inside the
// seam until release is called; entered is closed once it waits.
func (s *Seam) Hold(call, key string) (entered <-chan struct{}, release func()) {
	f := &fault{entered: make(chan struct{}), released: make(chan struct{})}
	s.arm(call, key, f)
	var once sync.Once
	return f.entered, func() { once.Do(func() { close(f.released) }) }
}

// Armed returns the number of faults armed and not yet used: a test that
// staged a fault its adapter never reached sees it here.
func (s *Seam) Armed() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.active
}

// Pass is what the seam says about one store call: the answers staged for
// some of its keys, or a raise of the whole call.
type Pass struct {
	answers map[int]int64
	err     error
}

// Enter takes the faults armed for call and keys, waits inside any hold
// among them until it is released, and returns the rest as a Pass. On a nil
// Seam it returns a nil Pass at once.
func (s *Seam) Enter(call string, keys ...string) *Pass {
	if s == nil {
		return nil
	}
	var taken []*fault
	var at []int
	s.mu.Lock()
	if s.active > 0 {
		for i, key := range keys {
			k := seamKey{call, key}
			if q := s.armed[k]; len(q) > 0 {
				taken, at = append(taken, q[0]), append(at, i)
				s.armed[k] = q[1:]
				s.active--
			}
		}
	}
	s.mu.Unlock()
	if len(taken) == 0 {
		return nil
	}
	p := &Pass{}
	for j, f := range taken {
		switch {
		case f.entered != nil:
			close(f.entered)
			<-f.released
		case f.err != nil:
			p.err = f.err
		case f.answer != nil:
			if p.answers == nil {
				p.answers = map[int]int64{}
			}
			p.answers[at[j]] = *f.answer
		}
	}
	return p
}

// Err is the raise staged for the call, or nil.
func (p *Pass) Err() error {
	if p == nil {
		return nil
	}
	return p.err
}

// Answer returns the code staged for the i-th key of the call, if any.
func (p *Pass) Answer(i int) (int64, bool) {
	if p == nil {
		return 0, false
	}
	code, ok := p.answers[i]
	return code, ok
}

// Stage enters s for one store call on key and says whether a test staged
// its answer, so that the adapter skips the store: a raised error, turned
// into a code by the adapter's classify (the same function that classifies
// the store's own errors, so the spec's rule for that code decides what the
// row becomes), or a staged code with an error that says it was staged. A
// staged code of zero or more is refused, as classify(err) of an error that
// says so: a size or an OK would promise bytes no call read or wrote. On a
// nil Seam, or with nothing armed, staged is false and the adapter calls
// the store.
func Stage[C ~int64](s *Seam, call, key string, classify func(error) C) (code C, staged bool, err error) {
	p := s.Enter(call, key)
	if err := p.Err(); err != nil {
		return classify(err), true, err
	}
	c, ok := p.Answer(0)
	switch {
	case !ok:
		return 0, false, nil
	case c >= 0:
		err := fmt.Errorf("%s: the seam staged %d; only negative codes can be staged", call, c)
		return classify(err), true, err
	}
	return C(c), true, fmt.Errorf("%s: staged through the seam", call)
}

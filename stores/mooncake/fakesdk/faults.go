package fakesdk

// Staged faults: answers, raises, short writes, late transfers and holds a
// test stages for the next call of a key.

import (
	"fmt"
	"sync"
	"time"

	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
)

// Answer makes the next call of call for key answer code, without effect.
func (m *Master) Answer(call, key string, code mooncakegen.Code) {
	m.stage(call, key, fault{code: code})
}

// AnswerAfterWriting makes the next call of call for key write the bytes
// and then answer code (a get whose lease expired, a transfer that failed
// after landing).
func (m *Master) AnswerAfterWriting(call, key string, code mooncakegen.Code) {
	m.stage(call, key, fault{code: code, write: true})
}

// TransferStillRunning makes the next get of key answer TRANSFER_FAIL while
// its transfer goes on: after the call answered, the buffer is written once
// more, after delay. Wait waits for such transfers.
func (m *Master) TransferStillRunning(key string, delay time.Duration) {
	m.stage(CallGet, key, fault{code: mooncakegen.TransferFail, write: true, late: delay})
}

// Wait waits until every transfer still running has finished writing.
func (m *Master) Wait() { m.late.Wait() }

// Raise makes the next call of call that names key raise, without effect.
func (m *Master) Raise(call, key string) { m.stage(call, key, fault{raise: true}) }

// RaiseAfterApplying makes the next metadata call of call that names key
// take effect and then raise (an answer lost on its way back).
func (m *Master) RaiseAfterApplying(call, key string) { m.stage(call, key, fault{raiseAfter: true}) }

// Miscount makes the next call of call that names key answer one value
// fewer than its keys, after doing its work.
func (m *Master) Miscount(call, key string) { m.stage(call, key, fault{miscount: true}) }

// Short makes the next scatter of key write only half the row.
func (m *Master) Short(key string) { m.stage(CallScatter, key, fault{short: true}) }

func (m *Master) stage(call, key string, f fault) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := faultKey{call, key}
	m.faults[k] = append(m.faults[k], f)
}

// popWholeLocked pops a staged fault for any key of the call that applies
// to the whole call. m.mu is held.
func (m *Master) popWholeLocked(call string, keys []string, is func(fault) bool) (string, bool) {
	for _, k := range keys {
		fk := faultKey{call, k}
		if fs := m.faults[fk]; len(fs) > 0 && is(fs[0]) {
			m.faults[fk] = fs[1:]
			return k, true
		}
	}
	return "", false
}

func (m *Master) raiseLocked(call string, keys []string) error {
	if k, ok := m.popWholeLocked(call, keys, func(f fault) bool { return f.raise }); ok {
		return fmt.Errorf("fakesdk: %s raised (staged for key %q)", call, k)
	}
	return nil
}

// finish applies a staged raise-after or miscount to out.
func (m *Master) finishLocked(call string, keys []string, out []int64) ([]int64, error) {
	if k, ok := m.popWholeLocked(call, keys, func(f fault) bool { return f.raiseAfter }); ok {
		return nil, fmt.Errorf("fakesdk: %s raised after taking effect (staged for key %q)", call, k)
	}
	if _, ok := m.popWholeLocked(call, keys, func(f fault) bool { return f.miscount }); ok && len(out) > 0 {
		out = out[:len(out)-1]
	}
	return out, nil
}

// takeLocked pops the per-key fault staged for call and key. m.mu is held.
func (m *Master) takeLocked(call, key string) (fault, bool) {
	fk := faultKey{call, key}
	fs := m.faults[fk]
	if len(fs) == 0 || fs[0].raise || fs[0].raiseAfter || fs[0].miscount { // those apply to the whole call
		return fault{}, false
	}
	m.faults[fk] = fs[1:]
	return fs[0], true
}

// Held is a call held inside the SDK.
type Held struct {
	Entered  chan struct{} // closed once the call is held
	m        *Master
	release  chan struct{}
	once     sync.Once
	entered  bool // under m.mu
	released bool // under m.mu
}

// Release lets the held call go on.
func (h *Held) Release() {
	h.once.Do(func() {
		h.m.mu.Lock()
		if h.entered {
			h.m.holding--
		}
		h.released = true
		h.m.cond.Broadcast()
		h.m.mu.Unlock()
		close(h.release)
	})
}

// Hold makes the next call of call that names key wait inside the SDK,
// before it does anything.
func (m *Master) Hold(call, key string) *Held {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := &Held{Entered: make(chan struct{}), m: m, release: make(chan struct{})}
	k := faultKey{call, key}
	m.holds[k] = append(m.holds[k], h)
	return h
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
	for _, h := range held {
		if !h.released {
			h.entered = true
			m.holding++
		}
	}
	m.mu.Unlock()
	for _, h := range held {
		close(h.Entered)
		<-h.release
	}
}

package main

import (
	"context"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	memorygen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

// alwaysSource makes every roll of a dice fire (Float64 is 0, below any
// rate) and every intn pick 0.
type alwaysSource struct{}

func (alwaysSource) Int63() int64 { return 0 }
func (alwaysSource) Seed(int64)   {}

// TestEveryFaultStagedIsTallied: each fault the chaos SDK stages is
// counted by its kind, once per key it is staged for, so a report's
// fault counts say what the soak covered. A get of two keys whose every
// roll fires stages a TRANSFER_FAIL still writing for each key.
func TestEveryFaultStagedIsTallied(t *testing.T) {
	m := fakesdk.NewMaster(0)
	tl := &tally{faults: map[string]int{}}
	c := &chaosSDK{inner: fakesdk.NewClient(m, fakesdk.Version), m: m, d: &dice{rng: rand.New(alwaysSource{})}, t: tl}
	bufs := []mooncake.Buffer{mooncake.BufferOf(make([]byte, 64)), mooncake.BufferOf(make([]byte, 64))}
	_, err := c.BatchGetInto([]string{"a", "b"}, bufs)
	assert.ErrorIs(t, err, errChaos, "every roll fires: the call raises before reaching the SDK")
	assert.Equal(t, 2, tl.faults["transfer_fail_still_writing"], "one per key: %v", tl.faults)
	m.Wait()
}

// TestAStuckPutOutlivesItsSession: the put_stuck_past_discard fault is
// what it says: the fake master's clock passes its discard timeout while
// the put is stuck, so the session the put writes under is one the master
// may discard, and the fault is tallied.
func TestAStuckPutOutlivesItsSession(t *testing.T) {
	m := fakesdk.NewMaster(0)
	tl := &tally{faults: map[string]int{}}
	c := &chaosSDK{inner: fakesdk.NewClient(m, fakesdk.Version), m: m, d: &dice{rng: rand.New(alwaysSource{})}, t: tl}
	before := m.Now()
	_, _ = c.BatchPutFromMultiBufferRanges([]string{"a"}, [][]mooncake.Buffer{{mooncake.BufferOf(make([]byte, 64))}})
	assert.Greater(t, m.Now().Sub(before), fakesdk.DefaultDiscard, "the master's clock passed the discard timeout")
	assert.Equal(t, 1, tl.faults["put_stuck_past_discard"], "%v", tl.faults)
	m.Wait()
}

// TestAStagedCodeIsAnswered: a code the chaotic memory store stages for a
// row is the one the row's call answers, so a random_code fault in a
// report is one the backend met. A put whose every roll fires stages the
// first code after OK, and answers it.
func TestAStagedCodeIsAnswered(t *testing.T) {
	region := &driver.Region{Name: "r", Kind: driver.Host, Layout: driver.Layout{SlotBytes: 64, Slots: 1}, Mem: make([]byte, 64)}
	tl := &tally{faults: map[string]int{}}
	c := &chaosMemory{Driver: memory.New(memory.Options{}), d: &dice{rng: rand.New(alwaysSource{})}, t: tl}
	_, err := c.Register(region)
	require.NoError(t, err)
	op, err := c.Put(context.Background(), []driver.Row{{Key: "k", Spans: []driver.Span{region.Slot(0)}}})
	require.NoError(t, err)
	res, done := op.Poll()
	require.True(t, done, "a blocking store's put is finished when it returns")
	want := memorygen.Memory().Codes()[1]
	if assert.Len(t, res, 1) {
		assert.Equal(t, int64(want), res[0].Code, "the put answers the staged %v: %v", want, res[0])
	}
	assert.Equal(t, 1, tl.faults["random_code"], "%v", tl.faults)
	// Every roll fired, lost_access_evidence too: the put's access is never
	// proven to end, so its region stays registered; the delay's timer is
	// all that is left to wait for (goleak checks).
	c.wg.Wait()
}

// TestALingeringAccessEndsOnlyAfterTheInnerOne: the chaos lets an
// operation's access linger past its own end, never end before it: while
// the inner operation's access is open, the lingering one stays open
// however often it is polled; once the inner one ended and its results
// are final, it ends after its hold.
func TestALingeringAccessEndsOnlyAfterTheInnerOne(t *testing.T) {
	inner := &switchOp{}
	var wg sync.WaitGroup
	l := &lingerOp{Operation: inner, wg: &wg}
	for range 3 {
		_, done := l.Poll()
		assert.True(t, done)
		wg.Wait() // any release timer the poll started
		assert.False(t, l.AccessEnded(), "the inner access is still open")
	}
	inner.ended.Store(true)
	l.Poll()
	wg.Wait()
	assert.True(t, l.AccessEnded(), "the inner access ended and the hold passed")
}

// switchOp is a finished operation whose access ends when ended is set.
type switchOp struct {
	openOp
	ended atomic.Bool
}

func (*switchOp) Poll() ([]driver.Result, bool) { return nil, true }
func (s *switchOp) AccessEnded() bool           { return s.ended.Load() }

package main

import (
	"math/rand"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
)

// drawSource gives a rand.Rand's draws in order: Float64 is each value
// over 2^63, Intn(n) of a small n its high bits modulo n.
type drawSource struct{ vals []int64 }

func (s *drawSource) Int63() int64 {
	v := s.vals[0]
	if len(s.vals) > 1 {
		s.vals = s.vals[1:]
	}
	return v
}
func (*drawSource) Seed(int64) {}

// float is the Int63 whose Float64 is f (f a multiple of 2^-53).
func float(f float64) int64 { return int64(f * (1 << 63)) }

// cancelCounter is an open attempt that counts its cancels.
type cancelCounter struct {
	fakeAttempt
	cancels *int
}

func (c cancelCounter) Cancel() { *c.cancels++ }

// TestAStepCancelsAnOpenAttemptAtTheCancelRate: a step cancels one open
// attempt when its draw falls below cancelRate and none at or above it,
// so cancels stay rare (most attempts run to their end and have their
// READY rows checked); with no attempt open it neither draws nor cancels.
func TestAStepCancelsAnOpenAttemptAtTheCancelRate(t *testing.T) {
	below := float(cancelRate) - 128 // the largest Int63 whose Float64 is below the rate
	for _, c := range []struct {
		draw int64
		open int
		want int
	}{
		{float(0), 2, 1},
		{float(0), 1, 1},
		{below, 2, 1},
		{float(cancelRate), 2, 0},
		{float(0.5), 2, 0},
		{float(0), 0, 0},
	} {
		src := &drawSource{vals: []int64{c.draw, 0}}
		e := &epoch{rng: rand.New(src), t: &tally{faults: map[string]int{}}}
		cancels := 0
		for range c.open {
			e.open = append(e.open, &attempt{a: cancelCounter{cancels: &cancels}})
		}
		e.maybeCancel()
		assert.Equal(t, c.want, cancels, "draw %v with %d open", float64(c.draw)/(1<<63), c.open)
		assert.Equal(t, c.want, e.t.faults["cancel"], "each cancel is tallied")
		if c.open == 0 {
			assert.Len(t, src.vals, 2, "no draw with no attempt open")
		}
	}
}

// TestAnEpochEndsOnlyOnceItsStoreLetGoOfEveryCall: an epoch's shutdown
// returns only after every call the chaotic memory store was told to hold
// has been let go (its release timer fired), so that nothing of an epoch
// still runs in its store when the epoch's last checks read its slots, or
// when the next epoch starts. The hold here is staged for a call that
// never comes, so the backend stops at once and only the release is left
// to wait for. In a synctest bubble the clock moves only while every
// goroutine waits: shutdown returning before the release's time came is
// shutdown not waiting for it.
func TestAnEpochEndsOnlyOnceItsStoreLetGoOfEveryCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tl := &tally{faults: map[string]int{}}
		e, err := newEpoch("memory", rand.New(rand.NewSource(1)), tl)
		require.NoError(t, err)
		// Every roll fires, and a held call is released after just under
		// a millisecond, the longest the chaos holds one.
		const hold = time.Millisecond - time.Nanosecond
		e.chaosMC.d = &dice{rng: rand.New(&drawSource{vals: []int64{int64(hold) << 32}})}
		e.chaosMC.stage(memory.CallGet, []driver.Row{{Key: e.key(3)}})
		require.Equal(t, 1, tl.faults["delay"], "the chaos held the key's next get")
		start := time.Now()
		e.shutdown(&Report{})
		assert.GreaterOrEqual(t, time.Since(start), hold, "the epoch's shutdown returned while its store still held a call")
		assert.Empty(t, tl.violations)
	})
}

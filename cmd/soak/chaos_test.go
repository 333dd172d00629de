package main

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"

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

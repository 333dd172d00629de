package fakesdk_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

// TestAThawAppliesTheKeysAsSent: a request that timed out on a frozen
// master takes effect when it thaws, on the keys and sizes it was sent
// with, although its caller reused its slices once the call returned.
func TestAThawAppliesTheKeysAsSent(t *testing.T) {
	m := fakesdk.NewMaster(4 << 10)
	c := fakesdk.NewClient(m, fakesdk.Version)
	m.FreezeMaster()
	keys, sizes := []string{"a"}, []int64{1 << 10}
	var codes []int64
	require.NoError(t, m.Await(m.Go(func() { codes, _ = c.BatchPutSessionStart(keys, sizes) })))
	assert.Equal(t, []int64{-901}, codes, "RPC_TIMEOUT")
	keys[0], sizes[0] = "b", 1<<20
	m.ThawMaster()
	assert.True(t, m.SessionOpen("a"), "the start applied at the thaw is a's")
	assert.False(t, m.SessionOpen("b"))
}

// TestALookupAppliedAtThawTakesItsLease: a get whose lookup timed out on a
// frozen master leases the key it asked for when the master thaws, so the
// eviction thread spares that object, not the one the caller's reused
// slice names by then.
func TestALookupAppliedAtThawTakesItsLease(t *testing.T) {
	m := fakesdk.NewMaster(3)
	k := fakesdk.DefaultKnobs()
	k.Evicts = true
	m.SetKnobs(k)
	c := fakesdk.NewClient(m, fakesdk.Version)
	m.Plant("old", []byte{1})
	m.Advance(time.Second)
	m.Plant("new", []byte{2})
	m.Advance(time.Hour) // no lease is left
	m.FreezeMaster()
	keys := []string{"old"}
	buf := make([]byte, 1)
	var codes []int64
	require.NoError(t, m.Await(m.Go(func() { codes, _ = c.BatchGetInto(keys, []mooncake.Buffer{mooncake.BufferOf(buf)}) })))
	assert.Equal(t, []int64{-901}, codes, "RPC_TIMEOUT")
	keys[0] = "new"
	m.ThawMaster()
	m.Plant("full", []byte{3}) // the pool is full
	m.Advance(time.Second)     // and the eviction thread runs: the oldest object without a lease goes
	_, old := m.Object("old")
	_, young := m.Object("new")
	assert.True(t, old, "the thawed lookup leased old")
	assert.False(t, young, "so new, unleased, was evicted")
}

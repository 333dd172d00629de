package fakesdk

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/stores/mooncake"
)

// TestATransferOfTheFixedArenaCopiesWithoutTheLock: a scatter into the
// fixed arena and a get out of it copy their bytes with the master's lock
// released, so another call made while the bytes move goes on at once; the
// bytes land all the same, and the lock is the master's again once the
// call returns. A call that moves no bytes keeps the lock throughout.
// (Tried: the get's condition '> 0' as '<= 0' copies under the lock, and
// as '>= 0' releases it with nothing to copy; the scatter's 'defer
// m.mu.Unlock()' dropped leaves the next call waiting for ever, which
// fails here within the bound.)
func TestATransferOfTheFixedArenaCopiesWithoutTheLock(t *testing.T) {
	const wait = 10 * time.Second
	for _, tc := range []struct {
		name   string
		copies int // copies made with the lock released
		call   func(t *testing.T, m *Master, c *Client)
	}{
		{"a scatter", 1, func(t *testing.T, m *Master, c *Client) {
			codes, err := c.BatchPutSessionStart([]string{"k"}, []int64{3})
			require.NoError(t, err)
			require.Equal(t, []int64{0}, codes)
			codes, err = c.BatchPutFromMultiBufferRanges([]string{"k"}, [][]mooncake.Buffer{{mooncake.BufferOf([]byte{1, 2, 3})}})
			require.NoError(t, err)
			assert.Equal(t, []int64{3}, codes, "the bytes written")
			codes, err = c.BatchPutSessionEnd([]string{"k"})
			require.NoError(t, err)
			require.Equal(t, []int64{0}, codes)
			obj, _ := m.Object("k")
			assert.Equal(t, []byte{1, 2, 3}, obj)
		}},
		{"a get", 1, func(t *testing.T, m *Master, c *Client) {
			m.Plant("k", []byte{1, 2, 3})
			buf := make([]byte, 3)
			codes, err := c.BatchGetInto([]string{"k"}, []mooncake.Buffer{mooncake.BufferOf(buf)})
			require.NoError(t, err)
			assert.Equal(t, []int64{3}, codes, "the object's length")
			assert.Equal(t, []byte{1, 2, 3}, buf)
		}},
		{"a get that finds nothing", 0, func(t *testing.T, m *Master, c *Client) {
			codes, err := c.BatchGetInto([]string{"k"}, []mooncake.Buffer{mooncake.BufferOf(make([]byte, 3))})
			require.NoError(t, err)
			assert.Equal(t, []int64{codeObjectNotFound}, codes)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMaster(4 << 10)
			if !m.fixed {
				t.Skip("no fixed arena on this platform: every copy holds the lock")
			}
			c := NewClient(m, Version)
			copies := 0
			m.copying = func() {
				copies++
				bound.Within(t, wait, "a call while a copy runs", func() { m.Calls(CallGet) })
			}
			bound.Within(t, wait, tc.name, func() { tc.call(t, m, c) })
			assert.Equal(t, tc.copies, copies, "copies made with the lock released")
			bound.Within(t, wait, "a call after the transfer", func() { m.Calls(CallGet) })
		})
	}
}

// TestAGetThatReadsNothingLeavesNoReader: a get whose transfer from the
// owner's segment never runs (the owner killed, or frozen past the status
// timeout) ends its read of the object when it answers, and one whose
// transfer goes on past its answer ends it when the owner thaws: so an
// object dropped later is spare for the next put instead of lost to the
// spares for good. (Tried: dropping the unread of the frozen owner's
// given-up transfer fails the second case.)
func TestAGetThatReadsNothingLeavesNoReader(t *testing.T) {
	for _, tc := range []struct {
		name  string
		knobs func(*Knobs)
		env   func(*Master) // the owner's state during the get
		after func(*Master) // what ends it, after the get answered
	}{
		{"the owner killed", nil, (*Master).KillPeer, nil},
		{"the owner frozen past the status timeout", nil, (*Master).FreezePeer, nil},
		{"the owner frozen past the transfer wait, the transfer going on", func(k *Knobs) { k.StatusTimeout = 2 * k.TransferWait }, (*Master).FreezePeer, (*Master).ThawPeer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMaster(4 << 10)
			if tc.knobs != nil {
				k := DefaultKnobs()
				tc.knobs(&k)
				m.SetKnobs(k)
			}
			m.SetOwner(NewClient(m, Version))
			c := NewClient(m, Version)
			m.Plant("k", []byte{1, 2, 3})
			m.mu.Lock()
			o := m.objects["k"] // the owner's expiry may drop it meanwhile
			m.mu.Unlock()
			tc.env(m)
			buf := make([]byte, 3)
			var codes []int64
			// Each step is bounded: a wait that never settles or a lock a
			// broken line keeps fails here in seconds, not at the binary's
			// timeout.
			err := bound.Value(t, 30*time.Second, "the get", func() error {
				return m.Await(m.Go(func() { codes, _ = c.BatchGetInto([]string{"k"}, []mooncake.Buffer{mooncake.BufferOf(buf)}) }))
			})
			require.NoError(t, err)
			assert.Equal(t, []int64{codeTransferFail}, codes)
			if tc.after != nil {
				bound.Within(t, 30*time.Second, "what ends the transfer", func() { tc.after(m) })
			}
			bound.Within(t, 30*time.Second, "taking the master's lock", m.mu.Lock)
			defer m.mu.Unlock()
			assert.Zero(t, o.readers, "gets still reading k")
		})
	}
}

package fakesdk_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
)

// TestAStartFindsNoSpaceWhileTheSegmentIsAway: a put's start answers
// NO_AVAILABLE_HANDLE while the pool's only segment is not mounted, for
// either reason alone: the master restarted and its owner has not yet
// mounted it again (Knobs.Remount), or the master expired its silent
// owner (Knobs.ClientTTL) and unmounted it. After a remount the start
// finds space again.
func TestAStartFindsNoSpaceWhileTheSegmentIsAway(t *testing.T) {
	k := fakesdk.DefaultKnobs()
	for _, c := range []struct {
		name string
		away func(m *fakesdk.Master)
		back func(m *fakesdk.Master) // nil: the segment stays away
	}{
		{"the master restarted, its owner not yet remounted", func(m *fakesdk.Master) {
			m.KillMaster()
			m.RestartMaster()
		}, func(m *fakesdk.Master) { m.Advance(k.Remount) }},
		{"the master expired the owner", func(m *fakesdk.Master) {
			m.KillPeer()
			m.Advance(k.ClientTTL + time.Second)
		}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := fakesdk.NewMaster(4 << 10)
			owner := fakesdk.NewClient(m, fakesdk.Version)
			m.SetOwner(owner)
			c2 := fakesdk.NewClient(m, fakesdk.Version)
			c.away(m)
			// The first call after a master restart fails on the connection
			// that died with it (RPC_FAIL); the next one connects again.
			_, err := c2.BatchPutSessionStart([]string{"reconnect"}, []int64{1 << 10})
			require.NoError(t, err)
			codes, err := c2.BatchPutSessionStart([]string{"a"}, []int64{1 << 10})
			require.NoError(t, err)
			assert.Equal(t, []int64{int64(mooncakegen.NoAvailableHandle)}, codes, "a start while the segment is away")
			if c.back == nil {
				return
			}
			c.back(m)
			codes, err = c2.BatchPutSessionStart([]string{"b"}, []int64{1 << 10})
			require.NoError(t, err)
			assert.Equal(t, []int64{int64(mooncakegen.OK)}, codes, "a start once the segment is back")
		})
	}
}

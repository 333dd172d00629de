package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/stores/redis"
)

// Open wires the lanes the options ask for: gets on a client of their own
// unless FetchesShareConns, and publish connections that yield to them
// only with PublishesYield (off by default: it cost publish bandwidth for
// no measured gain in the fetch tail).
func TestOpenWiresTheLanesTheOptionsAskFor(t *testing.T) {
	needServer(t)
	for _, c := range []struct {
		name              string
		share, yield      bool
		ownGets, yielding bool
	}{
		{"by default gets have their own connections and publishes do not yield", false, false, true, false},
		{"PublishesYield makes the publishes yield to the gets", false, true, true, true},
		{"FetchesShareConns puts the gets on the publishes' connections", true, false, false, false},
		{"with shared connections there is nothing to yield to", true, true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := redis.Open(context.Background(), redis.Options{Addrs: standalone().Addrs, FetchesShareConns: c.share, PublishesYield: c.yield})
			require.NoError(t, err)
			ownGets, yielding := redis.Lanes(d)
			assert.Equal(t, c.ownGets, ownGets, "gets on a client of their own")
			assert.Equal(t, c.yielding, yielding, "publishes yield")
			require.True(t, d.Drain(conformance.Within(time.Second)))
			require.NoError(t, d.Close())
		})
	}
}

package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/redis"
)

// Open wires the lanes the options ask for: gets on a client of their own
// unless FetchesShareConns, and publish connections that yield to them
// only with PublishesYield (off by default: it cost publish bandwidth for
// no measured gain in the fetch tail). Gets through each wiring return:
// each is bounded, so a lock the lanes never release (the gate's, with
// PublishesYield) fails here in seconds, naming the get, instead of
// hanging the package's tests.
func TestOpenWiresTheLanesTheOptionsAskFor(t *testing.T) {
	redis7.Need(t)
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
			r, err := hostmem.Map("slots", driver.Layout{SlotBytes: 4 << 10, Slots: 1})
			require.NoError(t, err)
			reg, err := d.Register(r.Region)
			require.NoError(t, err)
			row := driver.Row{Key: fmt.Sprintf("lanes-%d/v1/00", time.Now().UnixNano()), Spans: []driver.Span{r.Slot(0)}}
			for i := range 3 {
				bound.Within(t, 5*time.Second, fmt.Sprintf("get %d of an absent key", i+1), func() {
					op, err := d.Get(context.Background(), []driver.Row{row}, driver.Hint{})
					if !assert.NoError(t, err) {
						return
					}
					res, ok := conformance.WaitResults(op, 5*time.Second)
					if assert.True(t, ok, "the get's results") {
						assert.Equal(t, driver.Miss, res[0].Status, "%v", res[0])
					}
				})
			}
			require.True(t, d.Drain(conformance.Within(time.Second)))
			require.NoError(t, d.Unregister(reg))
			require.True(t, d.Drain(conformance.Within(time.Second)))
			require.NoError(t, d.Close())
			require.NoError(t, r.Close())
		})
	}
}

package backend

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
)

// TestShutdownLearningOfThePinFromDoneIsAnError: Shutdown returns nil only
// once the backend finished (drained and unregistered). When the progress
// goroutine stops because a call is pinned, Shutdown may learn it from
// Done rather than from its attempts (here no attempt is open, so only
// Done can tell it); it must still return a *ShutdownError, since the
// lender's memory may be touched.
func TestShutdownLearningOfThePinFromDoneIsAnError(t *testing.T) {
	lender, err := hostmem.NewLender("slots", driver.Layout{SlotBytes: 4096, Slots: 4})
	require.NoError(t, err)
	hold, err := lender.Hold()
	require.NoError(t, err)
	bind, err := Bind(t.Context(), hold.Regions(), memory.New(memory.Options{}), hold)
	require.NoError(t, err)
	be, err := New(bind, Config{})
	require.NoError(t, err)
	be.mu.Lock()
	be.stats.BatchesUnprovable = 1 // a call pinned, its attempt already gone
	be.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = be.Shutdown(ctx)
	var se *ShutdownError
	require.True(t, errors.As(err, &se), "Shutdown answered %v after the backend stopped pinned; want a *ShutdownError", err)
	assert.NoError(t, se.Err, "Shutdown learned of the pin from Done, before its budget ran out")
	assert.False(t, be.Stats().ShutDown)
	select {
	case <-be.Done():
	default:
		t.Fatal("Done is not closed after Shutdown returned the pin")
	}
	assert.False(t, hold.Released(), "the hold stays out: the memory is kept")
}

// TestShutdownErrorNeverReadsAsSafe: while any attempt is pinned or still
// settling, the message says first that a store may still write its
// slots, whatever spans the unprovable calls named (a settling attempt
// names none).
func TestShutdownErrorNeverReadsAsSafe(t *testing.T) {
	r := &driver.Region{Name: "r"}
	cases := []struct {
		err  ShutdownError
		want string
	}{
		{ShutdownError{Settling: 1, Registered: []*driver.Region{r}},
			`backend: shutdown did not finish: a store may still write the slots of 1 attempts (0 pinned by unprovable calls, which may write them at any time; 1 still settling), 1 regions still registered ["r"]; the hold is kept: keep the lender's memory`},
		{ShutdownError{Pinned: 2, Kept: []driver.Span{{Region: r}}, Registered: []*driver.Region{r}},
			`backend: shutdown did not finish: a store may still write the slots of 2 attempts (2 pinned by unprovable calls, which may write them at any time; 0 still settling), 1 regions still registered ["r"]; the hold is kept: keep the lender's memory`},
		{ShutdownError{Registered: []*driver.Region{r}, Unregistering: errors.New("no")},
			`backend: shutdown did not finish, 1 regions still registered ["r"]; the hold is kept: keep the lender's memory; the driver would not unregister: no`},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

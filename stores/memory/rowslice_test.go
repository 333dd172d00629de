package memory_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/memory"
)

// TestAnOpOutlivingItsCallKeepsItsOwnRows: a background driver's put of
// one row moves it after Put returned, from a copy of the caller's slice,
// so the caller may reuse the slice at once: the row put is the one
// passed, not what the slice holds later. (Tried: the one-row copy taken
// only by a blocking driver has the op read the caller's slice as it is
// rewritten, which -race reports, or puts the later row.)
func TestAnOpOutlivingItsCallKeepsItsOwnRows(t *testing.T) {
	f := newFixture(t, memory.Options{Mode: memory.Background})
	f.fill(0, 1)
	rows := []driver.Row{f.row("k", 0)}
	op, err := f.d.Put(context.Background(), rows)
	require.NoError(t, err)
	rows[0] = f.row("later", 2) // the caller reuses its slice
	res := wait(t, op)
	require.Equal(t, driver.Ready, res[0].Status, "%v", res[0])
	got, _ := f.getInto(t, "k")
	assert.Equal(t, driver.Ready, got.Status, "the row passed to Put: %v", got)
	got, _ = f.getInto(t, "later")
	assert.Equal(t, driver.Miss, got.Status, "the row the slice held later: %v", got)
}

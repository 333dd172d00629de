package fs_test

import (
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/fskit"
	"github.com/kvblob/kvblob/runtime/driver"
)

// TestAPutNeverReleasesAMarkerAnotherWriterTookOver: a writer held between
// its write and its rename past its marker's TTL loses the marker to
// another writer, who replaces it with its own. When the first writer
// finishes, it removes only the marker it created, by identity (device and
// inode), so the other writer's marker stays: readers still see the key
// as being written, and a third writer is kept out.
func TestAPutNeverReleasesAMarkerAnotherWriterTookOver(t *testing.T) {
	f := newFx(t)
	k := key(t, "a")
	_, marker, err := f.kit.Paths(k)
	require.NoError(t, err)
	entered, release := f.kit.Seam.Hold("publish", k)
	done := make(chan driver.Result, 1)
	go func() { done <- f.Put(f.Row(k, 0, 1))[0] }()
	<-entered

	// The other writer's marker takes the name over (a new file renamed
	// onto it, so both exist at once and their inodes differ).
	require.NoError(t, fskit.Plant(marker+".other", nil))
	require.NoError(t, os.Rename(marker+".other", marker))
	theirs, err := os.Lstat(marker)
	require.NoError(t, err)
	release()
	res := <-done
	t.Logf("the first writer's put: %v", res)

	now, err := os.Lstat(marker)
	require.NoError(t, err, "the first writer removed the marker another writer took over")
	assert.Equal(t, theirs.Sys().(*syscall.Stat_t).Ino, now.Sys().(*syscall.Stat_t).Ino, "the marker is the other writer's")
	third := f.Put(f.Row(k, 1, 2))
	assert.Equal(t, driver.NotReady, third[0].Status, "a third writer is kept out while the other writer's marker is live: %v", third[0])
}

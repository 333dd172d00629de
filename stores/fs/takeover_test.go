package fs_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/fskit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/fs"
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

// TestAFreshMarkerSwappedInDuringATakeoverIsPutBack: a writer taking over
// a dead marker moves it aside, then checks that what it moved is the
// marker it judged dead. When another writer replaced that marker with a
// fresh one of its own in between, the fresh marker goes back under its
// name and the put is NOT_READY: two writers never hold one key (tried:
// inverting the identity check takes the fresh marker over, READY).
func TestAFreshMarkerSwappedInDuringATakeoverIsPutBack(t *testing.T) {
	clock := fskit.NewClock()
	var marker string
	var fresh uint64
	// The driver reads the clock right after it lstat'ed the old marker,
	// to judge it dead: that is when the other writer's marker takes the
	// name (a new file renamed onto it, dated now, so live).
	now := func() time.Time {
		if marker != "" && fresh == 0 { // on the driver's goroutine: t.Error, not t.Fatal
			st, err := swapIn(marker, clock.Now())
			if err != nil {
				t.Errorf("swapping the other writer's marker in: %v", err)
				return clock.Now()
			}
			fresh = st.Sys().(*syscall.Stat_t).Ino
		}
		return clock.Now()
	}
	f, k, m := plantedMarker(t, fs.Options{MarkerTTL: time.Second, Now: now}, clock.Now())
	clock.Advance(2 * time.Second) // the planted marker's writer is dead
	marker = m

	res := f.Put(f.Row(k, 0, 1))[0]
	require.NotZero(t, fresh, "the clock was never read during the claim")
	assert.Equal(t, driver.NotReady, res.Status, "%v", res)
	st, err := os.Lstat(m)
	require.NoError(t, err, "the other writer's marker is gone")
	assert.Equal(t, fresh, st.Sys().(*syscall.Stat_t).Ino, "the marker under the name is the other writer's")
}

// swapIn renames a new marker dated at onto marker, as another writer's
// claim does, and returns what is then under the name.
func swapIn(marker string, at time.Time) (os.FileInfo, error) {
	if err := fskit.Plant(marker+".fresh", nil); err != nil {
		return nil, err
	}
	if err := os.Chtimes(marker+".fresh", at, at); err != nil {
		return nil, err
	}
	if err := os.Rename(marker+".fresh", marker); err != nil {
		return nil, err
	}
	return os.Lstat(marker)
}

// TestADeadMarkerIsTakenOverOnceAPut: a put that finds a dead writer's
// marker takes it over and tries its exclusive create once more; when a
// marker is under the name again by then (another writer took the key
// over and died in turn), the put gives up NOT_READY and leaves that
// marker alone: one retry, never a loop of takeovers among writers. Making
// the retry bound `attempt > 1` (or its `||` an `&&`) takes the second
// marker over and answers READY; tried, both fail here.
func TestADeadMarkerIsTakenOverOnceAPut(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	now := func() time.Time { return start.Add(time.Hour) } // every planted marker is dead
	f, k, marker := plantedMarker(t, fs.Options{MarkerTTL: time.Second, Now: now}, start)
	var attempts []int
	var second uint64
	fs.OnMarkerAttempt(f.Driver.(*fs.Driver), func(attempt int) {
		attempts = append(attempts, attempt)
		if attempt != 1 {
			return
		}
		// Between the takeover and the retry, another dead writer's marker.
		st, err := swapIn(marker, start)
		require.NoError(t, err)
		second = st.Sys().(*syscall.Stat_t).Ino
	})

	res := f.Put(f.Row(k, 0, 1))[0]
	assert.Equal(t, driver.NotReady, res.Status, "%v", res)
	assert.Equal(t, []int{0, 1}, attempts, "one retry after the takeover")
	st, err := os.Lstat(marker)
	require.NoError(t, err, "the second marker is gone")
	assert.Equal(t, second, st.Sys().(*syscall.Stat_t).Ino, "the marker under the name is the one planted before the retry")
}

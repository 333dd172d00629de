package fs_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/claim"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/fs"
)

// TestAPutNeverReleasesAMarkerAnotherWriterTookOver: a writer held between
// its write and its rename past its marker's TTL loses the marker to
// another writer, who replaces it with its own. When the first writer
// finishes, it removes only the marker holding its own token, so the other
// writer's marker stays: readers still see the key as being written, and
// a third writer is kept out. The other marker comes as a new file renamed
// onto the name (another inode), or in the first writer's own inode
// (rewritten in place: what a filesystem reusing the number looks like to
// device and inode; tried: releasing by device and inode removes it).
func TestAPutNeverReleasesAMarkerAnotherWriterTookOver(t *testing.T) {
	for _, tc := range []struct {
		name string
		take func(marker string, tok claim.Token) error
	}{
		{"renamed", func(marker string, tok claim.Token) error {
			if err := Plant(marker+".other", tok.AppendText(nil)); err != nil {
				return err
			}
			return os.Rename(marker+".other", marker)
		}},
		{"rewritten", func(marker string, tok claim.Token) error {
			return os.WriteFile(marker, tok.AppendText(nil), 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFx(t)
			k := key(t, "a")
			_, marker, err := f.kit.Paths(k)
			require.NoError(t, err)
			entered, release := f.kit.Seam.Hold("publish", k)
			done := make(chan driver.Result, 1)
			go func() { done <- f.Put(f.Row(k, 0, 1))[0] }()
			<-entered

			theirs := claim.New()
			require.NoError(t, tc.take(marker, theirs))
			release()
			res := <-done
			t.Logf("the first writer's put: %v", res)

			b, err := os.ReadFile(marker)
			require.NoError(t, err, "the first writer removed the marker another writer took over")
			assert.Equal(t, theirs, claim.Parse(b), "the marker is the other writer's")
			third := f.Put(f.Row(k, 1, 2))
			assert.Equal(t, driver.NotReady, third[0].Status, "a third writer is kept out while the other writer's marker is live: %v", third[0])
		})
	}
}

// TestAFreshMarkerSwappedInDuringATakeoverIsPutBack: a writer taking over
// a dead marker moves it aside, then checks that what it moved is the
// marker it judged dead. When another writer replaced that marker with a
// fresh one of its own in between, the fresh marker goes back under its
// name and the put is NOT_READY: two writers never hold one key (tried:
// inverting the identity check takes the fresh marker over, READY).
func TestAFreshMarkerSwappedInDuringATakeoverIsPutBack(t *testing.T) {
	clock := NewClock()
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
	if err := Plant(marker+".fresh", nil); err != nil {
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

// TestAMarkerReleasedBetweenCreateAndReadIsRetried: a put whose exclusive
// create finds another writer's live marker, which that writer then
// releases before the put reads it, creates its own marker on its one
// retry and answers READY, with the bytes stored; a second release, of a
// marker that came back before the retry, is NOT_READY (one retry, never
// a loop). Reading the vanished marker's ENOENT as an error instead (the
// `continue` made a return) answers the first put a FAULT; tried.
func TestAMarkerReleasedBetweenCreateAndReadIsRetried(t *testing.T) {
	for _, c := range []struct {
		name  string
		comes bool // another live marker is under the name again before the retry
		want  driver.Status
	}{
		{"released", false, driver.Ready},
		{"released and taken again", true, driver.NotReady},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Unix(1_700_000_000, 0)
			now := func() time.Time { return start } // the planted marker is live
			f, k, marker := plantedMarker(t, fs.Options{MarkerTTL: time.Hour, Now: now}, start)
			d := f.Driver.(*fs.Driver)
			found := 0
			fs.OnMarkerFound(d, func() {
				found++
				require.NoError(t, os.Remove(marker), "the other writer's release")
			})
			var attempts []int
			fs.OnMarkerAttempt(d, func(attempt int) {
				attempts = append(attempts, attempt)
				if attempt == 1 && c.comes {
					require.NoError(t, Plant(marker, nil))
					require.NoError(t, os.Chtimes(marker, start, start))
				}
			})
			row := f.Row(k, 0, 1)
			res := f.Put(row)[0]
			require.Equal(t, c.want, res.Status, "%v", res)
			assert.Equal(t, []int{0, 1}, attempts, "one retry after the release")
			assert.Equal(t, 1, found, "the marker was found under the name once")
			if c.want != driver.Ready {
				return
			}
			dst := f.Row(k, 1, storekit.Dest)
			require.Equal(t, driver.Ready, f.Get(dst)[0].Status)
			assert.Equal(t, row.Spans[0].Bytes(), dst.Spans[0].Bytes(), "the put's bytes are not what the key holds")
			_, err := os.Lstat(marker)
			assert.True(t, os.IsNotExist(err), "the put left its marker: %v", err)
		})
	}
}

// TestATakeoverNeverMovesAFreshMarkerInADeadOnesInode: a writer judges a
// marker dead; before it moves the marker aside, another writer takes the
// key over (the dead marker removed) and makes its own fresh marker, which
// the filesystem gives the dead one's inode number. The first writer must
// not take that marker for the dead one: it puts it back and answers
// NOT_READY, and the marker under the name is still the other writer's
// (its token). Judged by device and inode, the first writer moved the
// fresh marker aside, removed it and answered READY: two writers on one
// key.
//
// "reused" stages it for real: on a filesystem that hands a freed inode's
// number to the next file (ext4, in the temporary directory), the other
// writer's marker is made until it gets the number (skipped, naming why,
// where the filesystem will not). "rewritten" stages it on any filesystem:
// the dead marker's own inode is rewritten as the fresh marker (its token,
// its mtime), the one thing device and inode cannot tell from it.
func TestATakeoverNeverMovesAFreshMarkerInADeadOnesInode(t *testing.T) {
	for _, tc := range []struct {
		name  string
		root  func(t *testing.T) string
		fresh func(marker string, ino uint64, tok claim.Token, at time.Time) (bool, error)
	}{
		{"reused", func(t *testing.T) string { return t.TempDir() }, reuseInode},
		{"rewritten", func(t *testing.T) string { return tree.Value().Dir }, rewriteInPlace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewClock()
			var marker string
			var ino uint64
			theirs := claim.New()
			staged, tried := false, false
			// The driver reads the clock as it judges the old marker: then
			// the other writer's marker takes the name.
			now := func() time.Time {
				if marker != "" && !tried { // on the driver's goroutine: t.Error, not t.Fatal
					tried = true
					var err error
					if staged, err = tc.fresh(marker, ino, theirs, clock.Now()); err != nil {
						t.Errorf("staging the other writer's marker: %v", err)
					}
				}
				return clock.Now()
			}
			root, err := os.MkdirTemp(tc.root(t), "reuse-")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(root) })
			d, err := fs.Open(fs.Options{Root: root, MarkerTTL: time.Second, Now: now})
			require.NoError(t, err)
			f := storekit.NewFx(t, d, 5*time.Second)
			k := key(t, "a")
			_, m, err := d.Paths(k)
			require.NoError(t, err)
			dead := claim.New()
			require.NoError(t, Plant(m, dead.AppendText(nil)))
			require.NoError(t, os.Chtimes(m, clock.Now(), clock.Now()))
			st, err := os.Lstat(m)
			require.NoError(t, err)
			ino = st.Sys().(*syscall.Stat_t).Ino
			clock.Advance(2 * time.Second) // the planted marker's writer is dead
			marker = m

			res := f.Put(f.Row(k, 0, 1))[0]
			require.True(t, tried, "the clock was never read during the claim")
			if !staged {
				t.Skipf("the filesystem under %s gave no new file inode %d back in %d tries; the rewritten case stages it", root, ino, reuseTries)
			}
			assert.Equal(t, driver.NotReady, res.Status, "a put took over a fresh marker in the dead one's inode: %v", res)
			b, err := os.ReadFile(m)
			require.NoError(t, err, "the other writer's marker is gone")
			assert.Equal(t, theirs, claim.Parse(b), "the marker under the name is the other writer's")
		})
	}
}

// reuseTries bounds reuseInode's makes of the fresh marker.
const reuseTries = 1000

// reuseInode removes the dead marker, as another writer's takeover does,
// and makes that writer's marker (holding tok, dated at) until the
// filesystem gives it inode ino; it reports whether it did.
func reuseInode(marker string, ino uint64, tok claim.Token, at time.Time) (bool, error) {
	if err := os.Remove(marker); err != nil {
		return false, err
	}
	for range reuseTries {
		if err := Plant(marker, tok.AppendText(nil)); err != nil {
			return false, err
		}
		if err := os.Chtimes(marker, at, at); err != nil {
			return false, err
		}
		st, err := os.Lstat(marker)
		if err != nil {
			return false, err
		}
		if st.Sys().(*syscall.Stat_t).Ino == ino {
			return true, nil
		}
		if err := os.Remove(marker); err != nil {
			return false, err
		}
	}
	return false, Plant(marker, tok.AppendText(nil))
}

// rewriteInPlace makes the dead marker's inode the other writer's fresh
// marker: its content tok, its mtime at.
func rewriteInPlace(marker string, _ uint64, tok claim.Token, at time.Time) (bool, error) {
	if err := os.WriteFile(marker, tok.AppendText(nil), 0o600); err != nil {
		return false, err
	}
	return true, os.Chtimes(marker, at, at)
}

package fs_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/fs"
)

// TestASweepKeepsADeadWritersFileForTheTTLAndTheSkew: a temporary file is
// swept only once it is older than MarkerTTL plus MaxClockSkew by the
// driver's clock, or dated more than MaxClockSkew ahead of it: a file past
// the TTL but within the skew is kept (its writer's clock may run behind
// ours by up to the skew), and one a millisecond past either bound is
// removed. Each bound is tried on both sides, at a skew set and at the
// default. (Tried: dead's margin dropped, MarkerTTL alone, fails "past the
// TTL, within the skew"; its ahead test without the skew fails "ahead by
// the skew".)
func TestASweepKeepsADeadWritersFileForTheTTLAndTheSkew(t *testing.T) {
	const ttl = 30 * time.Second
	for _, skew := range []struct {
		set, is time.Duration
	}{
		{5 * time.Second, 5 * time.Second},
		{0, fs.DefaultMaxClockSkew},
	} {
		t.Run(skew.is.String(), func(t *testing.T) {
			clock := NewClock()
			now := clock.Now()
			root, err := os.MkdirTemp(tree.Value().Dir, "margin-")
			require.NoError(t, err)
			t.Cleanup(func() { _ = os.RemoveAll(root) })
			d, err := fs.Open(fs.Options{Root: root, MarkerTTL: ttl, MaxClockSkew: skew.set, Now: clock.Now, SweepBudget: -1})
			require.NoError(t, err)
			t.Cleanup(func() { _ = d.Close() })
			file, _, err := d.Paths(key(t, "a"))
			require.NoError(t, err)
			for _, c := range []struct {
				name  string
				mtime time.Time
				swept bool
			}{
				{"past the TTL, within the skew", now.Add(-ttl - skew.is + time.Millisecond), false},
				{"past the TTL and the skew", now.Add(-ttl - skew.is - time.Millisecond), true},
				{"ahead by the skew", now.Add(skew.is), false},
				{"ahead by more than the skew", now.Add(skew.is + time.Millisecond), true},
				{"just written", now, false},
			} {
				t.Run(c.name, func(t *testing.T) {
					p := file + ".tmp-margin"
					require.NoError(t, Plant(p, []byte("x")))
					require.NoError(t, os.Chtimes(p, c.mtime, c.mtime))
					removed, err := d.Sweep(1 << 20)
					require.NoError(t, err)
					_, statErr := os.Stat(p)
					if c.swept {
						assert.Equal(t, 1, removed)
						assert.True(t, os.IsNotExist(statErr), "the file was kept")
					} else {
						assert.Zero(t, removed)
						assert.NoError(t, statErr, "the file was swept")
						require.NoError(t, os.Remove(p))
					}
					left, err := filepath.Glob(file + ".tmp-*")
					require.NoError(t, err)
					require.Empty(t, left)
				})
			}
		})
	}
}

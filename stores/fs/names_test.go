package fs_test

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	fsgen "github.com/kvblob/kvblob/generated/fs"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/stores/fs"
)

// TestOnlyKeysWithALowerCaseHexNameHaveFiles: a key's files are named
// by its lower-case hex name; an empty name, or one with any other
// character, has no files (it could name "..", a separator or a marker).
func TestOnlyKeysWithALowerCaseHexNameHaveFiles(t *testing.T) {
	f := newFx(t)
	for _, k := range []string{"fs-test/v1/", "fs-test/v1/ZZ", "fs-test/v1/0a.pending", "fs-test/v1/0g", "fs-test/nov1"} {
		_, _, err := f.kit.Paths(k)
		assert.Error(t, err, "key %q", k)
	}
	file, marker, err := f.kit.Paths("fs-test/v1/0a")
	require.NoError(t, err)
	assert.Equal(t, "0a", filepath.Base(file))
	assert.Equal(t, "0a.pending", filepath.Base(marker))
}

// TestAFailedPublishRemovesItsTemporaryFile: a publish that fails before
// its rename removes the temporary file it wrote, and Options.Trace is
// told of the write and of the removal (and of no rename).
func TestAFailedPublishRemovesItsTemporaryFile(t *testing.T) {
	root := t.TempDir()
	seam := &driverkit.Seam{}
	var events []fs.Event
	d, err := fs.Open(fs.Options{Root: root, Seam: seam, Trace: func(e fs.Event) { events = append(events, e) }})
	require.NoError(t, err)
	fx := storekit.NewFx(t, d, conformance.DefaultDeadline)
	k := key(t, "a")
	seam.Answer("publish", k, int64(fsgen.Eio))
	res := fx.Put(fx.Row(k, 0, 1))[0]
	require.Equal(t, driver.Fault, res.Status, "%v", res)
	var ops []string
	var files []fs.Event
	for _, e := range events {
		if e.Op != fs.EventMkdir && e.Op != fs.EventSyncDir { // the key's new directories
			ops = append(ops, string(e.Op))
			files = append(files, e)
		}
	}
	events = files
	require.Equal(t, []string{"write", "fsync", "remove"}, ops)
	assert.Equal(t, events[0].Path, events[2].Path, "the file removed is the one written")
	assert.True(t, strings.Contains(events[0].Path, ".tmp-"), "%s", events[0].Path)
	left, err := Listing(root)
	require.NoError(t, err)
	for _, l := range left {
		assert.NotContains(t, l, ".tmp-", "the temporary file is left")
	}
}

// TestAKeysLengthIsAdmittedAlikeByEveryResolver: one key bound on every
// host, whatever resolves its path. A key over driver.MaxKeyBytes is
// refused (DriverRejected, key_too_long, naming the bound) by Put and Get
// before any store call, through openat2 and through the component walk
// alike, and leaves no directory behind; a key of exactly the bound is
// READY and reads back through both. Without the bound, a 4 KiB name was
// READY through the walk (leaving a directory per 200 hex digits) and an
// ENAMETOOLONG FAULT through openat2: two hosts disagreed about one key.
func TestAKeysLengthIsAdmittedAlikeByEveryResolver(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "openat2", true: "walk"}[walk], func(t *testing.T) {
			f := newFx(t)
			d := f.kit.Driver
			if walk {
				fs.ForceWalk(d)
			}
			stem, err := driver.KeyStem("fs-tests") // a stem of even length: a key of exactly the bound
			require.NoError(t, err)
			name := func(n int) []byte { return []byte(strings.Repeat(t.Name()[:1], n)) }
			at, err := stem.Key(name((driver.MaxKeyBytes - len(stem.String())) / 2))
			require.NoError(t, err)
			require.Len(t, at, driver.MaxKeyBytes)

			for _, over := range []int{driver.MaxKeyBytes + 1, 4 << 10, 256 << 10} {
				k, err := stem.Key(name((over - len(stem.String()) + 1) / 2))
				require.NoError(t, err)
				before, err := Listing(f.kit.Root())
				require.NoError(t, err)
				for call, do := range map[string]func() (driver.Operation, error){
					"put": func() (driver.Operation, error) { return d.Put(context.Background(), []driver.Row{f.Row(k, 1, 1)}) },
					"get": func() (driver.Operation, error) {
						return d.Get(context.Background(), []driver.Row{f.Row(k, 1, 1)}, driver.Hint{})
					},
				} {
					_, err := do()
					var rej *driver.RejectedError
					require.ErrorAs(t, err, &rej, "a %s of a %d-byte key", call, len(k))
					assert.Equal(t, driver.RuleKeyTooLong, rej.Rule)
					assert.Contains(t, rej.Reason, strconv.Itoa(driver.MaxKeyBytes), "the refusal names the bound")
				}
				after, err := Listing(f.kit.Root())
				require.NoError(t, err)
				assert.Equal(t, before, after, "a refused key left files or directories")
			}

			require.Equal(t, driver.Ready, f.Put(f.Row(at, 0, 3))[0].Status, "a key of exactly the bound")
			dst := f.Row(at, 2, storekit.Dest)
			res := f.Get(dst)[0]
			require.Equal(t, driver.Ready, res.Status, "%v", res)
			assert.Equal(t, f.Row(at, 0, 3).Spans[0].Bytes(), dst.Spans[0].Bytes())
		})
	}
}

package fs_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	fsgen "github.com/kvblob/kvblob/generated/fs"
	"github.com/kvblob/kvblob/internal/blockingfx"
	"github.com/kvblob/kvblob/internal/fskit"
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
	fx := blockingfx.New(t, d, conformance.DefaultDeadline)
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
	left, err := fskit.Listing(root)
	require.NoError(t, err)
	for _, l := range left {
		assert.NotContains(t, l, ".tmp-", "the temporary file is left")
	}
}

package fs_test

import (
	"bytes"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/generated/fsspec"
	"github.com/kvblob/kvblob/internal/blockingfx"
	"github.com/kvblob/kvblob/internal/fskit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/fs"
	"github.com/kvblob/kvblob/stores/trailer"
)

var rowKey = bytes.Repeat([]byte{0x42}, 32)

// keyed opens a driver with a row key over a fresh directory of env.
func keyed(t conformance.T) *fs.Driver {
	in, err := trailer.NewIntegrity(rowKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(env.Dir, "keyed-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	d, err := fs.Open(fs.Options{Root: root, Integrity: in})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// foreign plants, as another writer without the row key would, payload
// with a valid unkeyed trailer under key.
func foreign(d driver.Driver, key string, payload []byte) error {
	var fd *fs.Driver
	if !driver.As(d, &fd) {
		return fmt.Errorf("foreign: %T is no fs driver", d)
	}
	file, _, err := fd.Paths(key)
	if err != nil {
		return err
	}
	return fskit.Plant(file, trailer.Encode(key, payload))
}

// integrity is TestConformance's integrity check: over drivers with a row
// key, a row another writer stored with a valid unkeyed trailer is a
// FAULT, where before it was READY.
var integrity = &conformance.Integrity{Factory: func(t conformance.T) driver.Driver { return keyed(t) }, Plant: foreign}

// TestARowCopiedToAnotherKeyIsAFault copies tenant A's tagged object to
// tenant B's key, as is and with its trailer's name digest rewritten for B
// (what anyone can compute): a get of B is a FAULT (CORRUPT) with the
// destination untouched, never READY.
func TestARowCopiedToAnotherKeyIsAFault(t *testing.T) {
	d := keyed(t)
	f := blockingfx.New(t, d, 5*time.Second)
	a, err := driver.Key("tenantA", []byte("block-0"))
	require.NoError(t, err)
	b, err := driver.Key("tenantB", []byte("block-0"))
	require.NoError(t, err)
	require.Equal(t, driver.Ready, f.Put(f.Row(a, 0, 1))[0].Status)
	fileA, _, _ := d.Paths(a)
	fileB, _, _ := d.Paths(b)
	obj, err := os.ReadFile(fileA)
	require.NoError(t, err)
	for name, copied := range map[string][]byte{"as is": obj, "name digest rewritten": trailer.Retarget(obj, b)} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, fskit.Plant(fileB, copied))
			dst := f.Row(b, 1, blockingfx.Dest)
			res := f.Get(dst)[0]
			assert.Equal(t, driver.Fault, res.Status, "%v", res)
			assert.Equal(t, int64(fsspec.Corrupt), res.Code, "%v", res)
			blockingfx.Untouched(t, dst)
		})
	}
	dst := f.Row(a, 2, blockingfx.Dest)
	require.Equal(t, driver.Ready, f.Get(dst)[0].Status, "A's own row reads")
	assert.Equal(t, f.Region.Slot(0).Bytes(), dst.Spans[0].Bytes())
}

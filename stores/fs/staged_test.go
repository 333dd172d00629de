package fs_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance/storekit"
	fsgen "github.com/kvblob/kvblob/generated/fs"
	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/trailer"
)

// TestAGetSeesTheFileItOpenedChangeUnderIt: the medium changes between a
// get's open (and its fstat) and its read, staged by holding the read in
// the seam: a file cut short is never READY (cut into its tail: CORRUPT,
// "shrank while read"; cut into its payload: the short read's answer),
// and a file replaced or removed by name is read as opened, READY with
// the bytes put (the open descriptor holds the inode). (Tried: dropping
// read's tail-shrank check answers the tail case MISMATCH, not CORRUPT;
// dropping its short-payload case leaves the get looping on empty preads,
// failing on the bound.)
func TestAGetSeesTheFileItOpenedChangeUnderIt(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, file, key string)
		status driver.Status
		code   int64  // when status is FAULT
		text   string // in the fault's text
	}{
		{"cut into its tail", func(t *testing.T, file, _ string) {
			fi, err := os.Stat(file)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(file, fi.Size()-1))
		}, driver.Fault, int64(fsgen.Corrupt), "shrank while read"},
		{"cut into its payload", func(t *testing.T, file, _ string) {
			require.NoError(t, os.Truncate(file, 100))
		}, driver.Fault, 0, "ended 100 bytes into a payload"},
		{"replaced by another object", func(t *testing.T, file, key string) {
			other := make([]byte, 64<<10)
			for i := range other {
				other[i] = 0x5A
			}
			tmp := file + ".other"
			require.NoError(t, Plant(tmp, trailer.Encode(key, other)))
			require.NoError(t, os.Rename(tmp, file))
		}, driver.Ready, 0, ""},
		{"removed", func(t *testing.T, file, _ string) {
			require.NoError(t, os.Remove(file))
		}, driver.Ready, 0, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFx(t)
			k := key(t, "a")
			row := f.Row(k, 0, 1)
			require.Equal(t, driver.Ready, f.Put(row)[0].Status)
			file, _, err := f.kit.Paths(k)
			require.NoError(t, err)

			entered, release := f.kit.Seam.Hold("read", k)
			dst := f.Row(k, 1, storekit.Dest)
			done := make(chan driver.Result, 1)
			go func() { done <- f.Get(dst)[0] }()
			bound.Recv(t, 10*time.Second, "the get's read to be held", entered)
			c.change(t, file, k)
			release()
			res := bound.Recv(t, 10*time.Second, "the get's result", done)
			require.Equal(t, c.status, res.Status, "%v", res)
			if c.status == driver.Ready {
				assert.Equal(t, row.Spans[0].Bytes(), dst.Spans[0].Bytes(), "the bytes read are not the object opened")
				return
			}
			if c.code != 0 {
				assert.Equal(t, c.code, res.Code, "%v", res)
			}
			assert.Contains(t, res.Text, c.text)
		})
	}
}

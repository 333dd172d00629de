package fs_test

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	fsgen "github.com/kvblob/kvblob/generated/fs"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/fs"
	"github.com/kvblob/kvblob/stores/trailer"
)

var rowKey = bytes.Repeat([]byte{0x42}, 32)

// keyed opens a driver with a row key over a fresh directory of tree.
func keyed(t conformance.T) *fs.Driver {
	in, err := trailer.NewIntegrity(rowKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	root, err := os.MkdirTemp(tree.Value().Dir, "keyed-")
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
	return Plant(file, trailer.Encode(key, payload))
}

// integrity is TestConformance's integrity check: over drivers with a row
// key, a row another writer stored with a valid unkeyed trailer is a
// FAULT, where before it was READY.
var integrity = &conformance.Integrity{Factory: func(t conformance.T) driver.Driver { return keyed(t) }, Plant: foreign}

// TestARowCopiedToAnotherKeyIsAFault copies tenant A's tagged object to
// tenant B's key, as is and with its trailer's name digest rewritten for B
// (what anyone can compute): a get of B is a FAULT, never READY. As is, the
// trailer's name digest refuses it (CORRUPT); rewritten, only the tag can
// (MISMATCH). The copy has a whole row's size, so its tail is read with the
// payload's last piece and either may have reached the destination (the
// spec's written "maybe": those are bytes of a file under B's key, which
// B's driver reads anyway). A byte shorter, the copy is no row by its
// size: its tail is read first and it is CORRUPT with the destination
// untouched.
func TestARowCopiedToAnotherKeyIsAFault(t *testing.T) {
	d := keyed(t)
	f := storekit.NewFx(t, d, 5*time.Second)
	a, err := driver.Key("tenantA", []byte("block-0"))
	require.NoError(t, err)
	b, err := driver.Key("tenantB", []byte("block-0"))
	require.NoError(t, err)
	require.Equal(t, driver.Ready, f.Put(f.Row(a, 0, 1))[0].Status)
	fileA, _, _ := d.Paths(a)
	fileB, _, _ := d.Paths(b)
	obj, err := os.ReadFile(fileA)
	require.NoError(t, err)
	for _, c := range []struct {
		name      string
		copied    []byte
		code      fsgen.Code
		untouched bool
	}{
		{"as is", obj, fsgen.Corrupt, false},
		{"name digest rewritten", trailer.Retarget(obj, b), fsgen.Mismatch, false},
		{"as is, a byte shorter", obj[1:], fsgen.Corrupt, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.NoError(t, Plant(fileB, c.copied))
			dst := f.Row(b, 1, storekit.Dest)
			res := f.Get(dst)[0]
			assert.Equal(t, driver.Fault, res.Status, "%v", res)
			assert.Equal(t, int64(c.code), res.Code, "%v", res)
			if c.untouched {
				storekit.Untouched(t, dst)
			}
		})
	}
	dst := f.Row(a, 2, storekit.Dest)
	require.Equal(t, driver.Ready, f.Get(dst)[0].Status, "A's own row reads")
	assert.Equal(t, f.Region.Slot(0).Bytes(), dst.Spans[0].Bytes())
}

// TestAPayloadThatFailsItsCheckIsNeverReady damages or forges a published
// object's payload and leaves its trailer whole, so that open's checks of
// the size and the tail pass and only the check of the bytes read can
// refuse it: every get is a FAULT (MISMATCH), never READY. The driver
// reads 4 KiB pieces, so a 64 KiB row is 16 of them, and a damaged byte
// sits in the first, a middle and the last piece. With a row key, a
// payload forged to keep its CRC32 (and so its unkeyed trailer) is refused
// by the tag alone. A FAULT's destination may hold the bytes read (the
// spec's written "maybe"); the row's own bytes still read READY after.
// (Tried: read not calling Verifier.Check READYs every case; Check without
// its CRC32 comparison READYs the unkeyed ones; Check without its tag
// comparison READYs the forged one; feeding the verifier only the first
// piece fails the whole row's READY, by its length.)
func TestAPayloadThatFailsItsCheckIsNeverReady(t *testing.T) {
	const piece = 4 << 10
	for _, c := range []struct {
		name  string
		keyed bool
		spoil func(payload []byte) []byte
	}{
		{"a byte of the first piece flipped", false, flip(0)},
		{"a byte of a middle piece flipped", false, flip(7*piece + 100)},
		{"the last byte flipped", false, flip(-1)},
		{"a forged payload with the same CRC32, under a row key", true, func(p []byte) []byte {
			evil := bytes.Repeat([]byte("evil"), len(p)/4)
			return trailer.ForgeCRC(evil, crc32.ChecksumIEEE(p))
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var d *fs.Driver
			if c.keyed {
				d = keyed(t)
			} else {
				d = Open(t, tree.Value()).Driver
			}
			fs.SetReadPiece(d, piece)
			f := storekit.NewFx(t, d, 5*time.Second)
			k, err := driver.Key("fs-test", []byte(t.Name()))
			require.NoError(t, err)
			require.Equal(t, driver.Ready, f.Put(f.Row(k, 0, 1))[0].Status)
			dst := f.Row(k, 1, storekit.Dest)
			require.Equal(t, driver.Ready, f.Get(dst)[0].Status, "the object as put reads")
			require.Equal(t, f.Region.Slot(0).Bytes(), dst.Spans[0].Bytes())

			file, _, _ := d.Paths(k)
			obj, err := os.ReadFile(file)
			require.NoError(t, err)
			n := len(f.Region.Slot(0).Bytes())
			spoilt := c.spoil(bytes.Clone(obj[:n]))
			require.Len(t, spoilt, n)
			require.NotEqual(t, obj[:n], spoilt)
			require.NoError(t, Plant(file, append(spoilt, obj[n:]...)))
			res := f.Get(f.Row(k, 2, storekit.Dest))[0]
			assert.Equal(t, driver.Fault, res.Status, "%v", res)
			assert.Equal(t, int64(fsgen.Mismatch), res.Code, "%v", res)
		})
	}
}

// flip returns a spoiler that flips the payload's byte at i (from the end
// when negative).
func flip(i int) func([]byte) []byte {
	return func(p []byte) []byte {
		if i < 0 {
			i += len(p)
		}
		p[i] ^= 0xff
		return p
	}
}

// TestATailReadWithItsPayloadIsCheckedFirst: a file of a whole row's size
// has its tail read with the payload's last piece (one call fewer), so
// its trailer is checked only once the slot was written; whatever the tail
// holds that is no trailer of this row (its magic spoilt, another key's
// name digest, or a keyed object's trailer whose tag takes room the row's
// payload would, read with integrity off) is CORRUPT, never READY, and the
// row's own object then reads READY. The driver reads 4 KiB pieces, so the
// tail comes with the last of several. (Tried: read skipping the trailer
// check of a tail it read makes every case MISMATCH; checking the payload
// against no Head fails the row's own READY.)
func TestATailReadWithItsPayloadIsCheckedFirst(t *testing.T) {
	const piece = 4 << 10
	d := Open(t, tree.Value()).Driver
	fs.SetReadPiece(d, piece)
	f := storekit.NewFx(t, d, 5*time.Second)
	k, err := driver.Key("fs-test", []byte("whole-size"))
	require.NoError(t, err)
	other, err := driver.Key("fs-test", []byte("another"))
	require.NoError(t, err)
	require.Equal(t, driver.Ready, f.Put(f.Row(k, 0, 1))[0].Status)
	file, _, _ := d.Paths(k)
	obj, err := os.ReadFile(file)
	require.NoError(t, err)
	payload := obj[:len(obj)-trailer.Size]
	require.Greater(t, len(payload), 2*piece, "the row spans several pieces")
	in, err := trailer.NewIntegrity(rowKey, nil)
	require.NoError(t, err)
	for _, c := range []struct {
		name string
		obj  []byte
	}{
		{"the trailer's magic spoilt", func() []byte {
			b := bytes.Clone(obj)
			b[len(b)-trailer.Size] ^= 0xff
			return b
		}()},
		{"another key's trailer", trailer.Encode(other, payload)},
		{"a keyed object of a shorter payload, read with integrity off", in.Encode(k, payload[:len(payload)-trailer.TagSize])},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Len(t, c.obj, len(obj), "a whole row's size")
			require.NoError(t, Plant(file, c.obj))
			res := f.Get(f.Row(k, 1, storekit.Dest))[0]
			assert.Equal(t, driver.Fault, res.Status, "%v", res)
			assert.Equal(t, int64(fsgen.Corrupt), res.Code, "%v", res)
		})
	}
	require.NoError(t, Plant(file, obj))
	dst := f.Row(k, 2, storekit.Dest)
	require.Equal(t, driver.Ready, f.Get(dst)[0].Status, "the row's own object reads")
	assert.Equal(t, f.Region.Slot(0).Bytes(), dst.Spans[0].Bytes())
}

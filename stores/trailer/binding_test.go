package trailer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The keyed tag binds the key's name, the payload's length and the payload:
// a neighbour who can write the store recomputes every unkeyed field (name
// digest, length, CRC32) and still cannot make a row read under a key, a
// length or with bytes its writer did not tag. Each test below fails if its
// part is dropped from what the tag covers (tried by hand: a tag over the
// payload alone fails the name test; one without the name digest fails the
// name test; one without the payload fails the payload test; one without
// the length fails the length test).

func TestTheTagBindsTheKeysName(t *testing.T) {
	in := integrity(t, keyA, nil)
	payload := []byte("tenant A's KV row")
	a := in.Encode("tenantA/v1/aa", payload)
	copied := Retarget(a, "tenantB/v1/aa")
	got, err := Check(copied, "tenantB/v1/aa")
	require.NoError(t, err, "the copy's unkeyed trailer is whole for B: only the tag can refuse it")
	require.Equal(t, payload, got)
	_, err = in.Check(copied, "tenantB/v1/aa")
	require.Error(t, err, "tenant A's row copied to tenant B's key read as B's")
	assert.True(t, errors.Is(err, ErrUnverified), "%v", err)
}

func TestTheTagBindsThePayload(t *testing.T) {
	in := integrity(t, keyA, nil)
	payload := []byte("a KV row of some length")
	good := in.Encode("k", payload)
	evil := ForgeCRC([]byte("an evil row of the same"), crc32.ChecksumIEEE(payload))
	require.Len(t, evil, len(payload))
	require.Equal(t, crc32.ChecksumIEEE(payload), crc32.ChecksumIEEE(evil), "the forged payload keeps the CRC32")
	forged := bytes.Clone(good)
	copy(forged, evil) // same length, same CRC32: the trailer is byte for byte the same
	require.Equal(t, good[len(good)-Size:], forged[len(forged)-Size:])
	_, err := Check(forged, "k")
	require.NoError(t, err, "the trailer alone is whole: only the tag can refuse it")
	_, err = in.Check(forged, "k")
	require.Error(t, err, "a payload with the same length and CRC32 read under the tag of another")
	assert.True(t, errors.Is(err, ErrUnverified), "%v", err)
}

// tagOf is the GMAC tag of format VersionKeyed under in's current key,
// with nonce, over payload, the trailer t and the key "k".
func tagOf(in *Integrity, nonce, payload []byte, t [Size]byte) []byte {
	c := newChunker(in.current(), int64(len(payload)))
	c.write(payload)
	return c.sum(nil, nonce, &t, "k")
}

// TestTheTagBindsTheLength: the tag over a payload depends on the length
// its trailer states. Through Check the length is also implied (the tag
// runs over every payload byte, and the trailer's length must equal the
// payload's), so this asks the tag itself: a tag whose input left the
// length out would let a reader that takes the length from the trailer (a
// streamed or ranged read) accept a row cut or padded to another length.
// So for the name digest and the format version.
func TestTheTagBindsTheLength(t *testing.T) {
	in := integrity(t, keyA, nil)
	payload := []byte("a KV row")
	nonce := make([]byte, NonceSize)
	t1 := header(VersionKeyed, "k", payload)
	for _, c := range []struct {
		what   string
		change func(t *[Size]byte)
	}{
		{"lengths", func(t *[Size]byte) { binary.LittleEndian.PutUint64(t[24:32], uint64(len(payload)+1)) }},
		{"names", func(t *[Size]byte) { copy(t[8:24], bytes.Repeat([]byte{0xff}, 16)) }},
		{"format versions", func(t *[Size]byte) { binary.LittleEndian.PutUint16(t[4:6], VersionHMAC) }},
	} {
		t2 := t1
		c.change(&t2)
		assert.NotEqual(t, tagOf(in, nonce, payload, t1), tagOf(in, nonce, payload, t2),
			"the tag is the same for two %s of one payload", c.what)
	}
}

// TestTheTagBindsWhereEachChunkSits: two chunks swapped make another tag
// under the same nonce and trailer (the tag's input lists the chunk
// hashes in order; a tag over the trailer alone fails it, tried), and so
// does another nonce.
func TestTheTagBindsWhereEachChunkSits(t *testing.T) {
	in := integrity(t, keyA, nil)
	a, b := bytes.Repeat([]byte{1}, ChunkSize), bytes.Repeat([]byte{2}, ChunkSize)
	ab, ba := append(bytes.Clone(a), b...), append(bytes.Clone(b), a...)
	nonce := make([]byte, NonceSize)
	tr := header(VersionKeyed, "k", ab) // the same trailer for both: the CRC32 left as ab's
	assert.NotEqual(t, tagOf(in, nonce, ab, tr), tagOf(in, nonce, ba, tr), "two chunks swapped keep the tag")
	other := bytes.Repeat([]byte{1}, NonceSize)
	assert.NotEqual(t, tagOf(in, nonce, ab, tr), tagOf(in, other, ab, tr), "the nonce does not change the tag")
}

// TestRetargetRewritesOnlyTheNameDigest: Retarget, the stores' tool for
// the copied-row attack, makes an unkeyed object read under the new key
// whatever its payload's length, an empty one included (an object exactly
// a trailer long; `len(out) <= Size` in its guard fails that case, tried),
// and leaves a slice too short to hold a trailer as it was.
func TestRetargetRewritesOnlyTheNameDigest(t *testing.T) {
	for _, c := range []struct {
		name    string
		payload []byte
	}{
		{"empty payload", []byte{}},
		{"one byte", []byte{7}},
		{"a row", []byte("tenant A's KV row")},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := Encode("tenantA/v1/aa", c.payload)
			copied := Retarget(obj, "tenantB/v1/aa")
			got, err := Check(copied, "tenantB/v1/aa")
			require.NoError(t, err)
			assert.Equal(t, c.payload, got)
			_, err = Check(obj, "tenantB/v1/aa")
			assert.Error(t, err, "the source object is not changed in place")
		})
	}
	short := []byte("short")
	assert.Equal(t, short, Retarget(short, "k"), "too short for a trailer: as it was")
}

// TestTheTagBindsTheWholeKey: format 4's tag binds the key a row is read
// under, not only the trailer's name digest (the first 16 bytes of the
// key's SHA-256). Two keys of one digest take about 2^64 SHA-256
// evaluations to find (the birthday bound), within reach of a well-funded
// neighbour; one who found a pair and got our writer to store a row under
// one key could otherwise copy that row to the other, and the digest
// check and a tag over the trailer would both pass. No such pair can be
// staged, so the reader's Head is given the other key after the digest
// check, as if the digests had met. Format 3 (read only) binds the digest
// alone and takes the row: its limit, pinned here so that the docs stay
// true. (Tried: sum's append of the key dropped fails the format 4 case.)
func TestTheTagBindsTheWholeKey(t *testing.T) {
	in := integrity(t, keyA, nil)
	payload := pattern(2*ChunkSize+1000, 3)
	for _, c := range []struct {
		name string
		obj  []byte
		key  string
		// taken: whether the row, read under another key of its digest,
		// verifies
		taken bool
	}{
		{"format 4", in.Encode(victim, payload), victim, false},
		{"format 3", pinnedRow(t, "format3-keyed-tails.txt", 2*ChunkSize+1000), oldKey, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.obj[:len(c.obj)-TagSize-Size]
			check := func(key string) error {
				h, err := in.ReadHead(c.obj[len(c.obj)-TailSize:], int64(len(c.obj)), c.key)
				require.NoError(t, err)
				h.key = key // as if key's digest were c.key's
				v := in.Verifier(h)
				v.Write(p)
				return v.Check(p)
			}
			require.NoError(t, check(c.key), "the row under its own key")
			err := check(other)
			if c.taken {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrUnverified, "a row read under another key of the same digest")
		})
	}
}

// TestTheDerivedKeysAreApart: the chunk key and the tag key are
// HMAC-SHA256 of the row key under two labels, and format 2's tag is
// HMAC-SHA256 under the same row key of a payload followed by a trailer.
// HMAC is a PRF, so its outputs on distinct inputs are independent: the
// two labels must differ (or the chunk key would be the tag key), and no
// label may be a format 2 input, which ends in a 36-byte trailer starting
// with Magic (or a format 2 tag a neighbour read would be a key). (Tried:
// tagLabel set to chunkLabel fails the first; a label ending in a
// trailer's first bytes fails the second.)
func TestTheDerivedKeysAreApart(t *testing.T) {
	k := integrity(t, keyA, nil).current()
	nonce := make([]byte, NonceSize)
	assert.NotEqual(t, k.chunk.Seal(nil, nonce, nil, nil), k.tag.Seal(nil, nonce, nil, nil), "the chunk key is the tag key")
	for _, label := range []string{chunkLabel, tagLabel} {
		if len(label) >= Size {
			assert.NotEqual(t, Magic, label[len(label)-Size:len(label)-Size+len(Magic)],
				"label %q could be a format 2 tag's input (a payload and a trailer)", label)
		}
	}
}

package trailer

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The neighbour of docs/security.md: it can read every row and its tag,
// and write any bytes under any key, but holds no row key. Each attack
// below builds an object from rows our writer tagged, recomputing every
// field anyone can compute (the trailer's name digest, length and
// CRC32), so that the unkeyed trailer is whole and only the keyed tag can
// refuse it. Every attack must be refused.

const (
	victim = "tenantA/v1/aa" // the key our writer tags rows under
	other  = "tenantA/v1/bb" // another key of the same tenant
)

// pattern is a payload of n bytes, different for each seed.
func pattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7+i>>9) ^ seed
	}
	return p
}

// parts splits a keyed object of a payload of n bytes (format VersionKeyed:
// nonce and tag, TagSize bytes; format VersionHMAC: HMACTagSize) into its
// payload and the bytes between the payload and the trailer.
func parts(obj []byte, tagSize int) (payload, tag []byte) {
	n := len(obj) - Size - tagSize
	return bytes.Clone(obj[:n]), bytes.Clone(obj[n : n+tagSize])
}

// refit is what the neighbour writes: payload, then tag (bytes it read
// from some row), then a trailer of format version v for key with every
// unkeyed field (name digest, length, CRC32) computed for payload.
func refit(payload, tag []byte, key string, v uint16) []byte {
	t := makeTrailer(v, NameDigest(key), int64(len(payload)), crc32.ChecksumIEEE(payload))
	obj := append(bytes.Clone(payload), tag...)
	return append(obj, t[:]...)
}

// trailerEdit is obj with its trailer changed by edit, the rest kept.
func trailerEdit(obj []byte, edit func(t []byte)) []byte {
	out := bytes.Clone(obj)
	edit(out[len(out)-Size:])
	return out
}

func swapped(p []byte, i, j int) []byte {
	out := bytes.Clone(p)
	copy(out[i*ChunkSize:(i+1)*ChunkSize], p[j*ChunkSize:(j+1)*ChunkSize])
	copy(out[j*ChunkSize:(j+1)*ChunkSize], p[i*ChunkSize:(i+1)*ChunkSize])
	return out
}

func concat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

// TestANeighbourCannotForgeARow stages every attack on the keyed tag's
// bindings that docs/security.md argues against, each on rows our writer
// tagged: the forged object's trailer is whole (the unkeyed check takes
// it), and the keyed reader must refuse it (ErrUnverified).
//
// Which line of the tag each attack needs, tried by hand (each broken on
// its own, the package's tests run, then restored):
//   - the trailer left out of the tag's input (chunker.end's copy of t
//     into aad): "reserved bytes set" and "CRC32 field changed" (the
//     test after the table) get through; with the key's bytes left out
//     too (sum's append), so do the three "moved to another key" and "a
//     format 4 row read as format 3";
//   - a chunk's bytes left out of its hash (chunker.hash sealing nil):
//     every change of the payload that keeps its length and CRC32 gets
//     through ("two chunks swapped", "a chunk duplicated", both
//     "spliced", both "a byte ... changed");
//   - the short last chunk left unhashed (chunker.end's final hash):
//     "a byte of the short last chunk changed" gets through;
//   - the row's nonce left out (sum sealing under a zero nonce): "the
//     nonce changed, the tag kept" gets through;
//   - the tag compared on its first byte only (verifies' hmac.Equal):
//     "the tag's last byte changed" gets through;
//   - format 2's tag not checked (verifies answering true for
//     VersionHMAC): both "a format 2 row ..." and "a format 4 row read
//     as format 2" get through;
//   - format 3's tag not checked (verifies answering true for
//     VersionGMAC): both "a format 3 row ...", "a format 4 row read as
//     format 3" and "a format 2 row read as format 3" get through.
//
// The key's bytes left out of format 4's tag (sum's append) let none of
// these through on its own: the trailer's name digest binds the key too,
// as far as SHA-256 cut to 16 bytes does; TestTheTagBindsTheWholeKey
// holds it. A chunk's index left out of its nonce (chunker.hash's
// PutUint64) lets none through: a chunk's place is bound by the order of
// the chunk hashes in the tag's input as well (a swapped or duplicated
// chunk moves its hash in that list). The length changes (a chunk
// dropped, a byte cut or added, a row cut to or from empty) are bound
// twice too, by the trailer's length and by the chunk hashes (their
// number, and the short chunk's own length in its hash): with the
// trailer and the short last chunk both left out, "the last (short)
// chunk dropped", "the short last chunk cut by a byte", "a byte appended"
// and "an empty row given a byte" get through. TestTheFormatIsPinned
// catches every one of these changes (each changes the tag of every row
// already written).
func TestANeighbourCannotForgeARow(t *testing.T) {
	w := integrity(t, keyA, nil)
	// x: three whole chunks and a short one; y: x's length, other bytes;
	// whole: exactly two chunks; empty: no payload.
	x, y := pattern(3*ChunkSize+1000, 0), pattern(3*ChunkSize+1000, 0x5a)
	whole, empty := pattern(2*ChunkSize, 1), []byte{}
	ox, oy, owhole, oempty := w.Encode(victim, x), w.Encode(victim, y), w.Encode(victim, whole), w.Encode(victim, empty)
	_, tx := parts(ox, TagSize)
	_, ty := parts(oy, TagSize)
	_, twhole := parts(owhole, TagSize)
	_, tempty := parts(oempty, TagSize)
	format2 := readTestdata(t, "format2-keyed.obj")
	p2, t2 := parts(format2, HMACTagSize)
	format3 := pinnedRow(t, "format3-keyed-tails.txt", 2*ChunkSize+1000)
	p3, t3 := parts(format3, TagSize)

	flipAt := func(p []byte, i int) []byte { q := bytes.Clone(p); q[i] ^= 1; return q }
	// asX and asY forge p's last 4 bytes so that its CRC32 is x's (y's):
	// the neighbour keeps the trailer of the row whose tag it reuses
	// byte for byte, so that only the chunk hashes can refuse p (the
	// trailer's CRC32 is in the tag's input too).
	asX := func(p []byte) []byte { return ForgeCRC(p, crc32.ChecksumIEEE(x)) }
	asY := func(p []byte) []byte { return ForgeCRC(p, crc32.ChecksumIEEE(y)) }
	dup := bytes.Clone(x)
	copy(dup[ChunkSize:2*ChunkSize], x[:ChunkSize])

	for _, c := range []struct {
		name   string
		reader *Integrity
		key    string // the key the object is read under
		obj    []byte
	}{
		// A chunk's bytes and place, the length and the CRC32 kept (the
		// payload's last 4 bytes forged for it), so the trailer is x's.
		{"two chunks swapped", w, victim, refit(asX(swapped(x, 0, 1)), tx, victim, VersionKeyed)},
		{"a chunk duplicated over the next", w, victim, refit(asX(dup), tx, victim, VersionKeyed)},
		{"a byte of a whole chunk changed", w, victim, refit(asX(flipAt(x, ChunkSize+5)), tx, victim, VersionKeyed)},
		{"a byte of the short last chunk changed", w, victim, refit(asX(flipAt(x, len(x)-10)), tx, victim, VersionKeyed)},
		{"spliced: the first chunk of another row, this row's tag", w, victim, refit(asX(concat(y[:ChunkSize], x[ChunkSize:])), tx, victim, VersionKeyed)},
		{"spliced: the first chunk of another row, its tag", w, victim, refit(asY(concat(y[:ChunkSize], x[ChunkSize:])), ty, victim, VersionKeyed)},
		// The payload's length.
		{"the last (short) chunk dropped", w, victim, refit(x[:3*ChunkSize], tx, victim, VersionKeyed)},
		{"the first chunk dropped", w, victim, refit(x[ChunkSize:], tx, victim, VersionKeyed)},
		{"the short last chunk cut by a byte", w, victim, refit(x[:len(x)-1], tx, victim, VersionKeyed)},
		{"a byte appended", w, victim, refit(concat(x, []byte{0}), tx, victim, VersionKeyed)},
		{"a whole chunk appended to a row of whole chunks", w, victim, refit(concat(whole, whole[:ChunkSize]), twhole, victim, VersionKeyed)},
		{"a row of whole chunks cut by a chunk", w, victim, refit(whole[:ChunkSize], twhole, victim, VersionKeyed)},
		{"a row cut to empty", w, victim, refit(empty, tx, victim, VersionKeyed)},
		{"an empty row given a byte", w, victim, refit([]byte{0}, tempty, victim, VersionKeyed)},
		// The tag and its nonce.
		{"the nonce changed, the tag kept", w, victim, refit(x, flipAt(tx, 0), victim, VersionKeyed)},
		{"the tag's last byte changed", w, victim, refit(x, flipAt(tx, TagSize-1), victim, VersionKeyed)},
		{"another row's nonce and tag", w, victim, refit(x, ty, victim, VersionKeyed)},
		// The trailer's fields, and the key.
		{"moved to another key", w, other, refit(x, tx, other, VersionKeyed)},
		{"an empty row moved to another key", w, other, refit(empty, tempty, other, VersionKeyed)},
		{"reserved bytes set", w, victim, trailerEdit(ox, func(t []byte) { t[6] = 1 })},
		{"tagged under another row key", w, victim, integrity(t, keyB, nil).Encode(victim, x)},
		// A rotation's previous key.
		{"under the previous key, moved to another key", integrity(t, keyB, keyA), other, refit(x, tx, other, VersionKeyed)},
		{"under the previous key, two chunks swapped", integrity(t, keyB, keyA), victim, refit(swapped(x, 0, 1), tx, victim, VersionKeyed)},
		// The format before, and one format taken for another.
		{"a format 2 row moved to another key", w, other, refit(p2, t2, other, VersionHMAC)},
		{"a format 2 row's payload changed", w, oldKey, refit(flipAt(p2, 0), t2, oldKey, VersionHMAC)},
		{"a format 3 row moved to another key", w, other, refit(p3, t3, other, VersionGMAC)},
		{"a format 3 row's payload changed", w, oldKey, refit(ForgeCRC(flipAt(p3, 0), crc32.ChecksumIEEE(p3)), t3, oldKey, VersionGMAC)},
		{"a format 4 row read as format 3 (the key's bytes out of the tag's input)",
			w, victim, trailerEdit(ox, func(t []byte) { binary.LittleEndian.PutUint16(t[4:], VersionGMAC) })},
		{"a format 3 row read as format 4", w, oldKey, trailerEdit(format3, func(t []byte) { binary.LittleEndian.PutUint16(t[4:], VersionKeyed) })},
		{"a format 4 row read as format 2 (its last 4 payload bytes, nonce and tag as the HMAC)",
			w, victim, refit(x[:len(x)-4], concat(x[len(x)-4:], tx), victim, VersionHMAC)},
		{"a format 2 row read as format 4 (its HMAC's first 4 bytes as payload)",
			w, oldKey, refit(concat(p2, t2[:4]), t2[4:], oldKey, VersionKeyed)},
		{"a format 2 row read as format 3", w, oldKey, refit(concat(p2, t2[:4]), t2[4:], oldKey, VersionGMAC)},
		{"an unkeyed row", w, victim, Encode(victim, x)},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check(c.obj, c.key)
			require.NoError(t, err, "the forged object's trailer is whole: only the tag can refuse it")
			_, err = c.reader.Check(c.obj, c.key)
			assert.ErrorIs(t, err, ErrUnverified)
		})
	}

	// The trailer's CRC32 changed, the payload kept: a keyless reader
	// refuses it by the CRC32; a keyed reader, which takes no CRC32, by
	// the tag, which covers the whole trailer.
	crc := trailerEdit(ox, func(t []byte) { t[32] ^= 1 })
	_, err := Check(crc, victim)
	require.ErrorContains(t, err, "CRC32")
	_, err = w.Check(crc, victim)
	assert.ErrorIs(t, err, ErrUnverified, "a changed CRC32 field")

	// The rows themselves read, so the refusals above are the attacks'.
	for _, obj := range [][]byte{ox, oy, owhole, oempty} {
		_, err := w.Check(obj, victim)
		require.NoError(t, err)
	}
	for _, obj := range [][]byte{format2, format3} {
		_, err = w.Check(obj, oldKey)
		require.NoError(t, err)
	}
	require.Equal(t, uint16(VersionKeyed), binary.LittleEndian.Uint16(ox[len(ox)-Size+4:]))
}

// TestForgeCRCKeepsTheChecksumItIsGiven: the forger the attack tests use
// gives the CRC32 it was asked for, changing only the last 4 bytes, for
// short and long inputs and any wanted value, so an attack test that sees
// the keyed tag refuse a forged payload sees it refuse a payload whose
// unkeyed trailer would pass, not one a broken forger gave away.
func TestForgeCRCKeepsTheChecksumItIsGiven(t *testing.T) {
	for _, n := range []int{4, 5, 37, 4096} {
		for _, want := range []uint32{0, 1, 0xdeadbeef, 0xffffffff} {
			b := bytes.Repeat([]byte{0x3c}, n)
			got := ForgeCRC(b, want)
			assert.Equal(t, want, crc32.ChecksumIEEE(got), "%d bytes, want %#x", n, want)
			assert.Equal(t, b[:n-4], got[:n-4], "only the last 4 bytes change")
			assert.Equal(t, bytes.Repeat([]byte{0x3c}, n), b, "the input is not written")
		}
	}
}

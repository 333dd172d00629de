package trailer

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The objects in testdata/ were written by this package as it was at
// format VersionHMAC (kvblob main at 64c104b, before format VersionKeyed):
// a 5000-byte payload (byte i is i*7 + i>>8) under key oldKey, tagged with
// keyA (format2-keyed.obj) and unkeyed (format1-unkeyed.obj).
const oldKey = "tenantA/v1/0a0b"

func oldPayload() []byte { return rulePayload(5000) }

// rulePayload is the n-byte payload of the objects in testdata/: byte i
// is i*7 + i>>8.
func rulePayload(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7 + i>>8)
	}
	return p
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return b
}

// TestRowsOfTheFormatBeforeStillRead: a row written before format 3 reads
// whole under its key, alone or as the previous key of a rotation, and
// with integrity off; it is refused under another key alone, and with a
// byte changed (tried: a reader that refuses format 2 fails the first
// rows; one that skips its tag passes the forged and other-key rows).
func TestRowsOfTheFormatBeforeStillRead(t *testing.T) {
	old := readTestdata(t, "format2-keyed.obj")
	require.Len(t, old, 5000+HMACTagSize+Size)
	changed := bytes.Clone(old)
	changed[0] ^= 1
	changed = forgeCRCOf(changed, 5000, HMACTagSize)
	for _, c := range []struct {
		name string
		in   *Integrity
		obj  []byte
		want error // nil: reads whole
	}{
		{"under its key", integrity(t, keyA, nil), old, nil},
		{"under its key, previous in a rotation", integrity(t, keyB, keyA), old, nil},
		{"integrity off", nil, old, nil},
		{"under another key alone", integrity(t, keyB, nil), old, ErrUnverified},
		{"a byte changed, CRC32 recomputed", integrity(t, keyA, nil), changed, ErrUnverified},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.in.Check(c.obj, oldKey)
			if c.want != nil {
				require.Error(t, err)
				assert.True(t, errors.Is(err, c.want), "%v", err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, oldPayload(), got)
		})
	}
	unkeyed := readTestdata(t, "format1-unkeyed.obj")
	got, err := Check(unkeyed, oldKey)
	require.NoError(t, err)
	assert.Equal(t, oldPayload(), got)
	assert.Equal(t, Encode(oldKey, oldPayload()), unkeyed, "the unkeyed format is unchanged")
}

// TestTheFormatIsPinned: rows of formats 3 and 4 written by the code that
// introduced each (testdata/format3-keyed-tails.txt and
// format4-keyed-tails.txt: for each payload size, the nonce, tag and
// trailer written after it) read whole under their key, alone and as the
// previous key of a rotation. The sizes are where the chunking has edges:
// no chunk, one byte, exactly one and two chunks, two chunks and a short
// one. Any change to what a tag is computed over or how (the trailer, a
// chunk's bytes, its index, the short last chunk, the key's bytes, the
// key derivation's labels) makes every row already written a FAULT, and
// fails here; such a change is a new format version, read beside these.
// (Tried: each of chunker.hash's index, its chunk bytes, the final
// chunk's hash and the trailer's copy in chunker.end, sum's append of the
// key (format 4's rows), and either label, changed on its own, fails it.)
func TestTheFormatIsPinned(t *testing.T) {
	for _, f := range []struct {
		file    string
		version uint16
	}{
		{"format3-keyed-tails.txt", VersionGMAC},
		{"format4-keyed-tails.txt", VersionKeyed},
	} {
		rows := pinnedRows(t, f.file)
		assert.Len(t, rows, 5, "rows in %s", f.file)
		for _, n := range slices.Sorted(maps.Keys(rows)) {
			obj := rows[n]
			t.Run(fmt.Sprintf("format %d, %d bytes", f.version, n), func(t *testing.T) {
				require.Equal(t, f.version, binary.LittleEndian.Uint16(obj[len(obj)-Size+4:]), "the format version")
				for _, in := range []*Integrity{integrity(t, keyA, nil), integrity(t, keyB, keyA)} {
					got, err := in.Check(obj, oldKey)
					require.NoError(t, err, "%v", in)
					assert.Equal(t, rulePayload(n), got)
				}
				_, err := integrity(t, keyB, nil).Check(obj, oldKey)
				assert.ErrorIs(t, err, ErrUnverified, "under another key alone")
			})
		}
	}
}

// pinnedRows reads the rows of a testdata file of tails (a payload size
// and the hex of what follows the payload, a line each; # comments), by
// payload size: rulePayload(n) and its tail.
func pinnedRows(t *testing.T, file string) map[int][]byte {
	t.Helper()
	rows := map[int][]byte{}
	for _, line := range strings.Split(strings.TrimSpace(string(readTestdata(t, file))), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		var n int
		var tail string
		_, err := fmt.Sscanf(line, "%d %s", &n, &tail)
		require.NoError(t, err, "%s: %q", file, line)
		rest, err := hex.DecodeString(tail)
		require.NoError(t, err, "%s: %q", file, line)
		require.Len(t, rest, TagSize+Size, "%s: %q", file, line)
		rows[n] = append(rulePayload(n), rest...)
	}
	return rows
}

// pinnedRow is the row of payload size n in a testdata file of tails.
func pinnedRow(t *testing.T, file string, n int) []byte {
	t.Helper()
	obj, ok := pinnedRows(t, file)[n]
	require.True(t, ok, "%s has no row of %d bytes", file, n)
	return obj
}

// forgeCRCOf rewrites obj's trailer CRC32 for its first n bytes, its tag
// (tagSize bytes) kept.
func forgeCRCOf(obj []byte, n, tagSize int) []byte {
	out := bytes.Clone(obj)
	Put(out[n+tagSize:], [16]byte(out[len(out)-Size+8:len(out)-Size+24]), n, crc32.ChecksumIEEE(out[:n]))
	copy(out[len(out)-Size+4:len(out)-Size+6], obj[len(obj)-Size+4:len(obj)-Size+6]) // Put writes Version: keep the object's
	return out
}

// TestWritersWriteTheNewFormat: with integrity on, an object is format
// VersionKeyed, nonce and GMAC tag before the trailer, a fresh nonce per
// object (tried: a zero nonce fails).
func TestWritersWriteTheNewFormat(t *testing.T) {
	in := integrity(t, keyA, nil)
	a, b := in.Encode("k", []byte("row")), in.Encode("k", []byte("row"))
	h, err := head(a[len(a)-min(len(a), TailSize):], int64(len(a)), "k")
	require.NoError(t, err)
	assert.EqualValues(t, VersionKeyed, h.version)
	assert.Len(t, a, 3+TagSize+Size)
	assert.NotEqual(t, a[3:3+NonceSize], b[3:3+NonceSize], "two objects share a nonce")
	assert.NotEqual(t, make([]byte, NonceSize), a[3:3+NonceSize])
}

// TestPiecesMakeTheSameObject: a Sealer fed a payload in pieces of any
// size, by Copy or Write, makes an object that checks, and a Verifier fed
// it in pieces of any size accepts it: the chunks are cut where the
// payload is, not where the pieces are (tried: a chunker that hashes a
// piece's short end as a chunk of its own fails the odd sizes).
func TestPiecesMakeTheSameObject(t *testing.T) {
	payload := make([]byte, 3*ChunkSize+123)
	for i := range payload {
		payload[i] = byte(i*13 + i>>11)
	}
	for _, in := range []*Integrity{integrity(t, keyA, nil), nil} {
		t.Run(in.String(), func(t *testing.T) { piecesMakeTheSameObject(t, in, payload) })
	}
}

// piecesMakeTheSameObject is TestPiecesMakeTheSameObject under in (nil:
// integrity off, whose Sealer writes the unkeyed trailer: the object
// Append makes, byte for byte; tried: dropping Finish's Put fails it).
// Each case's piece sizes repeat to the payload's end; one byte and then
// the rest leaves a chunk begun with a single byte when a write of more
// than a chunk comes (tried: the chunker taking a part of one byte for
// none, len(c.part) != 1 for != 0, fails that case alone).
func piecesMakeTheSameObject(t *testing.T, in *Integrity, payload []byte) {
	whole := in.Append(bytes.Clone(payload), "k", payload)
	// each calls f with the payload's pieces in order: sizes, repeated.
	each := func(sizes []int, f func(off int, p []byte)) {
		for off, k := 0, 0; off < len(payload); k++ {
			p := payload[off:min(off+sizes[k%len(sizes)], len(payload))]
			f(off, p)
			off += len(p)
		}
	}
	for _, sizes := range [][]int{{1}, {1000}, {ChunkSize - 1}, {ChunkSize}, {ChunkSize + 7}, {len(payload)}, {1, len(payload)}} {
		t.Run(fmt.Sprint(sizes), func(t *testing.T) {
			for _, copying := range []bool{false, true} {
				s := in.Sealer(int64(len(payload)))
				obj := make([]byte, len(payload))
				each(sizes, func(off int, p []byte) {
					if copying {
						s.Copy(obj[off:], p)
					} else {
						copy(obj[off:], p)
						s.Write(obj[off : off+len(p)])
					}
				})
				obj = s.Finish(obj, "k")
				require.Equal(t, payload, obj[:len(payload)], "copying %v", copying)
				if in == nil {
					require.Equal(t, whole, obj, "copying %v", copying)
				}
				got, err := in.Check(obj, "k")
				require.NoError(t, err, "copying %v", copying)
				require.Equal(t, payload, got)
			}
			h, err := in.ReadHead(whole[len(whole)-TailSize:], int64(len(whole)), "k")
			require.NoError(t, err)
			v := in.Verifier(h)
			each(sizes, func(_ int, p []byte) { v.Write(p) })
			require.NoError(t, v.Check(payload))
		})
	}
}

// TestAKeyedReaderRefusesAChangedPayloadByItsTag: with integrity on the
// reader takes no CRC32, and a payload changed with its CRC32 left stale
// is refused all the same, by the tag (tried: a Check that skips the tag
// when it skips the CRC32 passes it).
func TestAKeyedReaderRefusesAChangedPayloadByItsTag(t *testing.T) {
	in := integrity(t, keyA, nil)
	for _, obj := range [][]byte{in.Encode("k", []byte("a KV row")), readTestdata(t, "format2-keyed.obj")} {
		key := "k"
		if len(obj) > 1000 {
			key = oldKey
		}
		bad := bytes.Clone(obj)
		bad[0] ^= 1
		_, err := Check(bad, key)
		require.ErrorContains(t, err, "CRC32", "a keyless reader refuses it by its CRC32")
		_, err = in.Check(bad, key)
		require.ErrorIs(t, err, ErrUnverified)
	}
}

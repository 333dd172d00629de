package trailer

import (
	"encoding/binary"
	"hash/crc32"
)

// Retarget is obj (an object under some key, payload and trailer, tagged
// or not) as a neighbour copies it to key: the trailer's name digest
// rewritten for key, which anyone can compute. The unkeyed trailer then
// checks under key; only the keyed tag, which binds the name, refuses it.
// For the stores' tests of that attack.
func Retarget(obj []byte, key string) []byte {
	out := append([]byte(nil), obj...)
	if len(out) < Size {
		return out
	}
	d := NameDigest(key)
	copy(out[len(out)-Size+8:], d[:])
	return out
}

// ForgeCRC returns b (at least 4 bytes) with its last 4 bytes replaced so
// that its CRC32 (IEEE) is want: CRC32 is linear, so anyone can change a
// payload's bytes and keep its checksum, and its unkeyed trailer with it.
// Only the keyed tag refuses such a payload. For the stores' tests of that
// attack.
func ForgeCRC(b []byte, want uint32) []byte {
	out := append([]byte(nil), b...)
	n := len(out) - 4
	var rev [len(crc32.IEEETable)]byte // the table entry whose top byte is i
	for j, e := range crc32.IEEETable {
		rev[e>>24] = byte(j)
	}
	s := ^crc32.ChecksumIEEE(out[:n]) // the register after the prefix
	w := ^want                        // the register wanted after the patch
	for i := 0; i < 4; i++ {          // step the register back over 4 bytes
		j := rev[w>>24]
		w = (w^crc32.IEEETable[j])<<8 | uint32(j)
	}
	binary.LittleEndian.PutUint32(out[n:], w^s)
	return out
}

// Package trailer is kvblob's object format for stores without integrity of
// their own (the memory store, Redis): the payload followed by a 36-byte
// trailer, and, when the writer holds a row key, a keyed integrity tag
// between them (gmac.go says how it is computed). Integrity is each
// driver's own; drivers that want this one share it here rather than
// import each other.
package trailer

import (
	"crypto/sha256"
	"encoding/binary"
	"hash/crc32"
)

// The object trailer: every object is its payload followed by
//
//	magic "TLBK" | format version u16 | 2 zero bytes | name digest [16] |
//	payload length u64 | CRC32 (IEEE) of the payload u32
//
// little-endian, 36 bytes. Format Version (1) is unkeyed. Format
// VersionKeyed (4) puts TagSize bytes between the payload and the
// trailer: a fresh random nonce (NonceSize) and an AES-GMAC tag (MACSize)
// over the trailer, the payload and the key (see Integrity, gmac.go).
// Formats VersionHMAC (2: a HMAC-SHA256 tag of HMACTagSize bytes there)
// and VersionGMAC (3: format 4's layout, its tag over the trailer and
// the payload, the key bound only by the trailer's 16-byte name digest)
// are what writers wrote before: they are read (and their tags
// verified), never written. An incompatible change bumps the version.
const (
	Magic        = "TLBK"
	Version      = 1
	VersionHMAC  = 2
	VersionGMAC  = 3
	VersionKeyed = 4
	Size         = 4 + 2 + 2 + 16 + 8 + 4
)

// NameDigest is the first 16 bytes of SHA-256 of the key.
func NameDigest(key string) [16]byte {
	sum := sha256.Sum256([]byte(key))
	return [16]byte(sum[:])
}

// header is payload's trailer of format version for key.
func header(version uint16, key string, payload []byte) [Size]byte {
	return makeTrailer(version, NameDigest(key), int64(len(payload)), crc32.ChecksumIEEE(payload))
}

// makeTrailer is the trailer of format version for a payload of n bytes
// with checksum crc, under a key whose NameDigest is digest.
func makeTrailer(version uint16, digest [16]byte, n int64, crc uint32) [Size]byte {
	var t [Size]byte
	putTrailer(t[:], version, digest, n, crc)
	return t
}

// putTrailer writes that trailer into t (at least Size bytes), every byte
// of it: the one place the layout is written (head reads it). Each field
// is written from its offset on, so that a field's end is fixed by its
// type alone.
func putTrailer(t []byte, version uint16, digest [16]byte, n int64, crc uint32) {
	copy(t, Magic)
	binary.LittleEndian.PutUint16(t[4:], version)
	t[6], t[7] = 0, 0
	copy(t[8:], digest[:])
	binary.LittleEndian.PutUint64(t[24:], uint64(n))
	binary.LittleEndian.PutUint32(t[32:], crc)
}

// Append appends payload's unkeyed trailer for key to obj (which must end
// with the payload) and returns the object.
func Append(obj []byte, key string, payload []byte) []byte {
	t := header(Version, key, payload)
	return append(obj, t[:]...)
}

// Encode returns payload followed by its unkeyed trailer for key.
func Encode(key string, payload []byte) []byte {
	obj := make([]byte, 0, len(payload)+Size)
	obj = append(obj, payload...)
	return Append(obj, key, payload)
}

// Check checks obj's trailer against key and returns its payload. An
// error names what was wrong: the size, magic, version, name, length or
// checksum. A keyed object's tag is not verified (Check holds no key): use
// Integrity.Check for that.
func Check(obj []byte, key string) ([]byte, error) {
	return (*Integrity)(nil).Check(obj, key)
}

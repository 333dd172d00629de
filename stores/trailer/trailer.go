// Package trailer is kvblob's object format for stores without integrity of
// their own (the memory store, Redis): the payload followed by a 36-byte
// trailer. Integrity is each driver's own; drivers that want this one share
// it here rather than import each other.
package trailer

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// The object trailer: every object is its payload followed by
//
//	magic "TLBK" | format version u16 | 2 zero bytes | name digest [16] |
//	payload length u64 | CRC32 (IEEE) of the payload u32
//
// little-endian, 36 bytes. An incompatible change bumps Version.
const (
	Magic   = "TLBK"
	Version = 1
	Size    = 4 + 2 + 2 + 16 + 8 + 4
)

// NameDigest is the first 16 bytes of SHA-256 of the key.
func NameDigest(key string) [16]byte {
	sum := sha256.Sum256([]byte(key))
	var d [16]byte
	copy(d[:], sum[:16])
	return d
}

// Append appends payload's trailer for key to obj (which must end
// with the payload) and returns the object.
func Append(obj []byte, key string, payload []byte) []byte {
	var t [Size]byte
	copy(t[0:4], Magic)
	binary.LittleEndian.PutUint16(t[4:6], Version)
	d := NameDigest(key)
	copy(t[8:24], d[:])
	binary.LittleEndian.PutUint64(t[24:32], uint64(len(payload)))
	binary.LittleEndian.PutUint32(t[32:36], crc32.ChecksumIEEE(payload))
	return append(obj, t[:]...)
}

// Encode returns payload followed by its trailer for key.
func Encode(key string, payload []byte) []byte {
	obj := make([]byte, 0, len(payload)+Size)
	obj = append(obj, payload...)
	return Append(obj, key, payload)
}

// Check checks obj's trailer against key and returns its payload. An
// error names what was wrong: the size, magic, version, name, length or
// checksum.
func Check(obj []byte, key string) ([]byte, error) {
	if len(obj) < Size {
		return nil, fmt.Errorf("object of %d bytes is shorter than its %d-byte trailer", len(obj), Size)
	}
	payload, t := obj[:len(obj)-Size], obj[len(obj)-Size:]
	if string(t[0:4]) != Magic {
		return nil, fmt.Errorf("trailer magic %q, expected %q", t[0:4], Magic)
	}
	if v := binary.LittleEndian.Uint16(t[4:6]); v != Version {
		return nil, fmt.Errorf("format version %d, expected %d", v, Version)
	}
	if d := NameDigest(key); !bytes.Equal(t[8:24], d[:]) {
		return nil, fmt.Errorf("name digest does not match key %q", key)
	}
	if n := binary.LittleEndian.Uint64(t[24:32]); n != uint64(len(payload)) {
		return nil, fmt.Errorf("payload length %d, trailer says %d", len(payload), n)
	}
	if c := binary.LittleEndian.Uint32(t[32:36]); c != crc32.ChecksumIEEE(payload) {
		return nil, fmt.Errorf("payload CRC32 %08x, trailer says %08x", crc32.ChecksumIEEE(payload), c)
	}
	return payload, nil
}

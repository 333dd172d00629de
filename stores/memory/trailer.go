package memory

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
// little-endian, 36 bytes. Integrity is each driver's own; this is the
// memory store's (and the Redis driver's).
const (
	TrailerMagic   = "TLBK"
	TrailerVersion = 1
	TrailerSize    = 4 + 2 + 2 + 16 + 8 + 4
)

// NameDigest is the first 16 bytes of SHA-256 of the key.
func NameDigest(key string) [16]byte {
	sum := sha256.Sum256([]byte(key))
	var d [16]byte
	copy(d[:], sum[:16])
	return d
}

// AppendTrailer appends payload's trailer for key to obj (which must end
// with the payload) and returns the object.
func AppendTrailer(obj []byte, key string, payload []byte) []byte {
	var t [TrailerSize]byte
	copy(t[0:4], TrailerMagic)
	binary.LittleEndian.PutUint16(t[4:6], TrailerVersion)
	d := NameDigest(key)
	copy(t[8:24], d[:])
	binary.LittleEndian.PutUint64(t[24:32], uint64(len(payload)))
	binary.LittleEndian.PutUint32(t[32:36], crc32.ChecksumIEEE(payload))
	return append(obj, t[:]...)
}

// EncodeObject returns payload followed by its trailer for key.
func EncodeObject(key string, payload []byte) []byte {
	obj := make([]byte, 0, len(payload)+TrailerSize)
	obj = append(obj, payload...)
	return AppendTrailer(obj, key, payload)
}

// CheckObject checks obj's trailer against key and returns its payload. An
// error names what was wrong: the size, magic, version, name, length or
// checksum.
func CheckObject(obj []byte, key string) ([]byte, error) {
	if len(obj) < TrailerSize {
		return nil, fmt.Errorf("object of %d bytes is shorter than its %d-byte trailer", len(obj), TrailerSize)
	}
	payload, t := obj[:len(obj)-TrailerSize], obj[len(obj)-TrailerSize:]
	if string(t[0:4]) != TrailerMagic {
		return nil, fmt.Errorf("trailer magic %q, expected %q", t[0:4], TrailerMagic)
	}
	if v := binary.LittleEndian.Uint16(t[4:6]); v != TrailerVersion {
		return nil, fmt.Errorf("format version %d, expected %d", v, TrailerVersion)
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

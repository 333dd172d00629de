package trailer

import (
	"bytes"
	"crypto/hmac"
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// TailSize is the most an object's tag and trailer take at its end (a
// format VersionHMAC object's: its tag is the longest): a reader that
// reads an object's tail before its payload (ReadHead) reads its last
// min(size, TailSize) bytes.
const TailSize = max(TagSize, HMACTagSize) + Size

// Head is what an object's tail says, read before its payload: the
// payload's length, and what its bytes must check against (Verifier).
type Head struct {
	Len     int64 // the payload's length, which the trailer states and the object's size agrees with
	crc     uint32
	version uint16
	// tag is the bytes between the payload and the trailer: the nonce
	// and the GMAC tag (VersionKeyed and VersionGMAC, TagSize bytes), or
	// the HMAC-SHA256 tag (VersionHMAC).
	tag [max(TagSize, HMACTagSize)]byte
	t   [Size]byte
	key string // the key the object is read under, which format VersionKeyed's tag binds
}

// head checks the trailer at the end of tail, the last min(size,
// TailSize) bytes of an object of size bytes, against key: magic, format
// version, name digest, and the length it states against size. It is the
// one place these rules live: Check and Integrity.Check reach them
// through ReadHead.
func head(tail []byte, size int64, key string) (Head, error) {
	var h Head
	if size < Size || int64(len(tail)) != min(size, TailSize) {
		return h, fmt.Errorf("object of %d bytes is shorter than its %d-byte trailer", size, Size)
	}
	t := tail[len(tail)-Size:]
	if string(t[0:4]) != Magic {
		return h, fmt.Errorf("trailer magic %q, expected %q", t[0:4], Magic)
	}
	body := size - Size
	v := binary.LittleEndian.Uint16(t[4:])
	tagSize := 0
	switch v {
	case Version:
	case VersionKeyed, VersionGMAC:
		tagSize = TagSize
	case VersionHMAC:
		tagSize = HMACTagSize
	default:
		return h, fmt.Errorf("format version %d, expected %d, %d, %d or %d", v, Version, VersionHMAC, VersionGMAC, VersionKeyed)
	}
	if body < int64(tagSize) {
		return h, fmt.Errorf("keyed object of %d bytes (format version %d) is shorter than its tag and trailer", size, v)
	}
	body -= int64(tagSize)
	copy(h.tag[:], tail[len(tail)-Size-tagSize:len(tail)-Size])
	if d := NameDigest(key); !bytes.Equal(t[8:24], d[:]) {
		return h, fmt.Errorf("name digest does not match key %q", key)
	}
	if n := binary.LittleEndian.Uint64(t[24:]); n != uint64(body) {
		return h, fmt.Errorf("payload length %d, trailer says %d", body, n)
	}
	h.Len, h.crc, h.version, h.key = body, binary.LittleEndian.Uint32(t[32:]), v, key
	copy(h.t[:], t)
	return h, nil
}

// ReadHead checks an object's tail (its last min(size, TailSize) bytes,
// for an object of size bytes) against key, before a byte of its payload
// is read: the trailer's magic, format version, name digest and the
// length it states against size; with integrity on, an unkeyed trailer is
// refused (ErrUnverified). What it accepts is only the promise of a
// payload: the payload is whole for key once a Verifier fed every byte of
// it says so. A store that reads a payload straight into the caller's
// memory (stores/fs) refuses what ReadHead refuses with that memory
// untouched.
func (in *Integrity) ReadHead(tail []byte, size int64, key string) (Head, error) {
	h, err := head(tail, size, key)
	if err == nil && in != nil && h.version == Version {
		return Head{}, fmt.Errorf("%w: the object has an unkeyed trailer (format version %d), which anyone who can write to the store can compute", ErrUnverified, Version)
	}
	return h, err
}

// Verifier checks a payload read a piece at a time, in order, against
// its Head: its length, and its CRC32 (integrity off) or its tag (on). A
// reader feeds it each piece while the piece is still in cache, so the
// check costs no pass over memory of its own (but for a row of format
// VersionHMAC, or one tagged under the previous key, whose tag Check
// computes over the payload once more).
type Verifier struct {
	in  *Integrity
	h   Head
	n   int64
	crc uint32
	c   chunker // under the current key; unused with integrity off
}

// Verifier returns a Verifier of h's payload.
func (in *Integrity) Verifier(h Head) Verifier {
	v := Verifier{in: in, h: h}
	if in != nil {
		v.c = newChunker(in.current(), h.Len)
	}
	return v
}

// Against makes v check against h: for a reader that reads an object's
// tail together with its payload's last piece (stores/fs, in one preadv)
// and so has fed most of the payload before it learns the Head. Check
// then checks against h, as if v had been made from it.
func (v *Verifier) Against(h Head) { v.h = h }

// Write adds p, the payload's next bytes. With integrity on it takes no
// CRC32: the tag covers every payload byte and the trailer, so a payload
// whose CRC32 differs from the trailer's fails the tag (under either
// format), and the CRC32 would cost a seventh of the check's time for
// nothing.
func (v *Verifier) Write(p []byte) {
	v.n += int64(len(p))
	if v.in != nil {
		v.c.write(p)
		return
	}
	v.crc = crc32.Update(v.crc, crc32.IEEETable, p)
}

// Check reports whether the bytes written are the payload h promised:
// every byte of it (no more), and with integrity off its CRC32, with
// integrity on its tag under the current key, or under the previous one,
// which Check then computes over payload (the bytes written, as the
// reader holds them). Asked again, Check answers the same.
func (v *Verifier) Check(payload []byte) error {
	switch {
	case v.n != v.h.Len:
		return fmt.Errorf("read %d bytes of a payload of %d", v.n, v.h.Len)
	case v.in == nil && v.crc != v.h.crc:
		return fmt.Errorf("payload CRC32 %08x, trailer says %08x", v.crc, v.h.crc)
	case v.in == nil:
		return nil
	}
	if v.verifies(v.in.current(), &v.c, payload) {
		return nil
	}
	if v.in.previous != nil {
		c := newChunker(v.in.previous(), v.h.Len)
		c.write(payload)
		if v.verifies(v.in.previous(), &c, payload) {
			return nil
		}
	}
	return fmt.Errorf("%w: the tag does not verify under the current or the previous row key", ErrUnverified)
}

// verifies reports whether h's tag verifies under k: for formats
// VersionKeyed and VersionGMAC, that of c's chunks (c holds every payload
// byte), with the key the object is read under for VersionKeyed; for
// format VersionHMAC, one computed over payload. A format with no tag
// (Version, which ReadHead refuses with integrity on) never verifies.
func (v *Verifier) verifies(k *keyset, c *chunker, payload []byte) bool {
	var sum [MACSize]byte
	var got []byte
	switch v.h.version {
	case VersionHMAC:
		return hmac.Equal(v.h.tag[:HMACTagSize], hmacTag(k, payload, v.h.t[:]))
	case VersionKeyed:
		got = c.sum(sum[:0], v.h.tag[:NonceSize], &v.h.t, v.h.key)
	case VersionGMAC:
		got = c.sum3(sum[:0], v.h.tag[:NonceSize], &v.h.t)
	default:
		return false
	}
	return hmac.Equal(v.h.tag[NonceSize:TagSize], got)
}

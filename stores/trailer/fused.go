package trailer

import (
	"encoding/binary"
	"hash/crc32"
)

// fuseChunk is how much CopyCRC copies before it checksums: small enough
// that the chunk is still in cache when the CRC reads it.
const fuseChunk = 16 << 10

// CopyCRC copies src into dst (which must be at least as long) and returns
// crc updated with the CRC32 (IEEE) of the bytes copied, in one pass over
// memory: each chunk is checksummed in dst while it is still in cache.
func CopyCRC(crc uint32, dst, src []byte) uint32 {
	for len(src) > 0 {
		n := copy(dst, src[:min(len(src), fuseChunk)])
		crc = crc32.Update(crc, crc32.IEEETable, dst[:n])
		dst, src = dst[n:], src[n:]
	}
	return crc
}

// Put writes the trailer of a payload of n bytes with checksum crc, for a
// key whose NameDigest is digest, into t (at least Size bytes): Append's
// trailer, for a caller that computed the digest and the CRC itself.
func Put(t []byte, digest [16]byte, n int, crc uint32) {
	_ = t[Size-1]
	copy(t[0:4], Magic)
	binary.LittleEndian.PutUint16(t[4:6], Version)
	t[6], t[7] = 0, 0
	copy(t[8:24], digest[:])
	binary.LittleEndian.PutUint64(t[24:32], uint64(n))
	binary.LittleEndian.PutUint32(t[32:36], crc)
}

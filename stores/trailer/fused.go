package trailer

import (
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
	putTrailer(t, Version, digest, int64(n), crc)
}

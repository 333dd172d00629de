package trailer

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"hash/crc32"
)

// The keyed tag of format VersionKeyed, chosen for bulk speed: AES-GMAC
// (crypto/cipher's GCM over the bytes as additional data, which runs on
// the CPU's AES and carry-less multiply instructions) runs at 3.6-3.8x
// HMAC-SHA256's bandwidth on one core (BenchmarkTagCandidates, whose doc
// gives the figures), the only candidate that clears three times.
//
// A row's tag is computed in two levels, so that a writer or a reader can
// feed its payload a piece at a time, each piece while it is in cache
// (Sealer.Copy, Verifier.Write), through crypto/cipher's one-shot GCM:
//
//   - the payload is cut into chunks of ChunkSize bytes (the last may be
//     shorter; an empty payload has none), and chunk i's hash is the
//     AES-256-GMAC of the chunk under the chunk key, with nonce i (a
//     12-byte big-endian counter). Chunk hashes are never stored or
//     shown: each is GHASH of the chunk under the chunk key's hash key,
//     masked with a pad that depends on i alone;
//   - the tag is the AES-256-GMAC, under the tag key, with the row's own
//     nonce (NonceSize random bytes, fresh for every row written, kept in
//     the object beside the tag), of the trailer (magic, version, name
//     digest, payload length, CRC32) followed by every chunk's hash.
//
// The two keys are derived from the row key with HMAC-SHA256 under two
// labels (chunkLabel, tagLabel), so they are independent. Why a neighbour
// who reads many rows and their tags still cannot forge one: the tag is a
// Wegman-Carter MAC, GHASH under the tag key of the trailer and chunk
// hashes, masked with AES of the row's nonce under the tag key. Each
// nonce is 96 random bits, and a key tags at most MaxRowsPerKey rows, so
// two rows share a nonce with probability below 2^-32 (q^2/2^97 for q
// rows); with nonces distinct every tag it sees is masked by a pad used
// once, and tells it nothing of either hash key. A forged object under a
// new nonce meets a pad it never saw; one that reuses a seen row's nonce
// must make the GHASH of its trailer and chunk hashes equal another's
// plus a known difference: a polynomial equation in two unknown
// independent hash keys, which holds for at most a degree's worth of the
// 2^128 values of each (under 2^-110 per try for rows under 2 GiB). The
// trailer in the tag's input binds the key's name (its digest), the
// payload's length and format version; the chunk hashes bind every
// payload byte and where it sits.
const (
	// NonceSize is the row nonce's size: GCM's standard 96 bits.
	NonceSize = 12
	// MACSize is the AES-GMAC tag's size.
	MACSize = 16
	// TagSize is what format VersionKeyed puts between the payload and
	// the trailer: the nonce, then the tag.
	TagSize = NonceSize + MACSize
	// HMACTagSize is what format VersionHMAC put there: a whole
	// HMAC-SHA256.
	HMACTagSize = sha256.Size
	// ChunkSize is the bytes of each chunk hash: small enough that a
	// chunk copied or read is still in the first-level cache when it is
	// hashed.
	ChunkSize = 32 << 10
	// MaxRowsPerKey is the most rows one row key should tag: past it,
	// two random nonces may meet with probability over 2^-32. Rotate the
	// key before (docs/security.md).
	MaxRowsPerKey = 1 << 32
)

// The labels the two GMAC keys are derived under, from the row key.
const (
	chunkLabel = "kvblob row integrity v3: chunk hash key"
	tagLabel   = "kvblob row integrity v3: tag key"
)

// keyset is one row key's: the HMAC-SHA256 of format VersionHMAC (read
// only) and the two GCMs of format VersionKeyed.
type keyset struct {
	hmac       func() hash.Hash
	chunk, tag cipher.AEAD
}

// derive returns the GCM of the AES-256 key HMAC-SHA256(key, label). It
// fails only where the Go runtime refuses GCM with nonces its caller
// chooses: under GODEBUG=fips140=only, which allows GCM only with
// nonces it draws itself, and the chunk hashes' nonces are their
// indexes.
func derive(key []byte, label string) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	b, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

func newKeyset(key []byte) (func() *keyset, error) {
	key = append([]byte(nil), key...)
	chunk, err := derive(key, chunkLabel)
	if err != nil {
		return nil, err
	}
	tag, err := derive(key, tagLabel)
	if err != nil {
		return nil, err
	}
	k := &keyset{
		hmac:  func() hash.Hash { return hmac.New(sha256.New, key) },
		chunk: chunk,
		tag:   tag,
	}
	return func() *keyset { return k }, nil
}

// chunker hashes a payload's chunks as its bytes come, a piece at a time.
type chunker struct {
	k    *keyset
	i    uint64
	part []byte // the bytes of a chunk begun but not ended (own memory)
	// aad is the tag's input being built: room for the trailer, then each
	// chunk's hash.
	aad   []byte
	nonce [NonceSize]byte
}

func newChunker(k *keyset, size int64) chunker {
	c := chunker{k: k}
	c.aad = make([]byte, Size, Size+MACSize*int((size+ChunkSize-1)/ChunkSize))
	return c
}

func (c *chunker) hash(chunk []byte) {
	binary.BigEndian.PutUint64(c.nonce[NonceSize-8:], c.i)
	c.i++
	c.aad = c.k.chunk.Seal(c.aad, c.nonce[:], nil, chunk)
}

// write adds p, the payload's next bytes.
func (c *chunker) write(p []byte) {
	if len(c.part) > 0 {
		n := min(len(p), ChunkSize-len(c.part))
		c.part = append(c.part, p[:n]...)
		p = p[n:]
		if len(c.part) < ChunkSize {
			return
		}
		c.hash(c.part)
		c.part = c.part[:0]
	}
	for len(p) >= ChunkSize {
		c.hash(p[:ChunkSize])
		p = p[ChunkSize:]
	}
	if len(p) > 0 {
		if c.part == nil {
			c.part = make([]byte, 0, ChunkSize)
		}
		c.part = append(c.part, p...)
	}
}

// sum appends the tag, under nonce, of the chunks written and the
// trailer t to dst.
func (c *chunker) sum(dst []byte, nonce []byte, t *[Size]byte) []byte {
	if len(c.part) > 0 {
		c.hash(c.part)
		c.part = c.part[:0]
	}
	copy(c.aad, t[:])
	return c.k.tag.Seal(dst, nonce, nil, c.aad)
}

// Sealer writes a row's object a piece of payload at a time: the pieces,
// then (Finish) its tag and trailer. Copy takes each piece from where a
// writer copies it anyway (a span into the object's buffer) and checks it
// in the same pass, a chunk at a time while the chunk is in cache; Write
// takes a piece the writer sends as it is. A Sealer of integrity off
// writes the unkeyed trailer. A Sealer is for one goroutine.
type Sealer struct {
	in  *Integrity
	n   int64
	crc uint32
	c   chunker
}

// Sealer returns a Sealer of a payload of size bytes (its final size, a
// hint for the Sealer's own memory).
func (in *Integrity) Sealer(size int64) *Sealer {
	s := &Sealer{in: in}
	if in != nil {
		s.c = newChunker(in.current(), size)
	}
	return s
}

// Write adds p, the payload's next bytes, as they are.
func (s *Sealer) Write(p []byte) {
	s.n += int64(len(p))
	s.crc = crc32.Update(s.crc, crc32.IEEETable, p)
	if s.in != nil {
		s.c.write(p)
	}
}

// Copy copies src into dst (at least as long) and adds the bytes as the
// payload's next, in one pass over memory: a chunk copied, then
// checksummed and hashed in dst while it is in cache. It returns the
// bytes copied.
func (s *Sealer) Copy(dst, src []byte) int {
	n := len(src)
	// The first piece ends where the chunker's chunk does, so later
	// pieces are whole chunks, hashed where they lie.
	step := ChunkSize - len(s.c.part)
	for len(src) > 0 {
		k := copy(dst, src[:min(len(src), step)])
		s.Write(dst[:k])
		dst, src, step = dst[k:], src[k:], ChunkSize
	}
	return n
}

// Finish appends the payload's tag (with integrity on) and its trailer
// for key to obj, which must end with the payload, and returns the
// object.
func (s *Sealer) Finish(obj []byte, key string) []byte {
	if s.in == nil {
		var t [Size]byte
		Put(t[:], NameDigest(key), int(s.n), s.crc)
		return append(obj, t[:]...)
	}
	t := makeTrailer(VersionKeyed, NameDigest(key), s.n, s.crc)
	var nonce [NonceSize]byte
	_, _ = rand.Read(nonce[:]) // crypto/rand.Read never fails (Go 1.24 and later)
	obj = append(obj, nonce[:]...)
	obj = s.c.sum(obj, nonce[:], &t)
	return append(obj, t[:]...)
}

func makeTrailer(version uint16, digest [16]byte, n int64, crc uint32) [Size]byte {
	var t [Size]byte
	copy(t[0:4], Magic)
	binary.LittleEndian.PutUint16(t[4:6], version)
	copy(t[8:24], digest[:])
	binary.LittleEndian.PutUint64(t[24:32], uint64(n))
	binary.LittleEndian.PutUint32(t[32:36], crc)
	return t
}

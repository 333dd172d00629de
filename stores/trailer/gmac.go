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
// (Sealer.Copy, Verifier.Write), through crypto/cipher's one-shot GCM.
// With K1 = HMAC-SHA256(row key, chunkLabel) and K2 = HMAC-SHA256(row
// key, tagLabel), each an AES-256 key:
//
//   - the payload is cut into chunks x_0 .. x_{n-1} of ChunkSize bytes
//     (the last may be shorter; an empty payload has none), and chunk
//     i's hash is c_i = GMAC_K1(nonce: 4 zero bytes and i as 8 bytes
//     big-endian; data: x_i), 16 bytes. Chunk hashes are never stored,
//     returned or shown: they exist only inside the chunker, and the
//     argument rests on it (every row hashes chunk i under nonce i);
//   - the tag is GMAC_K2(nonce: N; data: T || c_0 || .. || c_{n-1} ||
//     key), 16 bytes, where N is the row's nonce (NonceSize bytes from
//     crypto/rand, fresh for every row written, stored before the tag),
//     T the 36-byte trailer (magic, format version, reserved bytes, name
//     digest, payload length, CRC32), and key the bytes of the key the
//     row is stored and read under (T's length fixes the count of chunk
//     hashes, so the key is what follows them).
//
// Format VersionGMAC (3), read only, is the same without the key's bytes
// at the end of the tag's input: it binds the key only through T's
// 16-byte name digest. The trailer's version in the tag's input keeps the
// two formats' tags apart under the same K2; the labels still say v3,
// where they were introduced.
//
// docs/security.md ("The tag") gives the argument, the bounds and the
// limits: it is a composition of standard parts, not a standard mode.
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
	// MaxRowsPerKey is the most rows one row key should tag, summed over
	// every writer that holds it: two of q random 96-bit nonces meet with
	// probability under q^2/2^97, 2^-33 at this many (the limit NIST SP
	// 800-38D sets for random GCM nonces). Rotate the key before
	// (docs/security.md).
	MaxRowsPerKey = 1 << 32
)

// The labels the two GMAC keys are derived under, from the row key. No
// input of format VersionHMAC's HMAC under the same row key (a payload,
// then a trailer beginning with Magic) is one of them
// (TestTheDerivedKeysAreApart).
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

// keyRoom is room in a chunker's aad for the key's bytes, past its
// chunk hashes: a key up to this long costs sum no copy of aad.
const keyRoom = 128

// chunker hashes a payload's chunks as its bytes come, a piece at a time.
type chunker struct {
	k    *keyset
	i    uint64
	part []byte // the bytes of a chunk begun but not ended (own memory)
	// aad is the tag's input being built: room for the trailer, then each
	// chunk's hash (and, while sum runs, the key).
	aad   []byte
	nonce [NonceSize]byte
}

func newChunker(k *keyset, size int64) chunker {
	c := chunker{k: k}
	c.aad = make([]byte, Size, Size+MACSize*int((size+ChunkSize-1)/ChunkSize)+keyRoom)
	return c
}

func (c *chunker) hash(chunk []byte) {
	binary.BigEndian.PutUint64(c.nonce[NonceSize-8:], c.i)
	c.i++
	c.aad = c.k.chunk.Seal(c.aad, c.nonce[:], nil, chunk)
}

// write adds p, the payload's next bytes.
func (c *chunker) write(p []byte) {
	if len(c.part) != 0 {
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
	if len(p) != 0 {
		if c.part == nil {
			c.part = make([]byte, 0, ChunkSize)
		}
		c.part = append(c.part, p...)
	}
}

// sum appends format VersionKeyed's tag, under nonce, of the trailer t,
// the chunks written and key to dst.
func (c *chunker) sum(dst []byte, nonce []byte, t *[Size]byte, key string) []byte {
	c.end(t)
	n := len(c.aad)
	c.aad = append(c.aad, key...)
	dst = c.k.tag.Seal(dst, nonce, nil, c.aad)
	c.aad = c.aad[:n]
	return dst
}

// sum3 appends format VersionGMAC's tag, under nonce, of the trailer t
// and the chunks written to dst: format VersionKeyed's without the key.
func (c *chunker) sum3(dst []byte, nonce []byte, t *[Size]byte) []byte {
	c.end(t)
	return c.k.tag.Seal(dst, nonce, nil, c.aad)
}

// end hashes the chunk begun, if any (the payload's short last chunk),
// and puts the trailer t at the head of the tag's input.
func (c *chunker) end(t *[Size]byte) {
	if len(c.part) > 0 {
		c.hash(c.part)
		c.part = c.part[:0]
	}
	copy(c.aad, t[:])
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
	obj = s.c.sum(obj, nonce[:], &t, key)
	return append(obj, t[:]...)
}

package trailer

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"fmt"
	"hash/crc32"
	"testing"

	zeebo "github.com/zeebo/blake3"
	"golang.org/x/crypto/chacha20"
	//lint:ignore SA1019 Poly1305 is measured here as a candidate tag, never used to authenticate rows
	"golang.org/x/crypto/poly1305"
	luke "lukechampine.com/blake3"
)

// BenchmarkTrailer measures what the keyed integrity tag costs: writing
// and checking one row's object, unkeyed and keyed, per row size. The ratio
// keyed/unkeyed is the integrity cost:
//
//	go test ./stores/trailer -run '^$' -bench Trailer -count 7
func BenchmarkTrailer(b *testing.B) {
	in, err := NewIntegrity(bytes.Repeat([]byte{0x5a}, 32), nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{64 << 10, 1 << 20, 8 << 20} {
		payload := bytes.Repeat([]byte{7}, size)
		obj := make([]byte, 0, size+TailSize)
		for _, w := range []struct {
			name string
			in   *Integrity
		}{{"unkeyed", nil}, {"keyed", in}} {
			b.Run(fmt.Sprintf("%s/%dKiB", w.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					o := w.in.Append(append(obj[:0], payload...), "bench/v1/00", payload)
					if _, err := w.in.Check(o, "bench/v1/00"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkTagCandidates is how the keyed tag of format VersionKeyed was
// chosen: each candidate MAC's bandwidth over the same bytes on one core,
// against HMAC-SHA256 (format VersionHMAC's tag), the unkeyed trailer's
// CRC32 and a copy, in one run:
//
//	go test ./stores/trailer -run '^$' -bench TagCandidates -cpu 1 -count 7 -benchtime 0.3s
//
// on a quiet machine. Candidates: the tag as written (two-level AES-GMAC,
// gmac.go: "gmac-rows"), and copying and tagging in one pass (Sealer.Copy:
// "gmac-rows+copy"); a one-shot AES-GMAC (crypto/cipher's GCM with the
// bytes as additional data, which cannot be fed a piece at a time);
// keyed BLAKE3 (lukechampine.com/blake3 and github.com/zeebo/blake3);
// Poly1305 with its one-time key from ChaCha20 under the row key and a
// nonce (golang.org/x/crypto). On this repository's two-core AMD EPYC
// (AVX-512, VAES, VPCLMULQDQ), Go 1.26, medians of 7 at 1 MiB:
// HMAC-SHA256 1.61 GB/s, gmac-rows 6.08 (3.77x), one-shot GMAC 6.03,
// zeebo BLAKE3 3.07, lukechampine BLAKE3 2.52, Poly1305 3.28, CRC32 28.6,
// copy 33.0 (docs/security.md gives the run in full, with ranges). Only
// GMAC clears 3x HMAC-SHA256.
func BenchmarkTagCandidates(b *testing.B) {
	key := bytes.Repeat([]byte{0x5a}, 32)
	in, err := NewIntegrity(key, nil)
	if err != nil {
		b.Fatal(err)
	}
	blk, _ := aes.NewCipher(key)
	gcm, _ := cipher.NewGCM(blk)
	nonce := make([]byte, NonceSize)
	var t [Size]byte
	for _, size := range []int{256 << 10, 1 << 20, 4 << 20} {
		buf := make([]byte, size)
		for i := range buf {
			buf[i] = byte(i*7 + i>>9)
		}
		dst := make([]byte, size+TailSize)
		var sum [64]byte
		for _, c := range []struct {
			name string
			run  func()
		}{
			{"hmac-sha256", func() { m := hmac.New(sha256.New, key); m.Write(buf); m.Sum(sum[:0]) }},
			{"gmac-rows", func() {
				c := newChunker(in.current(), int64(size))
				c.write(buf)
				c.sum(sum[:0], nonce, &t, "bench/v1/00")
			}},
			{"gmac-rows+copy", func() { s := in.Sealer(int64(size)); s.Copy(dst, buf); s.Finish(dst[:size], "k") }},
			{"gmac-oneshot", func() { gcm.Seal(sum[:0], nonce, nil, buf) }},
			{"blake3-zeebo", func() { h, _ := zeebo.NewKeyed(key); h.Write(buf); h.Sum(sum[:0]) }},
			{"blake3-luke", func() { h := luke.New(32, key); h.Write(buf); h.Sum(sum[:0]) }},
			{"poly1305-chacha20", func() {
				var otk [32]byte
				s, _ := chacha20.NewUnauthenticatedCipher(key, nonce)
				s.XORKeyStream(otk[:], otk[:])
				m := poly1305.New(&otk)
				m.Write(buf)
				m.Sum(sum[:0])
			}},
			{"crc32", func() { crc32.ChecksumIEEE(buf) }},
			{"copy", func() { copy(dst, buf) }},
		} {
			b.Run(fmt.Sprintf("%s/%dKiB", c.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					c.run()
				}
			})
		}
	}
}

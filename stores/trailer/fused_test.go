package trailer

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/kvblob/kvblob/internal/bound"
)

// TestCopyCRCIsACopyAndTheCRCOfIt, each call bounded: a copy loop that
// never ends fails it (tried: for len(src) >= 0).
func TestCopyCRCIsACopyAndTheCRCOfIt(t *testing.T) {
	for _, n := range []int{0, 1, fuseChunk - 1, fuseChunk, 3*fuseChunk + 7} {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i*7 + i>>9)
		}
		dst := make([]byte, n+3)
		got := bound.Value(t, 10*time.Second, fmt.Sprintf("CopyCRC of %d bytes", n), func() uint32 { return CopyCRC(0, dst, src) })
		if want := crc32.ChecksumIEEE(src); got != want {
			t.Errorf("%d bytes: CRC %08x, want %08x", n, got, want)
		}
		if !bytes.Equal(dst[:n], src) {
			t.Errorf("%d bytes: not copied", n)
		}
	}
}

func TestPutWritesAppendsTrailer(t *testing.T) {
	payload := []byte("some payload")
	want := Encode("k", payload)
	got := bytes.Repeat([]byte{0xff}, len(payload)+Size) // a reused buffer: Put writes every trailer byte
	crc := CopyCRC(0, got, payload)
	Put(got[len(payload):], NameDigest("k"), len(payload), crc)
	if !bytes.Equal(got, want) {
		t.Fatalf("Put's object differs from Encode's")
	}
}

package trailer

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// TestPiecesCostNoAllocationEach: a payload written to a Sealer, or fed to
// a Verifier, in small pieces keeps one chunk's buffer for the bytes of a
// chunk begun but not ended, taken once: the pieces cost what the whole
// payload written at once costs, however many there are, so a store
// writing a row span by span (stores/memory, stores/redis) or reading it
// piece by piece (stores/fs) allocates nothing per piece. (Tried: taking
// a fresh buffer whenever one is already held, gmac.go's c.part == nil as
// !=, fails both.)
func TestPiecesCostNoAllocationEach(t *testing.T) {
	in := integrity(t, keyA, nil)
	const key = "tenant/v1/00"
	payload := bytes.Repeat([]byte{0x5c}, 3*ChunkSize+100)
	inPieces := func(write func([]byte)) {
		for p := payload; len(p) > 0; {
			n := min(100, len(p))
			write(p[:n])
			p = p[n:]
		}
	}
	seal := func(pieces bool) []byte {
		s := in.Sealer(int64(len(payload)))
		if pieces {
			inPieces(s.Write)
		} else {
			s.Write(payload)
		}
		return s.Finish(append([]byte(nil), payload...), key)
	}
	obj := seal(false)
	h, err := in.ReadHead(obj[len(obj)-TailSize:], int64(len(obj)), key)
	require.NoError(t, err)
	verify := func(pieces bool) {
		v := in.Verifier(h)
		if pieces {
			inPieces(v.Write)
		} else {
			v.Write(payload)
		}
		require.NoError(t, v.Check(payload))
	}
	for _, c := range []struct {
		what string
		run  func(pieces bool)
	}{
		{"a Sealer", func(pieces bool) { seal(pieces) }},
		{"a Verifier", verify},
	} {
		// Either count moves by one now and then from run to run (seen
		// under -race and without): a margin of 2 holds that, far under
		// the allocation or more a piece would cost.
		whole := testing.AllocsPerRun(20, func() { c.run(false) })
		pieces := testing.AllocsPerRun(20, func() { c.run(true) })
		assert.LessOrEqual(t, pieces, whole+2, "%s fed %d pieces of 100 bytes allocates as it does fed the payload whole", c.what, (len(payload)+99)/100)
	}
}

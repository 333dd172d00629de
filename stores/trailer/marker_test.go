package trailer_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/trailer"
)

// TestNoObjectIsAMarker: an object, unkeyed or keyed, is never a marker,
// whatever its payload: payloads that are a marker, begin with one, or
// are any prefix of one, of every length up to two markers. The byte
// where an object of a marker's length holds its trailer's magic is, in a
// marker, part of the marker's magic and unlike Magic (tried: a marker
// recognised by its magic alone fails; so does a magic whose bytes there
// are "TLBK").
func TestNoObjectIsAMarker(t *testing.T) {
	at := trailer.MarkerLen - trailer.Size
	assert.NotEqual(t, trailer.Magic, trailer.MarkerMagic[at:at+len(trailer.Magic)])
	in, err := trailer.NewIntegrity(bytes.Repeat([]byte{1}, 32), nil)
	require.NoError(t, err)
	m := trailer.NewMarker()
	for _, base := range []string{m, strings.Repeat(m, 2), trailer.MarkerMagic + strings.Repeat("0", 2*trailer.MarkerLen)} {
		for n := 0; n <= len(base); n++ {
			for _, obj := range [][]byte{trailer.Encode("k", []byte(base[:n])), in.Encode("k", []byte(base[:n]))} {
				require.False(t, trailer.IsMarker(obj), "an object of a %d-byte payload %q is a marker", n, base[:n])
			}
		}
	}
}

// FuzzNoObjectIsAMarker: no payload makes an object a marker.
func FuzzNoObjectIsAMarker(f *testing.F) {
	f.Add([]byte(trailer.MarkerMagic))
	f.Add([]byte(trailer.MarkerMagic[:3]))
	f.Add([]byte(trailer.NewMarker()))
	f.Fuzz(func(t *testing.T, payload []byte) {
		if trailer.IsMarker(trailer.Encode("k", payload)) {
			t.Fatalf("the object of payload %q is a marker", payload)
		}
	})
}

// TestIsMarkerTakesOnlyTheExactForm: a marker is MarkerLen bytes, the
// magic and lower-case hex; NewMarker makes one, a different one each
// time; a value of another length or with other bytes is none.
func TestIsMarkerTakesOnlyTheExactForm(t *testing.T) {
	m := trailer.NewMarker()
	assert.True(t, trailer.IsMarker([]byte(m)), m)
	assert.Len(t, m, trailer.MarkerLen)
	assert.NotEqual(t, m, trailer.NewMarker())
	for _, v := range []string{
		"",
		trailer.MarkerMagic,
		m[:len(m)-1],
		m + "0",
		m + m,
		strings.ToUpper(m[:len(trailer.MarkerMagic)]) + m[len(trailer.MarkerMagic):],
		m[:len(m)-1] + "A",
		m[:len(m)-1] + "g",
		"x" + m[1:],
		trailer.MarkerMagic + "another-writer-0123456789abcdefg", // the right length, not hex
	} {
		assert.False(t, trailer.IsMarker([]byte(v)), "%q", v)
	}
}

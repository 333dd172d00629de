package trailer

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoundTripAndEveryMismatch(t *testing.T) {
	payload := []byte("a KV row")
	obj := Encode("k", payload)
	require.Len(t, obj, len(payload)+Size)
	got, err := Check(obj, "k")
	require.NoError(t, err)
	assert.Equal(t, payload, got)

	tr := len(payload)
	mut := func(f func(o []byte)) []byte { o := bytes.Clone(obj); f(o); return o }
	cases := []struct {
		name string
		obj  []byte
		key  string
		want string
	}{
		{"magic", mut(func(o []byte) { o[tr] = 'X' }), "k", `trailer magic "XLBK", expected "TLBK"`},
		{"version", mut(func(o []byte) { binary.LittleEndian.PutUint16(o[tr+4:], VersionKeyed+1) }), "k", "format version 5, expected 1, 2, 3 or 4"},
		{"name", obj, "other", `name digest does not match key "other"`},
		{"length", mut(func(o []byte) { binary.LittleEndian.PutUint64(o[tr+24:], 99) }), "k", "payload length 8, trailer says 99"},
		{"checksum", mut(func(o []byte) { o[0] ^= 1 }), "k", "CRC32"},
		{"short", obj[:Size-1], "k", "shorter than its 36-byte trailer"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check(c.obj, c.key)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func FuzzCheck(f *testing.F) {
	f.Add(Encode("k", []byte("payload")), "k")
	f.Add([]byte("TLBK"), "k")
	in, _ := NewIntegrity(bytes.Repeat([]byte{1}, 32), nil)
	f.Add(in.Encode("k", []byte("payload")), "k")
	f.Fuzz(func(t *testing.T, obj []byte, key string) {
		payload, err := Check(obj, key)
		if err != nil {
			return
		}
		want := Encode(key, payload)
		if v := binary.LittleEndian.Uint16(obj[len(obj)-Size+4:]); v != Version {
			// Check holds no key: only the tag's bytes may differ.
			binary.LittleEndian.PutUint16(want[len(want)-Size+4:], v)
			want = append(append(append([]byte(nil), payload...), obj[len(payload):len(obj)-Size]...), want[len(payload):]...)
		}
		if !bytes.Equal(want, obj) {
			t.Fatalf("accepted an object that does not re-encode to itself")
		}
	})
}

package trailer

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	keyA = bytes.Repeat([]byte{0xA1}, 32)
	keyB = bytes.Repeat([]byte{0xB2}, 32)
)

func integrity(t *testing.T, cur, prev []byte) *Integrity {
	t.Helper()
	in, err := NewIntegrity(cur, prev)
	require.NoError(t, err)
	return in
}

// TestOverheadIsWhatAppendAdds: Overhead, which drivers size objects
// and recognise a whole row's file by, is exactly the bytes Append puts
// after a payload, with integrity on and off. (Tried: answering Size with
// integrity on fails the keyed case.)
func TestOverheadIsWhatAppendAdds(t *testing.T) {
	payload := []byte("a row's bytes")
	for _, in := range []*Integrity{nil, integrity(t, keyA, nil)} {
		obj := in.Append(bytes.Clone(payload), "k", payload)
		assert.Equal(t, int64(len(obj)-len(payload)), in.Overhead(), "integrity on: %v", in.On())
	}
}

// TestKeyedRoundTrip: a keyed object reads back whole, with the key and
// without it, down to an empty payload (an object exactly its tag and
// trailer long, the shortest keyed object there is).
func TestKeyedRoundTrip(t *testing.T) {
	in := integrity(t, keyA, nil)
	for _, payload := range [][]byte{[]byte("a KV row"), {}} {
		obj := in.Encode("k", payload)
		require.Len(t, obj, len(payload)+TagSize+Size)
		got, err := in.Check(obj, "k")
		require.NoError(t, err, "%d-byte payload", len(payload))
		assert.Equal(t, payload, got)

		// A reader without a key still checks the trailer (and cannot check the tag).
		got, err = Check(obj, "k")
		require.NoError(t, err, "%d-byte payload", len(payload))
		assert.Equal(t, payload, got)
		var off *Integrity
		got, err = off.Check(obj, "k")
		require.NoError(t, err, "%d-byte payload", len(payload))
		assert.Equal(t, payload, got)
		assert.Equal(t, Encode("k", payload), off.Encode("k", payload), "integrity off writes the unkeyed trailer")
	}
}

// forge returns an object whose trailer is whole (name, length and CRC32
// match) and whose payload is evil, keeping obj's tag.
func forge(obj []byte, payload []byte) []byte {
	n := len(obj) - Size - TagSize
	evil := bytes.Clone(obj)
	copy(evil[:n], payload)
	binary.LittleEndian.PutUint32(evil[len(evil)-4:], crc32.ChecksumIEEE(evil[:n]))
	return evil
}

func TestIntegrityRefusesWhatItCannotVerify(t *testing.T) {
	payload := []byte("a KV row")
	in := integrity(t, keyA, nil)
	good := in.Encode("k", payload)
	cases := []struct {
		name string
		obj  []byte
	}{
		{"unkeyed trailer another writer computed", Encode("k", payload)},
		{"tagged under another key", integrity(t, keyB, nil).Encode("k", payload)},
		{"payload changed, CRC32 recomputed", forge(good, []byte("evil row"))},
		{"tag changed", func() []byte { o := bytes.Clone(good); o[len(payload)] ^= 1; return o }()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Check(c.obj, "k")
			require.NoError(t, err, "the trailer alone is whole: only the tag can refuse it")
			_, err = in.Check(c.obj, "k")
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrUnverified), "%v", err)
		})
	}
	t.Run("a good tag over another name", func(t *testing.T) {
		other := in.Encode("other", payload)
		_, err := in.Check(other, "k")
		require.Error(t, err)
		assert.Contains(t, err.Error(), "name digest")
	})
}

func TestRotationAcceptsThePreviousKeyAndWritesTheCurrent(t *testing.T) {
	payload := []byte("a KV row")
	oldRow := integrity(t, keyA, nil).Encode("k", payload)
	rotated := integrity(t, keyB, keyA)
	got, err := rotated.Check(oldRow, "k")
	require.NoError(t, err, "a row under the previous key verifies")
	assert.Equal(t, payload, got)

	newRow := rotated.Encode("k", payload)
	_, err = integrity(t, keyB, nil).Check(newRow, "k")
	require.NoError(t, err, "the writer tags with the current key")
	_, err = integrity(t, keyA, nil).Check(newRow, "k")
	require.ErrorIs(t, err, ErrUnverified, "the writer never tags with the previous key")

	_, err = integrity(t, keyB, nil).Check(oldRow, "k")
	require.ErrorIs(t, err, ErrUnverified, "once the previous key is dropped, its rows are refused")
}

// TestKeysOfMinKeyBytesAreTakenAndShorterRefused holds the key length's
// bound on both sides for each key: MinKeyBytes bytes is a key, one fewer
// is refused naming which key. The test below tried only keys far from
// the bound (tried: len(previous) < MinKeyBytes as <= fails here, and so
// does the current key's).
func TestKeysOfMinKeyBytesAreTakenAndShorterRefused(t *testing.T) {
	at, below := keyA[:MinKeyBytes], keyB[:MinKeyBytes-1]
	for _, c := range []struct {
		name          string
		current, prev []byte
		refused       string // "" when taken
	}{
		{"both at the bound", at, at, ""},
		{"the current key at the bound", at, nil, ""},
		{"the current key one short", below, nil, "the current row key has 15 bytes; it needs at least 16"},
		{"the previous key one short", at, below, "the previous row key has 15 bytes; it needs at least 16"},
	} {
		in, err := NewIntegrity(c.current, c.prev)
		if c.refused != "" {
			assert.EqualError(t, err, "trailer: "+c.refused, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		payload := []byte("a KV row")
		got, err := in.Check(in.Encode("k", payload), "k")
		require.NoError(t, err, c.name)
		assert.Equal(t, payload, got, c.name)
	}
}

func TestKeysParseFromHexAndBase64AndTheEnvironment(t *testing.T) {
	for _, s := range []string{hex.EncodeToString(keyA), base64.StdEncoding.EncodeToString(keyA), base64.RawStdEncoding.EncodeToString(keyA)} {
		k, err := ParseKey(s)
		require.NoError(t, err, s)
		assert.Equal(t, keyA, k)
	}
	_, err := ParseKey("not a key!")
	require.Error(t, err)

	_, err = NewIntegrity(keyA[:MinKeyBytes-1], nil)
	assert.ErrorContains(t, err, "at least 16")
	_, err = NewIntegrity(keyA, keyB[:3])
	assert.ErrorContains(t, err, "previous row key has 3 bytes")

	t.Setenv(EnvKey, "")
	t.Setenv(EnvKeyPrevious, "")
	in, err := IntegrityFromEnv()
	require.NoError(t, err)
	assert.Nil(t, in, "no key: integrity off")

	t.Setenv(EnvKeyPrevious, hex.EncodeToString(keyA))
	_, err = IntegrityFromEnv()
	assert.ErrorContains(t, err, "KVBLOB_ROW_KEY is not")

	t.Setenv(EnvKey, base64.StdEncoding.EncodeToString(keyB))
	in, err = IntegrityFromEnv()
	require.NoError(t, err)
	old := integrity(t, keyA, nil).Encode("k", []byte("row"))
	_, err = in.Check(old, "k")
	require.NoError(t, err, "the previous key from the environment verifies")
	_, err = integrity(t, keyB, nil).Check(in.Encode("k", []byte("row")), "k")
	require.NoError(t, err, "the current key from the environment tags")

	t.Setenv(EnvKey, "!"+hex.EncodeToString(keyA))
	_, err = IntegrityFromEnv()
	require.Error(t, err)
	assert.NotContains(t, err.Error(), hex.EncodeToString(keyA), "a parse error never quotes the key")
}

// TestIntegrityNeverPrintsItsKeys prints an Integrity every way a log, an
// error or a report would, and looks for its keys in every encoding.
func TestIntegrityNeverPrintsItsKeys(t *testing.T) {
	in := integrity(t, keyA, keyB)
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		fmt.Fprintf(&out, verb+"\n", in)
		fmt.Fprintf(&out, verb+"\n", struct{ In *Integrity }{in})
		fmt.Fprintf(&out, verb+"\n", *in) // the value, methods on the pointer left behind
	}
	j, err := json.Marshal(struct{ In *Integrity }{in})
	require.NoError(t, err)
	out.Write(j)
	slog.New(slog.NewJSONHandler(&out, nil)).Info("opened", "integrity", in)
	_, err = in.Check(Encode("k", []byte("row")), "k")
	out.WriteString(err.Error())
	_, err = in.Check(integrity(t, bytes.Repeat([]byte{7}, 32), nil).Encode("k", []byte("row")), "k")
	out.WriteString(err.Error())
	AssertNoSecret(t, out.String(), keyA, keyB)
	assert.Contains(t, out.String(), "redacted")
}

// TestIntegritySaysWhatItHoldsEveryWayItIsPrinted: printed with any verb,
// logged or marshalled, an Integrity says whether it is on and whether a
// previous key is set, and the same every way; On answers whether it is
// on. An output that said nothing would pass the redaction test above
// (tried: dropping Format's write, and On answering in == nil, each fail
// here).
func TestIntegritySaysWhatItHoldsEveryWayItIsPrinted(t *testing.T) {
	for _, c := range []struct {
		in   *Integrity
		on   bool
		says string
	}{
		{nil, false, "integrity off"},
		{integrity(t, keyA, nil), true, "integrity AES-GMAC (current key, redacted)"},
		{integrity(t, keyA, keyB), true, "integrity AES-GMAC (current and previous key, redacted)"},
	} {
		assert.Equal(t, c.on, c.in.On(), c.says)
		assert.Equal(t, c.says, c.in.String())
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%d"} {
			assert.Equal(t, c.says, fmt.Sprintf(verb, c.in), verb)
		}
		assert.Equal(t, c.says, c.in.GoString())
		assert.Equal(t, c.says, c.in.LogValue().String())
		j, err := json.Marshal(c.in)
		require.NoError(t, err)
		if c.in == nil {
			assert.Equal(t, "null", string(j), "encoding/json writes a nil pointer itself")
			continue
		}
		assert.Equal(t, fmt.Sprintf("%q", c.says), string(j))
	}
}

// recordTB is a TB that records what AssertNoSecret reports.
type recordTB struct{ errs []string }

func (r *recordTB) Helper() {}
func (r *recordTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestAssertNoSecretFindsEveryFormAndRefusesShortSecrets: the helper other
// stores' tests use finds a secret of 4 bytes or more in each form it
// names, passes output without it, and refuses a shorter secret, which
// would match by chance (tried: refusing 4 bytes too).
func TestAssertNoSecretFindsEveryFormAndRefusesShortSecrets(t *testing.T) {
	s := []byte{0xde, 0xad, 0xbe, 0xef}
	for _, c := range []struct {
		name, out string
		secret    []byte
		want      string // "" when nothing is reported
	}{
		{"absent", "nothing to see", s, ""},
		{"raw", "x" + string(s), s, "(raw form)"},
		{"hex", "key=deadbeef", s, "(hex form)"},
		{"HEX", "key=DEADBEEF", s, "(HEX form)"},
		{"base64", "key=" + base64.StdEncoding.EncodeToString(s), s, "(base64"},
		{"%v", fmt.Sprint("key=", s), s, "(%v form)"},
		{"3 bytes", "nothing to see", s[:3], "secret 0 is 3 bytes: too short to look for"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var r recordTB
			AssertNoSecret(&r, c.out, c.secret)
			if c.want == "" {
				assert.Empty(t, r.errs)
				return
			}
			require.NotEmpty(t, r.errs)
			assert.Contains(t, r.errs[0], c.want)
		})
	}
}

// TestARuntimeThatRefusesTheTagIsAnError: under GODEBUG=fips140=only the
// Go runtime refuses GCM with nonces the caller chooses, which the tag
// needs. NewIntegrity (and so IntegrityFromEnv, at a program's start) then
// returns an error that says so, where it panicked before (tried: the
// panic back fails here, the child's exit status). The check runs in a
// child process of this test binary, since fips140 is fixed when a
// program starts.
func TestARuntimeThatRefusesTheTagIsAnError(t *testing.T) {
	if os.Getenv("KVBLOB_TRAILER_TEST_CHILD") == "fips140-only" {
		_, err := NewIntegrity(keyA, nil)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "fips140=only")
		AssertNoSecret(t, err.Error(), keyA)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestARuntimeThatRefusesTheTagIsAnError$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "KVBLOB_TRAILER_TEST_CHILD=fips140-only", "GODEBUG=fips140=only")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child under fips140=only:\n%s", out)
	assert.Contains(t, string(out), "--- PASS: TestARuntimeThatRefusesTheTagIsAnError")
}

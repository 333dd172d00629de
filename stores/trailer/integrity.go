package trailer

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
)

// MinKeyBytes is the shortest row key Integrity accepts.
const MinKeyBytes = 16

// The environment variables KeysFromEnv reads: the current row key, and the
// previous one while a rotation is under way. Each is hex or standard
// base64 (padded or not) of at least MinKeyBytes bytes.
const (
	EnvKey         = "KVBLOB_ROW_KEY"
	EnvKeyPrevious = "KVBLOB_ROW_KEY_PREVIOUS"
)

// Integrity holds the row keys of the keyed integrity tag. A writer tags
// each object (format VersionKeyed) with AES-GMAC under the current key,
// over the payload, the whole trailer (magic, format version, name
// digest, payload length, CRC32) and the key it is stored under, with a
// fresh random nonce (gmac.go); a reader accepts an object only if its
// tag verifies under the current or the previous key, so a key is
// rotated by making the old key previous, then dropping it once no row
// written under it is read. A reader also verifies the tags of the
// formats before (VersionGMAC, and VersionHMAC's HMAC-SHA256) under
// either key, so rows written before an upgrade still read.
//
// A nil *Integrity is integrity off: Append writes the unkeyed trailer and
// Check checks it (a keyed object's tag is then not verified). With
// integrity on, an unkeyed object, whose trailer anyone can compute, is
// refused.
//
// The keys never leave: String, Format, GoString, LogValue and MarshalJSON
// print that keys are set, never a byte of them, and no error names them.
// An Integrity is safe for concurrent use.
type Integrity struct {
	// The keys live only inside these closures, which fmt and reflection
	// cannot look into: printing an Integrity value, with any verb, prints
	// no key either.
	current, previous func() *keyset
}

// NewIntegrity returns integrity under current (the writer's key and the
// reader's first) and previous (nil, or the key before a rotation). Each
// key is at least MinKeyBytes long. The keys are copied. It fails too
// where the Go runtime refuses GCM with nonces the caller chooses
// (GODEBUG=fips140=only), which the tag needs (gmac.go).
func NewIntegrity(current, previous []byte) (*Integrity, error) {
	if len(current) < MinKeyBytes {
		return nil, fmt.Errorf("trailer: the current row key has %d bytes; it needs at least %d", len(current), MinKeyBytes)
	}
	if previous != nil && len(previous) < MinKeyBytes {
		return nil, fmt.Errorf("trailer: the previous row key has %d bytes; it needs at least %d", len(previous), MinKeyBytes)
	}
	in := &Integrity{}
	var err error
	if in.current, err = newKeyset(current); err == nil && previous != nil {
		in.previous, err = newKeyset(previous)
	}
	if err != nil {
		return nil, fmt.Errorf("trailer: this program's Go runtime refuses the row tag's AES-GCM (%w); the tag needs GCM with nonces it chooses, which GODEBUG=fips140=only forbids: run without fips140=only, or without a row key", err)
	}
	return in, nil
}

// ParseKey decodes a row key written as hex or as standard base64 (padded
// or not). Its error never quotes the text.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if b, err := hex.DecodeString(s); err == nil {
		return b, nil
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	if b, err := base64.RawStdEncoding.DecodeString(s); err == nil {
		return b, nil
	}
	return nil, fmt.Errorf("a row key of %d characters is neither hex nor base64", len(s))
}

// ParseIntegrity is NewIntegrity over keys written as text (see ParseKey);
// an empty previous means none.
func ParseIntegrity(current, previous string) (*Integrity, error) {
	cur, err := ParseKey(current)
	if err != nil {
		return nil, fmt.Errorf("trailer: current row key: %w", err)
	}
	var prev []byte
	if strings.TrimSpace(previous) != "" {
		if prev, err = ParseKey(previous); err != nil {
			return nil, fmt.Errorf("trailer: previous row key: %w", err)
		}
	}
	return NewIntegrity(cur, prev)
}

// IntegrityFromEnv reads EnvKey and EnvKeyPrevious. It returns nil (integrity
// off) and no error when EnvKey is unset or empty, and refuses a previous
// key without a current one.
func IntegrityFromEnv() (*Integrity, error) {
	cur, prev := os.Getenv(EnvKey), os.Getenv(EnvKeyPrevious)
	if strings.TrimSpace(cur) == "" {
		if strings.TrimSpace(prev) != "" {
			return nil, fmt.Errorf("trailer: %s is set but %s is not; set the current key too", EnvKeyPrevious, EnvKey)
		}
		return nil, nil
	}
	in, err := ParseIntegrity(cur, prev)
	if err != nil {
		return nil, fmt.Errorf("%w (from %s/%s)", err, EnvKey, EnvKeyPrevious)
	}
	return in, nil
}

// On reports whether integrity is on.
func (in *Integrity) On() bool { return in != nil }

// hmacTag is format VersionHMAC's tag: HMAC-SHA256 of the payload and
// the trailer t.
func hmacTag(k *keyset, payload, t []byte) []byte {
	m := k.hmac()
	m.Write(payload)
	m.Write(t)
	return m.Sum(nil)
}

// Append appends payload's tag and trailer for key to obj (which must end
// with the payload) and returns the object. With integrity off it is the
// package's Append.
func (in *Integrity) Append(obj []byte, key string, payload []byte) []byte {
	if in == nil {
		return Append(obj, key, payload)
	}
	s := in.Sealer(int64(len(payload)))
	s.Write(payload)
	return s.Finish(obj, key)
}

// Overhead is how many bytes Append adds after a payload: a tag and a
// trailer (TagSize + Size) with integrity on, a trailer (Size) with it
// off. An object of format VersionHMAC, which readers still read, has
// TailSize.
func (in *Integrity) Overhead() int64 {
	if in == nil {
		return Size
	}
	return TagSize + Size
}

// Encode returns payload followed by its tag and trailer for key.
func (in *Integrity) Encode(key string, payload []byte) []byte {
	obj := make([]byte, 0, len(payload)+int(in.Overhead()))
	obj = append(obj, payload...)
	return in.Append(obj, key, payload)
}

// ErrUnverified is wrapped by every error of Check that refuses an object
// whose trailer is whole but whose tag does not verify, or that has none.
var ErrUnverified = errors.New("row integrity not verified")

// Check checks obj's trailer against key and, with integrity on, its tag
// under the current and then the previous key, and returns its payload.
// With integrity off it is the package's Check.
func (in *Integrity) Check(obj []byte, key string) ([]byte, error) {
	h, err := in.ReadHead(obj[len(obj)-min(len(obj), TailSize):], int64(len(obj)), key)
	if err != nil {
		return nil, err
	}
	payload := obj[:h.Len]
	v := in.Verifier(h)
	v.Write(payload)
	if err := v.Check(payload); err != nil {
		return nil, err
	}
	return payload, nil
}

// String says whether integrity is on and whether a previous key is set.
func (in *Integrity) String() string {
	switch {
	case in == nil:
		return "integrity off"
	case in.previous != nil:
		return "integrity AES-GMAC (current and previous key, redacted)"
	}
	return "integrity AES-GMAC (current key, redacted)"
}

// GoString is String, so %#v prints no key either.
func (in *Integrity) GoString() string { return in.String() }

// Format prints String for every verb.
func (in *Integrity) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(in.String())) }

// LogValue is String, for log/slog.
func (in *Integrity) LogValue() slog.Value { return slog.StringValue(in.String()) }

// MarshalJSON is String, so a logger or a report that marshals the value
// prints no key.
func (in *Integrity) MarshalJSON() ([]byte, error) { return json.Marshal(in.String()) }

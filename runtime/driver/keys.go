package driver

import (
	"encoding/hex"
	"fmt"
	"strings"
	"unsafe"
)

// KeyVersion is the key format's version segment.
const KeyVersion = "v1"

// MaxKeyBytes bounds every key, prefix/v1/hex(name), of every store: the
// admission every generated driver runs (package rules) refuses a longer
// one with a RejectedError naming RuleKeyTooLong before any store call,
// and a spec's keys.max_bytes may only lower it. One bound for every host
// and every way a store resolves a key: the fs store's key becomes a path,
// which openat2 refuses past PATH_MAX (4096) while a walk of components
// takes any length, so without it two hosts answer one key differently;
// and a key of any length costs a store work and room in proportion to it
// (the fs store makes a directory per 200 hex digits). 1024 is S3's bound
// on an object key, and, with the fs layout's few bytes more, far under
// PATH_MAX.
const MaxKeyBytes = 1024

// Stem is a checked key prefix: every key under it is Stem + hex(name).
type Stem struct{ s string }

// KeyStem checks prefix once and returns the stem every key under it starts
// with, so a backend can build many keys without re-checking the prefix.
//
// A prefix is one or more segments of [A-Za-z0-9_.-] joined by '/', with no
// empty segment: it may not be empty, start or end with '/', or contain
// "//". These rules keep distinct (prefix, name) pairs from encoding alike.
// A segment may not be "." or "..": a store that keeps objects as paths
// (a filesystem, an object store with path semantics) would read them as
// "this directory" and "its parent", and a key could leave its root. A
// prefix that leaves no room under MaxKeyBytes for a one-byte name is
// refused: no key under it would be admitted.
//
// Tenant prefixes never nest. A segment may not be a key version ('v'
// and digits: "v1", "v2", ...), so the stem prefix/v1/ ends every
// prefix: no key under one prefix starts with another prefix's stem, and
// the stem's pattern (Stem.Pattern: prefix/v1/*), which a Redis ACL or an
// S3 policy grants a tenant, matches the keys of that prefix and no other
// prefix's, even when one prefix is the start of another ("kv" and
// "kv/model-a"), which a pattern of the prefix alone (prefix/*) would
// match too. (A key is prefix/v1/hex(name), with no '/' after the stem:
// for a stem to start another prefix's key, that prefix would hold the
// segment "v1".) docs/security.md builds its recipes on this rule.
func KeyStem(prefix string) (Stem, error) {
	if prefix == "" {
		return Stem{}, fmt.Errorf("driver: key prefix is empty; want segments like \"kv/model-a\"")
	}
	if n := len(prefix) + len(KeyVersion) + 2 + 2; n > MaxKeyBytes {
		return Stem{}, fmt.Errorf("driver: key prefix of %d bytes leaves no room for a name: a key is at most MaxKeyBytes (%d) bytes; shorten the prefix", len(prefix), MaxKeyBytes)
	}
	for _, seg := range strings.Split(prefix, "/") {
		if seg == "" {
			return Stem{}, fmt.Errorf("driver: key prefix %q has an empty segment", prefix)
		}
		if seg == "." || seg == ".." {
			return Stem{}, fmt.Errorf("driver: key prefix %q has a %q segment, which a store keeping objects as paths reads as a directory step; want a name", prefix, seg)
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
				return Stem{}, fmt.Errorf("driver: key prefix %q has %q; want only [A-Za-z0-9_.-] and '/'", prefix, c)
			}
		}
		if isKeyVersion(seg) {
			return Stem{}, fmt.Errorf("driver: key prefix %q has the segment %q, the form of a key version; a tenant's ACL or policy pattern (prefix/%s/*) would then match the keys of the prefix before it, so name the segment otherwise (e.g. %q)", prefix, seg, KeyVersion, "model-"+seg)
		}
	}
	return Stem{s: prefix + "/" + KeyVersion + "/"}, nil
}

// String returns the stem, ending in "/v1/".
func (s Stem) String() string { return s.s }

// Pattern is the glob of every key under the stem and of no key under any
// other prefix's: the stem and '*' ("kv/model-a/v1/*"). It is the key
// pattern of a tenant's Redis ACL (~PATTERN) and the resource of its S3
// policy (arn:aws:s3:::BUCKET/PATTERN); a prefix holds no glob character
// of either ('*', '?', '[', ']', a backslash). The zero Stem has none: "".
func (s Stem) Pattern() string {
	if s.s == "" {
		return ""
	}
	return s.s + "*"
}

// isKeyVersion reports whether seg has the form of a key version: 'v'
// and one or more digits.
func isKeyVersion(seg string) bool {
	if len(seg) < 2 || seg[0] != 'v' {
		return false
	}
	for _, c := range seg[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Key returns the key of name under the stem. name must not be empty.
// A key longer than MaxKeyBytes is returned all the same; admission
// refuses it (RuleKeyTooLong). It allocates once: the key's bytes, which
// nothing else refers to.
func (s Stem) Key(name []byte) (string, error) {
	if s.s == "" {
		return "", fmt.Errorf("driver: zero Stem; build one with KeyStem")
	}
	if len(name) == 0 {
		return "", fmt.Errorf("driver: key name is empty")
	}
	b := make([]byte, len(s.s)+hex.EncodedLen(len(name)))
	hex.Encode(b[copy(b, s.s):], name)
	// b is never written again and never seen as a []byte: it is the
	// string's, as strings.Builder.String hands its buffer over.
	return unsafe.String(&b[0], len(b)), nil
}

// Key returns prefix/v1/hex(name).
func Key(prefix string, name []byte) (string, error) {
	stem, err := KeyStem(prefix)
	if err != nil {
		return "", err
	}
	return stem.Key(name)
}

// ParseKey splits a key into its prefix and name. It refuses anything Key
// would not have produced.
func ParseKey(key string) (prefix string, name []byte, err error) {
	i := strings.LastIndex(key, "/"+KeyVersion+"/")
	if i < 0 {
		return "", nil, fmt.Errorf("driver: key %q has no /%s/ segment", key, KeyVersion)
	}
	prefix, h := key[:i], key[i+len(KeyVersion)+2:]
	if _, err := KeyStem(prefix); err != nil {
		return "", nil, err
	}
	if h == "" || strings.ToLower(h) != h {
		return "", nil, fmt.Errorf("driver: key %q name is not lower-case hex", key)
	}
	name, err = hex.DecodeString(h)
	if err != nil {
		return "", nil, fmt.Errorf("driver: key %q name: %v", key, err)
	}
	return prefix, name, nil
}

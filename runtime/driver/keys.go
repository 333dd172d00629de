package driver

import (
	"encoding/hex"
	"fmt"
	"strings"
	"unsafe"
)

// KeyVersion is the key format's version segment.
const KeyVersion = "v1"

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
// "this directory" and "its parent", and a key could leave its root.
func KeyStem(prefix string) (Stem, error) {
	if prefix == "" {
		return Stem{}, fmt.Errorf("driver: key prefix is empty; want segments like \"kv/model-a\"")
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
	}
	return Stem{s: prefix + "/" + KeyVersion + "/"}, nil
}

// String returns the stem, ending in "/v1/".
func (s Stem) String() string { return s.s }

// Key returns the key of name under the stem. name must not be empty.
// It allocates once: the key's bytes, which nothing else refers to.
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

// KeySlab makes the keys of many names under one stem out of one
// allocation: a view of 4,096 rows costs one allocation for its keys, not
// 4,096 (a key per row was a third of a backend's submission time). Each
// key is a string over the slab's own bytes, written once before the
// string is made and never again, so a key is as immutable as Key's. A
// key keeps its whole slab alive: one who keeps a key past the call it
// came with (a store's table of keys) copies it (strings.Clone), or the
// slab of every view it came with stays on the heap for it.
type KeySlab struct {
	stem string
	buf  []byte // room for the keys still to make
}

// Slab returns a KeySlab with room for the keys of names names of
// nameBytes bytes in all.
func (s Stem) Slab(names, nameBytes int) KeySlab {
	return KeySlab{stem: s.s, buf: make([]byte, names*len(s.s)+hex.EncodedLen(nameBytes))}
}

// Key returns the key of name, which must not be empty, as Stem.Key does,
// in the slab's next bytes. It panics when the slab has no room left:
// Slab was given fewer names or name bytes than its keys take.
func (k *KeySlab) Key(name []byte) string {
	n := len(k.stem) + hex.EncodedLen(len(name))
	if len(name) == 0 || n > len(k.buf) {
		panic(fmt.Sprintf("driver: KeySlab.Key of a name of %d bytes with %d bytes of room", len(name), len(k.buf)))
	}
	b := k.buf[:n:n]
	k.buf = k.buf[n:]
	hex.Encode(b[copy(b, k.stem):], name)
	return unsafe.String(&b[0], n) // b is never written again (KeySlab)
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

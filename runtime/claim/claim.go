// Package claim is the identity a writer claims a key by on a shared
// medium: a random token the claimant writes into its marker (a file, a
// value) and compares before it treats a marker as its own or as the dead
// one it judged.
//
// A medium's own identities are no claim: a filesystem may hand a freed
// inode number to the next file at once (ext4 does), so a writer that
// judged a marker dead by its device and inode, and moved aside what was
// then under the name, could take a fresh marker another writer had just
// made in the number the dead one freed: two writers on one key. A token
// of 128 random bits is never made twice, whatever the medium reuses.
//
// The rules, for a store that claims with a marker:
//   - a claim writes New's token into its marker as it makes it
//     (Token.AppendText), and a marker is the claimant's only while it
//     holds that token;
//   - a takeover reads the old marker (Seen: its token and whether it is
//     past its lease), moves it aside, reads what it moved, and removes it
//     only when Judged.Is says it is the marker judged dead; else it puts
//     it back, or, when another marker holds the name by then, leaves it
//     aside for the store's sweep;
//   - a release removes the marker only while it holds the releaser's
//     token.
//
// A store whose server compares for it (Redis's SET NX PX and compare
// scripts, S3's conditional PutObject) uses the token as the value it
// compares, or needs no marker at all; its spec says which.
package claim

import (
	"crypto/rand"
	"encoding/hex"
)

// Token is a claimant's identity: 16 random bytes. The zero Token is
// none: a marker whose content is not a token (empty: its writer died
// between making it and writing it; or written by something else).
type Token [16]byte

// TextLen is the length of a token's text (lower-case hex).
const TextLen = 2 * len(Token{})

// New returns a token no other claim holds (crypto/rand; the chance of
// two alike among 2^32 claims is 2^-64).
func New() Token {
	var t Token
	_, _ = rand.Read(t[:]) // crypto/rand.Read never fails (Go 1.24)
	return t
}

// IsZero reports whether t is no token.
func (t Token) IsZero() bool { return t == Token{} }

// AppendText appends t's text, what a marker holds, to b.
func (t Token) AppendText(b []byte) []byte { return hex.AppendEncode(b, t[:]) }

// String is t's text.
func (t Token) String() string { return hex.EncodeToString(t[:]) }

// Parse reads a marker's content: exactly a token's text, else the zero
// Token (no token: an empty marker, a short or long one, upper-case hex).
func Parse(b []byte) Token {
	var t Token
	if len(b) != TextLen {
		return Token{}
	}
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return Token{}
		}
	}
	_, _ = hex.Decode(t[:], b)
	return t
}

// Seen is what a claimant read of a marker: its token (zero: none) and
// whether it is past its lease by the claimant's clock.
type Seen struct {
	Token Token
	Dead  bool
}

// Judged is a marker a takeover judged dead, and reads again once it moved
// what was under the marker's name aside.
type Judged Seen

// Is reports whether moved, what a takeover moved aside, is the marker it
// judged dead: judged dead, still dead, and holding the same token. A
// fresh marker made in between holds another token (or, in the instant
// between its making and its writing, none: then it is not dead, being
// just made), so it is never taken for the dead one, whatever identity the
// medium gave it.
func (j Judged) Is(moved Seen) bool { return j.Dead && moved.Dead && moved.Token == j.Token }

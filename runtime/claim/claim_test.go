package claim

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestATokenReadsBackFromItsTextAndNothingElseIsAToken(t *testing.T) {
	a, b := New(), New()
	assert.NotEqual(t, a, b, "two claims, one token")
	assert.False(t, a.IsZero())
	assert.Equal(t, a, Parse(a.AppendText(nil)))
	assert.Len(t, a.String(), TextLen)
	for _, bad := range []string{"", a.String()[1:], a.String() + "0", strings.ToUpper(a.String()), strings.Repeat("g", TextLen), "\x00" + a.String()[1:]} {
		assert.True(t, Parse([]byte(bad)).IsZero(), "%q read as a token", bad)
	}
}

// TestOnlyTheMarkerJudgedDeadIsTakenOver: a takeover removes what it moved
// aside only when it is dead and holds the token it judged dead; a fresh
// marker (another token, or none yet and not dead) is never taken for it
// (tried: comparing the tokens alone takes a just-made marker, which holds
// none yet, for a tokenless dead one).
func TestOnlyTheMarkerJudgedDeadIsTakenOver(t *testing.T) {
	old, fresh := New(), New()
	for _, tc := range []struct {
		name   string
		judged Judged
		moved  Seen
		is     bool
	}{
		{"the dead marker", Judged{old, true}, Seen{old, true}, true},
		{"a dead marker with no token", Judged{Token{}, true}, Seen{Token{}, true}, true},
		{"a fresh marker in between", Judged{old, true}, Seen{fresh, false}, false},
		{"a fresh marker, dated dead", Judged{old, true}, Seen{fresh, true}, false},
		{"a just-made marker, no token yet", Judged{Token{}, true}, Seen{Token{}, false}, false},
		{"a live marker is never judged", Judged{old, false}, Seen{old, true}, false},
	} {
		assert.Equal(t, tc.is, tc.judged.Is(tc.moved), tc.name)
	}
}

// TestParseTakesEveryLowerHexDigitAndNothingBeside: a marker's text is
// lower-case hex, each bound of each range taken and the byte just past it
// refused. Each text starts with the byte tried and goes on in '1's, so
// that a wrong answer is never the zero token a right one could also be
// (tried: each of Parse's eight range comparisons flipped or loosened by
// one, and its && and || swapped, fails here).
func TestParseTakesEveryLowerHexDigitAndNothingBeside(t *testing.T) {
	for _, tc := range []struct {
		c     byte
		token bool
	}{
		{'0', true}, {'9', true}, {'a', true}, {'f', true}, {'5', true}, {'c', true},
		{'0' - 1, false}, {'9' + 1, false}, {'a' - 1, false}, {'f' + 1, false},
		{'A', false}, {'F', false}, {' ', false}, {0x80, false},
	} {
		text := string([]byte{tc.c}) + strings.Repeat("1", TextLen-1)
		got := Parse([]byte(text))
		if tc.token {
			assert.Equal(t, text, got.String(), "%q read as another token", text)
		} else {
			assert.True(t, got.IsZero(), "%q read as a token", text)
		}
	}
}

// TestTheMarkerTextIsPinned: a marker another process wrote (stores/fs
// keeps them on a shared filesystem) holds 32 lower-case hex digits; a
// token of another size would read none of them as a token (tried: Token
// as 17 bytes fails here, where the round trip of its own text passes).
func TestTheMarkerTextIsPinned(t *testing.T) {
	const pinned = "00112233445566778899aabbccddeeff"
	assert.Equal(t, 32, TextLen)
	tok := Parse([]byte(pinned))
	assert.Equal(t, pinned, tok.String())
	assert.Equal(t, "xx"+pinned, string(tok.AppendText([]byte("xx"))))
	assert.False(t, tok.IsZero())
}

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

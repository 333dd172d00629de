package driver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParseKeySaysWhatIsWrong: each key ParseKey refuses is refused for
// what is wrong with it, first the version segment, then the prefix before
// it (an empty one included: a key that starts with the segment), then the
// name after it.
func TestParseKeySaysWhatIsWrong(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{"kv/ab", "has no /v1/ segment"},
		{"/v1/ab", "key prefix is empty"},
		{"a//b/v1/ab", "has an empty segment"},
		{"kv/v1/", "name is not lower-case hex"},
		{"kv/v1/AB", "name is not lower-case hex"},
		{"kv/v1/abc", "name: encoding/hex: odd length hex string"},
	} {
		_, _, err := ParseKey(c.key)
		assert.ErrorContains(t, err, c.want, "key %q", c.key)
	}
}

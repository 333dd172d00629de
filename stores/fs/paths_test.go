package fs_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPathsRefusesAKeyOutsideTheLayout: a key maps to files under the
// root only through spec/fs-posix.yaml's layout, prefix/v1/hex; each key
// outside it is refused with what is wrong with it: no version segment,
// an empty prefix (a key that starts with its version segment), a prefix
// KeyStem refuses, a name that is not lower-case hex. (Tried: the version
// segment taken as missing at the key's start names a missing segment for
// the empty prefix.)
func TestPathsRefusesAKeyOutsideTheLayout(t *testing.T) {
	d := Open(t, tree.Value())
	for _, tc := range []struct{ key, want string }{
		{"kv/00", `has no /v1/ segment`},
		{"/v1/00", `key prefix is empty`},
		{"kv//a/v1/00", `has an empty segment`},
		{"kv/../v1/00", `".." segment`},
		{"kv/v1/", `name is not lower-case hex`},
		{"kv/v1/0A", `name is not lower-case hex`},
	} {
		_, _, err := d.Paths(tc.key)
		if assert.Error(t, err, "%q", tc.key) {
			assert.Contains(t, err.Error(), tc.want, "%q", tc.key)
		}
	}
	file, marker, err := d.Paths("kv/a/v1/00")
	require.NoError(t, err)
	rel, err := filepath.Rel(d.Root(), file)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(rel, filepath.Join("kv", "a", "v1")+string(filepath.Separator)), "the file %s is under its prefix and version", rel)
	assert.True(t, strings.HasPrefix(marker, file), "the marker %s is named after its file %s", marker, file)
}

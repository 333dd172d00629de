package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCgoflagsDigestFollowsTheHeadersNames: the digest covers each
// header's path under its include dir, not its bytes alone: a header
// renamed, or moved to another subfolder, with its bytes unchanged, is
// another SDK to an #include, so the digest changes; two trees whose
// headers hold the same bytes under the same names give the same digest.
// TestCgoflagsDigestFollowsTheSDK changes bytes only, which a digest of
// the bytes alone passes. (Tried: dropping the name from what sdkDigest
// hashes fails both renames.)
func TestCgoflagsDigestFollowsTheHeadersNames(t *testing.T) {
	for _, c := range []struct {
		name, from, to string // relative to the tree's root
	}{
		{"a header renamed", "src/mooncake-store/include/sub/types.hpp", "src/mooncake-store/include/sub/kinds.hpp"},
		{"a header moved to another subfolder", "src/mooncake-store/include/sub/types.hpp", "src/mooncake-store/include/other/types.hpp"},
	} {
		t.Run(c.name, func(t *testing.T) {
			build, _ := fakeBuild(t, false)
			root := filepath.Dir(build)
			from, to := filepath.Join(root, c.from), filepath.Join(root, c.to)
			require.NoError(t, os.MkdirAll(filepath.Dir(from), 0o755))
			require.NoError(t, os.WriteFile(from, []byte("struct T { int x; };\n"), 0o644))
			before := digestOf(t, build)
			require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
			require.NoError(t, os.Rename(from, to))
			assert.NotEqual(t, before, digestOf(t, build), "the same bytes under another name")
			require.NoError(t, os.Rename(to, from))
			assert.Equal(t, before, digestOf(t, build), "the same bytes under the same name again")
		})
	}
}

package testchild

import (
	"flag"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCommandPassesTheCoverDirOn: a child of a run with coverage writes
// into the parent's directory; a child of a run without it gets the
// arguments it was given and nothing more.
func TestCommandPassesTheCoverDirOn(t *testing.T) {
	f := flag.Lookup("test.gocoverdir")
	require.NotNil(t, f, "a test binary has -test.gocoverdir")
	was := f.Value.String()
	t.Cleanup(func() { _ = f.Value.Set(was) })

	for _, dir := range []string{"", t.TempDir()} {
		require.NoError(t, f.Value.Set(dir))
		cmd := Command("-test.run=^$", "-test.v")
		want := []string{os.Args[0], "-test.run=^$", "-test.v"}
		if dir != "" {
			want = append(want, "-test.gocoverdir="+dir)
		}
		assert.Equal(t, want, cmd.Args, "with -test.gocoverdir %q", dir)
		assert.Equal(t, dir, CoverDir())
	}
}

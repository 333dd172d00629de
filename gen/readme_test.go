package gen

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/tools/txtar"
)

// TestSpecREADMEShowsTheGetContinueGolden keeps spec/README.md's get-side
// CONTINUE example equal to the calls of the golden case it cites, so the
// example is a spec the generator accepts and its cases are the golden's.
func TestSpecREADMEShowsTheGetContinueGolden(t *testing.T) {
	const golden = "testdata/continue-get.txtar"
	readme, err := os.ReadFile("../spec/README.md")
	require.NoError(t, err)
	text := string(readme)
	at := strings.Index(text, "(`gen/"+golden+"`)")
	require.NotEqual(t, -1, at, "spec/README.md no longer cites gen/%s", golden)
	block, ok := yamlBlockAfter(text[at:])
	require.True(t, ok, "spec/README.md has no yaml block after its mention of gen/%s", golden)

	ar, err := txtar.ParseFile(golden)
	require.NoError(t, err)
	var spec string
	for _, f := range ar.Files {
		if f.Name == "spec.yaml" {
			spec = string(f.Data)
		}
	}
	block = strings.TrimPrefix(block, "calls:\n")
	require.Contains(t, spec, block, "spec/README.md's get-side CONTINUE example differs from %s's calls; copy them", golden)
}

// yamlBlockAfter returns the body of the first ```yaml block in text.
func yamlBlockAfter(text string) (string, bool) {
	_, rest, ok := strings.Cut(text, "```yaml\n")
	if !ok {
		return "", false
	}
	body, _, ok := strings.Cut(rest, "```")
	return body, ok
}

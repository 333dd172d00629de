package trailer

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// TB is the part of testing.TB AssertNoSecret uses.
type TB interface {
	Helper()
	Errorf(format string, args ...any)
}

// AssertNoSecret fails t if out holds any of secrets: as is, as hex (either
// case), as base64 (padded or not, standard or URL), or as Go's %v of a byte
// slice. Secrets shorter than 4 bytes are an error: they would match by
// chance.
func AssertNoSecret(t TB, out string, secrets ...[]byte) {
	t.Helper()
	for i, s := range secrets {
		if len(s) < 4 {
			t.Errorf("secret %d is %d bytes: too short to look for", i, len(s))
			continue
		}
		forms := map[string]string{
			"raw":        string(s),
			"hex":        hex.EncodeToString(s),
			"HEX":        fmt.Sprintf("%X", s),
			"base64":     base64.StdEncoding.EncodeToString(s),
			"base64-raw": base64.RawStdEncoding.EncodeToString(s),
			"base64-url": base64.RawURLEncoding.EncodeToString(s),
			"%v":         fmt.Sprint(s),
			"%q":         fmt.Sprintf("%q", s),
		}
		for form, f := range forms {
			if bytes.Contains([]byte(out), []byte(f)) {
				t.Errorf("secret %d appears in the output (%s form)", i, form)
			}
		}
	}
}

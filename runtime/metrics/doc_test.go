package metrics_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	memorygen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/stores/memory"
)

// TestOperatingDocNamesEveryFamilyAndEvent keeps docs/operating.md
// complete: every family scraped and every log message and field the
// tests above see has its row in one of its tables.
func TestOperatingDocNamesEveryFamilyAndEvent(t *testing.T) {
	doc, err := os.ReadFile("../../docs/operating.md")
	require.NoError(t, err)
	d := memory.New(memory.Options{})
	e := newEnv(t, d, "memory", backend.Config{SlowCall: time.Millisecond})
	families := map[string]bool{}
	for k := range e.scrape() {
		family, _, _ := strings.Cut(k, "{")
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := strings.CutSuffix(family, suffix); ok && strings.HasSuffix(f, "_seconds") {
				family = f
			}
		}
		families[family] = true
	}
	require.Len(t, families, 18, "9 driver families and 9 backend families")
	for family := range families {
		if !strings.Contains(string(doc), "\n| `"+family+"` |") {
			t.Errorf("docs/operating.md has no table row for the family %s", family)
		}
	}

	// Log one event of each kind: a fault, a slow call, a pinned access.
	entered, release := d.Store().Hold(memory.CallPut, e.key(0))
	defer release()
	pub, err := e.be.Publish(t.Context(), e.view(0, 1, 0))
	require.NoError(t, err)
	<-entered
	e.logs.waitFor(t, "backend: a driver call is taking longer than the slow-call threshold")
	release()
	e.wait(pub)
	e.quiesce(pub)
	d.Store().Inject(memory.CallGet, e.key(0), memorygen.IOError)
	get, err := e.be.Fetch(t.Context(), e.view(0, 1, 4))
	require.NoError(t, err)
	e.wait(get)
	e.quiesce(get)
	d.LoseEvidenceNext()
	lost, err := e.be.Publish(t.Context(), e.view(1, 1, 8))
	require.NoError(t, err)
	e.wait(lost)
	e.logs.waitFor(t, "driver: operation access unprovable; its memory is pinned and must never be reused")

	for _, ev := range e.logs.events(t) {
		if !strings.Contains(string(doc), "\n| `"+ev["message"].(string)+"` |") {
			t.Errorf("docs/operating.md has no table row for the event %q", ev["message"])
		}
		for field := range ev {
			if !strings.Contains(string(doc), "\n| `"+field+"` |") {
				t.Errorf("docs/operating.md has no table row for the field %s of %q", field, ev["message"])
			}
		}
	}
}

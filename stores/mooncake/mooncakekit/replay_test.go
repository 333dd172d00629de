package mooncakekit_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/stores/mooncake/fakesdk"
	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Recordings is where the recordings of the real SDK live.
var recordings = filepath.Join("..", "testdata", "mcscenario")

var dump = flag.Bool("dump", false, "print what the fake answers for every scenario, as a recording")

// TestReplay drives fakesdk through every scenario and fails on any
// disagreement with a recording of the real SDK.
func TestReplay(t *testing.T) {
	for _, s := range mooncakekit.All() {
		t.Run(s.Name, func(t *testing.T) {
			if s.FakeCannot != "" {
				t.Skipf("the fake cannot model this honestly (%s); only a recorder runs it", s.FakeCannot)
			}
			got, err := mooncakekit.Run(&mooncakekit.FakeEnv{Version: fakesdk.Version}, s)
			require.NoError(t, err)
			if *dump {
				b, _ := json.MarshalIndent(got, "", "  ")
				t.Logf("%s", b)
			}
			want, ok, err := mooncakekit.Read(recordings, s.Name)
			require.NoError(t, err)
			if !ok {
				t.Skip("unrecorded: no real answer is known yet")
			}
			if diffs := mooncakekit.Compare(want, got); len(diffs) > 0 {
				t.Errorf("fakesdk disagrees with the real SDK (%s):\n  %s", want.Source, strings.Join(diffs, "\n  "))
			}
		})
	}
}

// unrecorded are the scenarios no recording covers yet, and why.
var unrecorded = map[string]string{
	"s4-get-256mib-frozen-midway": "the fake cannot model it, and the recorder cannot stage it: a loopback get of 256 MiB " +
		"is done before the peer can be frozen (see notRecordable in stores/mooncake/cgosdk/recorder_test.go)",
}

func TestEveryRecordingIsAScenarioAndNamesItsSource(t *testing.T) {
	known := map[string]mooncakekit.Scenario{}
	for _, s := range mooncakekit.All() {
		require.NoError(t, s.Validate())
		known[s.Name] = s
	}
	files, err := filepath.Glob(filepath.Join(recordings, "*.json"))
	require.NoError(t, err)
	recorded := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		r, ok, err := mooncakekit.Read(recordings, name)
		require.NoError(t, err)
		require.True(t, ok)
		s, isScenario := known[name]
		if !assert.True(t, isScenario, "%s records no scenario of All()", f) {
			continue
		}
		assert.Equal(t, name, r.Scenario)
		assert.NotEmpty(t, r.Source, "%s names no source", f)
		steps := map[string]bool{}
		for _, st := range s.Steps {
			steps[st.Name] = true
		}
		for _, st := range r.Steps {
			assert.True(t, steps[st.Step], "%s records step %q, which %s does not have", f, st.Step, name)
		}
		// The file is as Write writes it, so a recorder's output diffs cleanly.
		tmp := t.TempDir()
		require.NoError(t, mooncakekit.Write(tmp, r))
		a, _ := os.ReadFile(f)
		b, _ := os.ReadFile(filepath.Join(tmp, name+".json"))
		assert.Equal(t, string(b), string(a), "%s is not in Write's format", f)
		recorded[name] = true
	}
	var missing []string
	for name := range known {
		if !recorded[name] {
			missing = append(missing, name)
			assert.Contains(t, unrecorded, name, "scenario %s has no recording; record it or list it as unrecorded with why", name)
		}
	}
	sort.Strings(missing)
	t.Logf("unrecorded: %v", missing)
	for name := range unrecorded {
		assert.False(t, recorded[name], "%s is recorded now: take it off the unrecorded list", name)
	}
}

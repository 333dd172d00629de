package mooncakekit_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit"
)

// TestTimingsReadAndWriteOneOrMany: one class is a JSON string, several a
// list, both ways.
func TestTimingsReadAndWriteOneOrMany(t *testing.T) {
	for js, want := range map[string]mooncakekit.Timings{
		`"at_once"`:                   {"at_once"},
		`["after_retries","at_once"]`: {"after_retries", "at_once"},
	} {
		var got mooncakekit.Timings
		require.NoError(t, json.Unmarshal([]byte(js), &got))
		assert.Equal(t, want, got)
		b, err := json.Marshal(got)
		require.NoError(t, err)
		assert.JSONEq(t, js, string(b))
	}
	var bad mooncakekit.Timings
	assert.ErrorContains(t, json.Unmarshal([]byte(`3`), &bad), "want a timing class or a list of them")
}

// TestTheReplayAcceptsAnyRecordedTiming: a step recorded with several
// timing classes accepts a run that took any one of them, and no other.
func TestTheReplayAcceptsAnyRecordedTiming(t *testing.T) {
	want := mooncakekit.Recording{Steps: []mooncakekit.StepRecord{{Step: "exist-down", Answers: []int64{-900}, Timing: mooncakekit.Timings{"after_retries", "at_once"}}}}
	for _, c := range []struct {
		got  mooncakekit.Timings
		diff string
	}{
		{mooncakekit.Timings{"at_once"}, ""},
		{mooncakekit.Timings{"after_retries"}, ""},
		{mooncakekit.Timings{"slow"}, "step exist-down: timing: real one of [after_retries at_once], got slow"},
		{nil, "step exist-down: timing: real one of [after_retries at_once], got none"},
	} {
		got := mooncakekit.Recording{Steps: []mooncakekit.StepRecord{{Step: "exist-down", Answers: []int64{-900}, Timing: c.got}}}
		diffs := mooncakekit.Compare(want, got)
		if c.diff == "" {
			assert.Empty(t, diffs, "%v", c.got)
		} else {
			assert.Equal(t, []string{c.diff}, diffs)
		}
	}
}

// TestMergeHoldsWhatEveryRunDid: merged runs record the set of timings
// seen (the note counting each), and runs whose answers differ are
// refused: a recording states what the SDK does every time.
func TestMergeHoldsWhatEveryRunDid(t *testing.T) {
	run := func(timing string, answer int64) mooncakekit.Recording {
		return mooncakekit.Recording{Scenario: "m", Source: "rec", Steps: []mooncakekit.StepRecord{
			{Step: "start", Answers: []int64{0}, Timing: mooncakekit.Timings{"at_once"}},
			{Step: "exist-down", Answers: []int64{answer}, Timing: mooncakekit.Timings{timing}},
		}}
	}
	got, diffs := mooncakekit.Merge([]mooncakekit.Recording{run("at_once", -900), run("after_retries", -900), run("at_once", -900)})
	assert.Empty(t, diffs)
	assert.Equal(t, mooncakekit.Timings{"at_once"}, got.Steps[0].Timing)
	assert.Equal(t, mooncakekit.Timings{"after_retries", "at_once"}, got.Steps[1].Timing)
	assert.Equal(t, "3 runs; timings seen: exist-down: after_retries 1 of 3, at_once 2 of 3", got.Note)

	_, diffs = mooncakekit.Merge([]mooncakekit.Recording{run("at_once", -900), run("at_once", -901), run("at_once", -900)})
	assert.Equal(t, []string{"step exist-down: run 2 answered [-901] bytes [], run 1 [-900] bytes []: the SDK does not answer alike every time"}, diffs)
}

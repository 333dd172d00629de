package mooncake_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/gen"
	"github.com/kvblob/kvblob/internal/witness"
	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit"
)

// Mooncake's witnesses are its recorded scenarios: what a real build of
// the SDK answered (stores/mooncake/testdata/mcscenario, replayed over the
// fake SDK by stores/mooncake/mooncakekit's TestReplay). Each recorded answer of a
// call the spec names is a witness of the rule that answer reaches, and a
// get's recorded bytes hold the rule's written claim: "no", the
// destination as it was; "yes" with READY, the key's bytes whole.

// mcCalls is the spec call each scenario op is.
var mcCalls = map[mooncakekit.Op]string{
	mooncakekit.OpStart:   "batch_put_session_start",
	mooncakekit.OpScatter: "batch_put_from_multi_buffer_ranges",
	mooncakekit.OpEnd:     "batch_put_session_end",
	mooncakekit.OpRevoke:  "batch_put_session_revoke",
	mooncakekit.OpGet:     "batch_get_into",
}

func TestWitness(t *testing.T) {
	specs, err := witness.Specs()
	require.NoError(t, err)
	const stem = "mooncake-0.3.13"
	var spec *gen.Spec
	for _, s := range specs {
		if witness.Stem(s.File) == stem {
			spec = s
		}
	}
	require.NotNil(t, spec)
	names := map[int64]string{}
	for _, c := range spec.Codes {
		names[c.Value] = c.Name
	}
	calls := map[string]*gen.Call{}
	for _, c := range spec.Calls {
		calls[c.Name] = c
	}
	dir := filepath.Join("testdata", "mcscenario")
	for _, s := range mooncakekit.All() {
		rec, ok, err := mooncakekit.Read(dir, s.Name)
		require.NoError(t, err)
		if !ok {
			continue
		}
		answered := map[string]mooncakekit.StepRecord{}
		for _, r := range rec.Steps {
			answered[r.Step] = r
		}
		bufs := map[string]mooncakekit.Buf{}
		for _, b := range s.Bufs {
			bufs[b.Name] = b
		}
		touched := map[string]bool{} // buffers an earlier step wrote
		for _, st := range s.Steps {
			r, ok := answered[st.Name]
			call, named := calls[mcCalls[st.Op]]
			if st.Op == mooncakekit.OpWait {
				// An async step's answers are recorded under its name.
				for _, o := range s.Steps {
					if o.Name == st.Of {
						st, call, named = o, calls[mcCalls[o.Op]], mcCalls[o.Op] != ""
						r, ok = answered[o.Name]
					}
				}
			}
			if st.Op == mooncakekit.OpFill {
				touched[st.Ref.Buf] = true
			}
			if !named || !ok || len(r.Answers) == 0 || st.Async {
				continue
			}
			for i, a := range r.Answers {
				answer := answerOf(call, a, st, i, names, bufs)
				rule, err := witness.Find(specs, stem, call.Name+"."+answer)
				if err != nil {
					rule, err = witness.Find(specs, stem, call.Name+".otherwise")
				}
				require.NoError(t, err)
				var into *mooncakekit.Ref
				if st.Op == mooncakekit.OpGet && i < len(st.Into) {
					into = &st.Into[i]
				}
				checkable := into == nil || !touched[into.Buf]
				t.Run(fmt.Sprintf("%s/%s/%s: %s key %d", stem, rule.ID(), s.Name, st.Name, i), func(t *testing.T) {
					rule.Announce(t)
					if !checkable {
						t.Skip("an earlier step wrote this destination: its written claim cannot be read off the recording")
					}
					if into == nil || i >= len(r.Bytes) {
						return // the recorded answer reaches the rule; no bytes to hold it to
					}
					if err := writtenHolds(rule, r.Bytes[i], bufs[into.Buf]); err != nil {
						t.Errorf("%s: %s (%s, step %s): %v", rule.Pos, rule.ID(), s.Name, st.Name, err)
					}
				})
			}
			if into := st.Into; st.Op == mooncakekit.OpGet {
				for _, ref := range into {
					touched[ref.Buf] = true
				}
			}
		}
	}
}

// answerOf is the spec answer a recorded answer a of key i of st is.
func answerOf(call *gen.Call, a int64, st mooncakekit.Step, i int, names map[int64]string, bufs map[string]mooncakekit.Buf) string {
	if call.Answers == "size" && a >= 0 {
		want := int64(-1)
		switch {
		case st.Op == mooncakekit.OpGet && i < len(st.Into):
			want = refLen(st.Into[i], bufs)
		case st.Op == mooncakekit.OpScatter && i < len(st.From):
			want = 0
			for _, f := range st.From[i] {
				want += refLen(f, bufs)
			}
		}
		if a == want {
			return "whole"
		}
		return "short"
	}
	if n, ok := names[a]; ok {
		return n
	}
	return "otherwise"
}

// refLen is how many bytes r names: Len, or with Len 0 the rest of its
// buffer.
func refLen(r mooncakekit.Ref, bufs map[string]mooncakekit.Buf) int64 {
	if r.Len > 0 {
		return r.Len
	}
	return bufs[r.Buf].Len - r.Off
}

// writtenHolds checks a get's recorded bytes against rule's written
// claim: "no", the destination as it was filled; "yes", written. (Whether
// a READY row's bytes are the row is the driver's trailer check's to say:
// the SDK answered a whole size over a stale tail in
// d6-short-write-stale-tail, which the trailer refuses.)
func writtenHolds(rule witness.Rule, runs []mooncakekit.ByteRun, buf mooncakekit.Buf) error {
	before := "untouched"
	if buf.Fill != "" {
		before = buf.Fill
	}
	changed := false
	for _, r := range runs {
		changed = changed || r.Is != before
	}
	switch {
	case rule.Written == "no" && changed:
		return fmt.Errorf("written: no, but the real SDK left %v", runs)
	case rule.Written == "yes" && !changed:
		return fmt.Errorf("written: yes, but the destination is as it was filled (%v)", runs)
	}
	return nil
}

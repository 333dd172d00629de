package driver

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func hostRegion(name string, slotBytes int64, slots int) *Region {
	return &Region{Name: name, Kind: Host, Layout: Layout{SlotBytes: slotBytes, Slots: slots}, Mem: make([]byte, slotBytes*int64(slots))}
}

func TestValuesValidateThemselves(t *testing.T) {
	r := hostRegion("r", 64, 2)
	cases := []struct {
		name string
		err  error
		want string // "" means valid
	}{
		{"layout ok", Layout{SlotBytes: 1, Slots: 1}.Validate(), ""},
		{"layout zero slot size", Layout{SlotBytes: 0, Slots: 1}.Validate(), "slot size 0"},
		{"layout zero slots", Layout{SlotBytes: 8, Slots: 0}.Validate(), "slot count 0"},
		{"layout overflow", Layout{SlotBytes: 1 << 62, Slots: 4}.Validate(), "overflows"},
		{"region ok", r.Validate(), ""},
		{"region unknown kind", (&Region{Name: "x", Kind: 9, Layout: Layout{1, 1}}).Validate(), "memory kind 9"},
		{"region short memory", (&Region{Name: "x", Kind: Host, Layout: Layout{8, 2}, Mem: make([]byte, 8)}).Validate(), "needs 16"},
		{"device region without mem", (&Region{Name: "d", Kind: Device, Layout: Layout{8, 2}}).Validate(), ""},
		{"span ok", Span{r, 64, 64}.Validate(), ""},
		{"span negative offset", Span{r, -1, 8}.Validate(), "negative"},
		{"span negative length", Span{r, 0, -8}.Validate(), "length -8"},
		{"span empty", Span{r, 0, 0}.Validate(), "length 0"},
		{"span past end", Span{r, 100, 29}.Validate(), "ends past"},
		{"span no region", Span{nil, 0, 1}.Validate(), "no region"},
		{"row ok", Row{"k", []Span{{r, 0, 8}}}.Validate(), ""},
		{"row empty key", Row{"", []Span{{r, 0, 8}}}.Validate(), "key is empty"},
		{"row no span", Row{"k", nil}.Validate(), "no span"},
		{"result ok", Result{Status: Ready}.Validate(), ""},
		{"result fault ok", FaultResult(-1, "boom").Validate(), ""},
		{"result pending", Result{}.Validate(), "out of range"},
		{"result out of range", Result{Status: 42}.Validate(), "out of range"},
		{"fault without text", Result{Status: Fault, Code: -1}.Validate(), "must say"},
		{"code on ready", Result{Status: Ready, Code: 3}.Validate(), "only a FAULT"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.want == "" {
				assert.NoError(t, c.err)
				return
			}
			require.Error(t, c.err)
			assert.Contains(t, c.err.Error(), c.want)
		})
	}
}

func TestCapabilitiesZeroValueSupportsNothing(t *testing.T) {
	v := reflect.ValueOf(Capabilities{})
	for i := 0; i < v.NumField(); i++ {
		assert.True(t, v.Field(i).IsZero(), "field %s", v.Type().Field(i).Name)
	}
	// Every field must be a bool or an int bound where 0 means "none":
	// a new capability of another type would need its own default rule.
	for i := 0; i < v.NumField(); i++ {
		k := v.Field(i).Kind()
		assert.Contains(t, []reflect.Kind{reflect.Bool, reflect.Int}, k, v.Type().Field(i).Name)
	}
}

func TestHintIsOpaqueAndImmutable(t *testing.T) {
	src := []byte("node-7")
	h := NewHint(src)
	src[0] = 'X'
	assert.Equal(t, []byte("node-7"), h.Bytes(), "changing the source changed the hint")
	b := h.Bytes()
	b[0] = 'Y'
	assert.Equal(t, []byte("node-7"), h.Bytes(), "changing Bytes' result changed the hint")
	assert.True(t, Hint{}.IsZero())
	assert.False(t, NewHint(nil).IsZero(), "an empty hint is still a hint")
}

func TestRejectedErrorIsTheOnlyRejection(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", Reject(RuleRepeatedKey, "rows %d and %d", 0, 1))
	var re *RejectedError
	require.True(t, errors.As(err, &re))
	assert.Equal(t, RuleRepeatedKey, re.Rule)
	assert.True(t, IsRejected(err))
	assert.False(t, IsRejected(errors.New("store error")), "a plain error is not a rejection")
}

func TestStatusNames(t *testing.T) {
	for s := Ready; s <= Cancelled; s++ {
		got, ok := ParseStatus(s.String())
		assert.True(t, ok)
		assert.Equal(t, s, got)
	}
	_, ok := ParseStatus("PENDING")
	assert.False(t, ok, "PENDING is not a result a spec may name")
}

func TestKeyStemRefusesBadPrefixes(t *testing.T) {
	for _, p := range []string{"", "/a", "a/", "a//b", "a b", "a/v1/ü"} {
		_, err := KeyStem(p)
		assert.Error(t, err, "prefix %q", p)
	}
	stem, err := KeyStem("kv/model-a")
	require.NoError(t, err)
	k, err := stem.Key([]byte{0xab, 0x01})
	require.NoError(t, err)
	assert.Equal(t, "kv/model-a/v1/ab01", k)
	_, err = stem.Key(nil)
	assert.ErrorContains(t, err, "name is empty")
	_, err = Stem{}.Key([]byte("x"))
	assert.Error(t, err)
}

// Property: distinct (prefix, name) pairs never encode alike, and every key
// parses back to its pair.
func TestDistinctNamesNeverEncodeAlike(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	prefixes := []string{"a", "a/b", "a/v1", "v1", "kv/model-a", "a.b", "a-b"}
	seen := map[string][2]string{}
	for i := 0; i < 20000; i++ {
		p := prefixes[rng.Intn(len(prefixes))]
		name := make([]byte, 1+rng.Intn(6))
		rng.Read(name)
		if rng.Intn(4) == 0 {
			name = []byte("/v1/" + string(name))
		}
		k, err := Key(p, name)
		require.NoError(t, err)
		pair := [2]string{p, string(name)}
		if prev, ok := seen[k]; ok && prev != pair {
			t.Fatalf("%q and %q both encode as %q", prev, pair, k)
		}
		seen[k] = pair
		gp, gn, err := ParseKey(k)
		require.NoError(t, err)
		require.Equal(t, p, gp)
		require.True(t, bytes.Equal(name, gn))
	}
}

func FuzzParseKey(f *testing.F) {
	f.Add("kv/v1/00ff")
	f.Add("a/v1/v1/ab")
	f.Add("/v1/")
	f.Fuzz(func(t *testing.T, key string) {
		p, name, err := ParseKey(key)
		if err != nil {
			return
		}
		back, err := Key(p, name)
		if err != nil || back != key {
			t.Fatalf("ParseKey(%q) = %q, %x; Key gives %q, %v", key, p, name, back, err)
		}
	})
}

func TestAdmissionRulesNameThemselves(t *testing.T) {
	r := hostRegion("r", 64, 4)
	other := hostRegion("other", 64, 1)
	live := func(x *Region) bool { return x == r }
	row := func(k string, spans ...Span) Row { return Row{Key: k, Spans: spans} }
	s := func(off, n int64) Span { return Span{r, off, n} }
	cases := []struct {
		name string
		err  error
		rule string
	}{
		{"no rows", AdmitRows(nil, 0), RuleNoRows},
		{"too many rows", AdmitRows(make([]Row, 3), 2), RuleTooManyRows},
		{"rows ok", AdmitRows(make([]Row, 2), 2), ""},
		{"empty key", AdmitKeys([]Row{row("a"), row("")}), RuleEmptyKey},
		{"repeated key", AdmitKeys([]Row{row("a"), row("b"), row("a")}), RuleRepeatedKey},
		{"keys ok", AdmitKeys([]Row{row("a"), row("b")}), ""},
		{"multi span", AdmitSpans([]Row{row("a", s(0, 8), s(8, 8))}, false, 0, live), RuleMultiSpan},
		{"multi span allowed", AdmitSpans([]Row{row("a", s(0, 8), s(8, 8))}, true, 0, live), ""},
		{"row too large", AdmitSpans([]Row{row("a", s(0, 64))}, false, 64, live), RuleRowTooLarge},
		{"row under the bound", AdmitSpans([]Row{row("a", s(0, 63))}, false, 64, live), ""},
		{"span outside registration", AdmitSpans([]Row{row("a", Span{other, 0, 8})}, false, 0, live), RuleSpanOutside},
		{"invalid span", AdmitSpans([]Row{row("a", s(250, 8))}, false, 0, live), RuleInvalidSpan},
		{"no span", AdmitSpans([]Row{row("a")}, false, 0, live), RuleInvalidSpan},
		{"hint refused", AdmitHint(NewHint([]byte("x")), false), RuleHint},
		{"hint declared", AdmitHint(NewHint([]byte("x")), true), ""},
		{"zero hint", AdmitHint(Hint{}, false), ""},
		{"device region", AdmitRegion(&Region{Name: "d", Kind: Device, Layout: Layout{8, 1}}, false), RuleDeviceRegion},
		{"device region declared", AdmitRegion(&Region{Name: "d", Kind: Device, Layout: Layout{8, 1}}, true), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.rule == "" {
				assert.NoError(t, c.err)
				return
			}
			var re *RejectedError
			require.True(t, errors.As(c.err, &re), "want a RejectedError, got %v", c.err)
			assert.Equal(t, c.rule, re.Rule, re.Reason)
		})
	}
}

func TestAfterRereadNeverAnswersMissOrNotReady(t *testing.T) {
	for _, st := range []Status{Miss, NotReady} {
		m := AfterReread(Mapping{Result: Result{Status: st}, Written: WrittenNo})
		assert.Equal(t, Fault, m.Result.Status, "reread %s", st)
		assert.Equal(t, WrittenYes, m.Written)
		assert.True(t, strings.Contains(m.Result.Text, "already wrote"))
	}
	again := AfterReread(Mapping{Result: FaultResult(-707, "expired"), FollowUp: FollowRereadOnce})
	assert.Equal(t, Fault, again.Result.Status)
	assert.Equal(t, FollowNone, again.FollowUp, "a reread is never reread again")
	ok := AfterReread(Mapping{Result: Result{Status: Ready}, Written: WrittenYes})
	assert.Equal(t, Ready, ok.Result.Status)
}

func TestAccessRuleEnded(t *testing.T) {
	cases := []struct {
		rule       AccessRule
		kept, want bool
	}{
		{AccessNone, true, true}, {AccessOnReturn, true, true},
		{AccessUnlessKept, false, true}, {AccessUnlessKept, true, false},
		{AccessNever, false, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, c.rule.Ended(c.kept), "%s kept=%v", c.rule, c.kept)
	}
}

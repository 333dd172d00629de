package gen

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func loadFile(t *testing.T, name string) *Spec {
	t.Helper()
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	s, err := Load(name, data)
	require.NoError(t, err)
	return s
}

// TestDiffNamesExactlyWhatChanged: new.yaml differs from old.yaml in one
// code (LEASE_EXPIRED renumbered) and one rule (get_call's
// OBJECT_NOT_FOUND answers FAULT, no longer MISS); the diff names exactly
// those, and the one generated case whose expectation the rule changes.
func TestDiffNamesExactlyWhatChanged(t *testing.T) {
	d := Diff(loadFile(t, "testdata/diff/old.yaml"), loadFile(t, "testdata/diff/new.yaml"))
	assert.Equal(t, `--- testdata/diff/old.yaml
+++ testdata/diff/new.yaml

codes:
  ~ LEASE_EXPIRED: -707 -> -708 (renumbered)  (testdata/diff/old.yaml:12:3 -> testdata/diff/new.yaml:12:3)

rules:
  ~ get_call OBJECT_NOT_FOUND: result MISS -> FAULT  (testdata/diff/old.yaml:30:25 -> testdata/diff/new.yaml:30:25)

generated cases:
  ~ get_call/OBJECT_NOT_FOUND: get_call answers OBJECT_NOT_FOUND(-704) => MISS, written no -> get_call answers OBJECT_NOT_FOUND(-704) => FAULT code -704, written no  (testdata/diff/old.yaml:30:25 -> testdata/diff/new.yaml:30:25)
`, d.Text())

	b, err := json.Marshal(d)
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, json.Unmarshal(b, &got))
	codes := got["codes"].(map[string]any)
	assert.Empty(t, codes["added"])
	assert.Empty(t, codes["removed"])
	assert.Equal(t, []any{map[string]any{"name": "LEASE_EXPIRED", "old_value": -707.0, "new_value": -708.0,
		"old_pos": "testdata/diff/old.yaml:12:3", "new_pos": "testdata/diff/new.yaml:12:3"}}, codes["renumbered"])
	rules := got["rules"].([]any)
	require.Len(t, rules, 1)
	r := rules[0].(map[string]any)
	assert.Equal(t, "get_call", r["call"])
	assert.Equal(t, "OBJECT_NOT_FOUND", r["answer"])
	assert.Equal(t, []any{map[string]any{"field": "result", "old": "MISS", "new": "FAULT"}}, r["changes"])
	assert.Empty(t, got["identity"])
	assert.Empty(t, got["other"])
}

// TestDiffSeesEachKindOfChange: a spec against itself is no change, and
// codes added and removed, a rule added and removed, an access rule, and
// the generated cases that come and go with them.
func TestDiffSeesEachKindOfChange(t *testing.T) {
	a := loadFile(t, "testdata/diff/old.yaml")
	assert.True(t, Diff(a, a).Empty())
	assert.Contains(t, Diff(a, a).Text(), "no differences")

	b := loadFile(t, "testdata/diff/old.yaml")
	b.Codes = append(b.Codes, Code{Name: "NEW_CODE", Value: -9})
	b.Codes = b.Codes[1:] // OK is gone
	get := b.Calls[1]
	get.AccessEnd = "never"
	get.Codes = append(get.Codes, CodeRule{Code: "LEASE_EXPIRED", Meaning: Meaning{Result: "FAULT", Written: "yes", FollowUp: "reread_once"}})
	b.Calls[0].Codes = nil // put_call no longer maps OK
	d := Diff(a, b)
	assert.Equal(t, []CodeEntry{{"NEW_CODE", -9, ":0:0"}}, d.Codes.Added)
	assert.Equal(t, "OK", d.Codes.Removed[0].Name)
	var rules []string
	for _, r := range d.Rules {
		rules = append(rules, r.Kind+" "+r.Call+" "+r.Answer)
	}
	assert.Equal(t, []string{"removed put_call OK", "changed get_call access_end", "added get_call LEASE_EXPIRED"}, rules)
	var added, removed []string
	for _, c := range d.Cases.Added {
		added = append(added, c.ID)
	}
	for _, c := range d.Cases.Removed {
		removed = append(removed, c.ID)
	}
	assert.Equal(t, []string{"get_call/LEASE_EXPIRED/reread-whole", "get_call/LEASE_EXPIRED/reread-again"}, added)
	assert.Equal(t, []string{"put_call/OK"}, removed)
}

// TestDiffNamesTheVerifiedCommits: sdk.verified is identity: a spec whose
// verified commits changed (or that gives them where the other did not)
// differs.
func TestDiffNamesTheVerifiedCommits(t *testing.T) {
	a := loadFile(t, "testdata/diff/old.yaml")
	b := loadFile(t, "testdata/diff/old.yaml")
	assert.True(t, Diff(a, b).Empty())
	b.SDK.HasVerified, b.SDK.Verified = true, []string{"3b5a59413"}
	assert.Equal(t, []FieldChange{{Field: "sdk.verified", Old: "-", New: "[3b5a59413]"}}, Diff(a, b).Identity)
	a.SDK.HasVerified = true
	assert.Equal(t, []FieldChange{{Field: "sdk.verified", Old: "[]", New: "[3b5a59413]"}}, Diff(a, b).Identity)
}

// TestAMeaningsChangeIsNamedByItsField: a change to any one field of a
// rule's meaning is named, by its spec field, with the old and new
// values, and nothing else is.
func TestAMeaningsChangeIsNamedByItsField(t *testing.T) {
	base := Meaning{Result: "FAULT", Written: "no", FollowUp: "none", IfExists: "READY", IfAbsent: "MISS", IfOther: "FAULT", Text: "t", Example: "e"}
	for _, c := range []struct {
		field    string
		old, new string
		change   func(m *Meaning)
	}{
		{"result", "FAULT", "MISS", func(m *Meaning) { m.Result = "MISS" }},
		{"written", "no", "maybe", func(m *Meaning) { m.Written = "maybe" }},
		{"follow_up", "none", "reread_once", func(m *Meaning) { m.FollowUp = "reread_once" }},
		{"keeps_access", "false", "true", func(m *Meaning) { m.KeepsAccess = true }},
		{"if_exists", "READY", "FAULT", func(m *Meaning) { m.IfExists = "FAULT" }},
		{"if_absent", "MISS", "FAULT", func(m *Meaning) { m.IfAbsent = "FAULT" }},
		{"if_other", "FAULT", "MISS", func(m *Meaning) { m.IfOther = "MISS" }},
		{"text", "t", "u", func(m *Meaning) { m.Text = "u" }},
		{"stageable", "false", "true", func(m *Meaning) { m.Stageable = true }},
		{"example", "e", "f", func(m *Meaning) { m.Example = "f" }},
	} {
		n := base
		c.change(&n)
		assert.Equal(t, []FieldChange{{Field: c.field, Old: c.old, New: c.new}}, base.changes(&n), c.field)
	}
	assert.Empty(t, base.changes(&base))
}

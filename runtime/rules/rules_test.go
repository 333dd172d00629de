package rules

import (
	"errors"
	"strconv"
	"testing"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/stretchr/testify/assert"
)

func TestCallRuleMapsEveryKindOfAnswer(t *testing.T) {
	fault := Meaning{Mapping: Mapping{Result: driver.Result{Status: driver.Fault}, Written: WrittenMaybe}}
	c := &CallRule{
		Call: "get", Access: AccessUnlessKept, Sized: true,
		Whole: Meaning{Mapping: Mapping{Result: driver.Result{Status: driver.Ready}, Written: WrittenYes}},
		Short: Meaning{Mapping: Mapping{Result: driver.Result{Status: driver.Fault}, Written: WrittenYes}, Text: "a short object"},
		Codes: map[int64]Meaning{
			-1: {Mapping: Mapping{Result: driver.Result{Status: driver.Miss}, Written: WrittenNo}},
			-2: {Mapping: Mapping{Result: driver.Result{Status: driver.Fault}, KeepsAccess: true}, Text: "still running"},
			-3: {Mapping: Mapping{Result: driver.Result{Status: driver.Declined}, Written: WrittenNo}},
			-4: {Mapping: Mapping{Result: driver.Result{Status: driver.Declined}, Written: WrittenNo}, Text: "the pool is full"},
		},
		Otherwise: fault,
		CodeName:  func(c int64) string { return "C" + strconv.FormatInt(-c, 10) },
	}
	cases := []struct {
		answer, row int64
		want        driver.Result
		written     Written
		kept        bool
	}{
		{64, 64, driver.Result{Status: driver.Ready}, WrittenYes, false},
		{10, 64, driver.FaultResult(0, "get answered 10 bytes for a row of 64: a short object"), WrittenYes, false},
		{-1, 64, driver.Result{Status: driver.Miss}, WrittenNo, false},
		{-2, 64, driver.FaultResult(-2, "get answered C2 (-2): still running"), 0, true},
		{-9, 64, driver.FaultResult(-9, "get answered C9 (-9)"), WrittenMaybe, false},
		// A DECLINED says which answer refused the row, as a FAULT does.
		{-3, 64, driver.Result{Status: driver.Declined, Code: -3, Text: "get answered C3 (-3)"}, WrittenNo, false},
		{-4, 64, driver.Result{Status: driver.Declined, Code: -4, Text: "get answered C4 (-4): the pool is full"}, WrittenNo, false},
	}
	for _, k := range cases {
		m := c.Map(k.answer, k.row)
		assert.Equal(t, k.want, m.Result, "answer %d", k.answer)
		assert.Equal(t, k.written, m.Written, "answer %d", k.answer)
		assert.Equal(t, k.kept, m.KeepsAccess, "answer %d", k.answer)
	}
	codeOnly := &CallRule{Call: "put", Codes: map[int64]Meaning{0: {Mapping: Mapping{Result: driver.Result{Status: driver.Ready}}}}, Otherwise: fault, CodeName: c.CodeName}
	assert.Equal(t, driver.Ready, codeOnly.Map(0, 0).Result.Status, "a code-only call reads 0 as a code")
	assert.Equal(t, driver.Fault, codeOnly.Map(5, 0).Result.Status, "and a positive answer as an unknown code")
}

func TestAdmissionAndEnvironment(t *testing.T) {
	a := Admission{MaxRowsPerOp: 1}
	err := a.Put(make([]driver.Row, 2), nil)
	assert.True(t, driver.IsRejected(err))
	err = a.Get(nil, driver.NewHint([]byte("x")), nil)
	var re *driver.RejectedError
	if assert.ErrorAs(t, err, &re) {
		assert.Equal(t, driver.RuleHint, re.Rule, "the hint is checked first")
	}
	rules := []EnvRule{{Name: "A", Allow: []string{"", "0"}, Reason: "no"}}
	assert.NoError(t, CheckEnvironment(rules, func(string) string { return "0" }))
	assert.ErrorContains(t, CheckEnvironment(rules, func(string) string { return "1" }), `A="1" is refused: no`)
}

func TestOtherIsNeverReady(t *testing.T) {
	asked := Mapping{Result: driver.FaultResult(-1, "claim answered NIL"), FollowUp: FollowAskExistence, IfExists: driver.Ready, IfAbsent: driver.NotReady}
	r := asked.Other("another length")
	assert.Equal(t, driver.Fault, r.Status, "a spec that does not say gets a FAULT")
	assert.EqualValues(t, -1, r.Code)
	assert.Contains(t, r.Text, "another length")
	asked.IfOther = driver.NotReady
	assert.Equal(t, driver.Result{Status: driver.NotReady}, asked.Other("x"))
}

func TestWithCauseAddsTheClientsErrorToAFaultOrDeclineOnly(t *testing.T) {
	f := Mapping{Result: driver.FaultResult(-3, "claim answered OOM")}
	assert.Equal(t, "claim answered OOM: connection reset", f.WithCause(errors.New("connection reset")).Text)
	assert.Equal(t, "claim answered OOM", f.WithCause(nil).Text)
	d := Mapping{Result: driver.Result{Status: driver.Declined, Code: -28, Text: "write answered ENOSPC (-28)"}}
	assert.Equal(t, driver.Result{Status: driver.Declined, Code: -28, Text: "write answered ENOSPC (-28): no space left on device"}, d.WithCause(errors.New("no space left on device")))
	ok := Mapping{Result: driver.Result{Status: driver.Ready}}
	assert.Equal(t, driver.Result{Status: driver.Ready}, ok.WithCause(errors.New("ignored")))
}

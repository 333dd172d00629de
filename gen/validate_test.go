package gen

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// codeGetSpec is a valid spec whose get answers a code, not a size, and
// maps OK to READY: the rule that a code of a sized get is no evidence of
// delivery must not reach it.
const codeGetSpec = `store: s
package: s
sdk: {name: s-sdk, versions: ["1"]}
capabilities: {absent_is_miss: true}
codes:
  OK: 0
  NOT_FOUND: -1
calls:
  put_call:
    op: put
    touches_memory: true
    access_end: on_return
    answers: code
    codes:
      OK: {result: READY}
    otherwise: {result: FAULT}
  get_call:
    op: get
    touches_memory: true
    access_end: on_return
    answers: code
    codes:
      OK: {result: READY, written: "yes"}
      NOT_FOUND: {result: MISS, written: "no"}
    otherwise: {result: FAULT, written: "maybe"}
admission: [empty_key, repeated_key, multi_span, span_outside_registration, hint, device_region]
`

// TestOnlyASizedGetsCodeCannotBeReady: a code of a get that answers sizes
// is a failure (testdata/rule-get-not-found-ready.txtar), but a get that
// answers codes may map OK to READY; a validator that applied the sized
// rule to every get, or to every call that answers sizes, refuses this
// spec.
func TestOnlyASizedGetsCodeCannotBeReady(t *testing.T) {
	_, err := Load("spec.yaml", []byte(codeGetSpec))
	assert.NoError(t, err)
	sized := strings.Replace(codeGetSpec, `    answers: code
    codes:
      OK: {result: READY, written: "yes"}
      NOT_FOUND: {result: MISS, written: "no"}`, `    answers: size
    whole: {result: READY, written: "yes"}
    short: {result: FAULT, written: "no"}
    codes:
      NOT_FOUND: {result: READY, written: "yes"}`, 1)
	if sized == codeGetSpec {
		t.Fatal("the sized variant did not replace the get's answers")
	}
	_, err = Load("spec.yaml", []byte(sized))
	assert.ErrorContains(t, err, "answers sizes: a code is a failure")
}

// TestIfFieldsNeedAskExistence: each of if_exists, if_absent and if_other
// alone, on an outcome without follow_up: ask_existence, is refused; a
// validator that saw only some of them, or only all together, passes one.
func TestIfFieldsNeedAskExistence(t *testing.T) {
	for _, field := range []string{"if_exists", "if_absent", "if_other"} {
		t.Run(field, func(t *testing.T) {
			spec := strings.Replace(codeGetSpec, `NOT_FOUND: {result: MISS, written: "no"}`, `NOT_FOUND: {result: MISS, written: "no", `+field+`: FAULT}`, 1)
			if spec == codeGetSpec {
				t.Fatal("the variant did not change the spec")
			}
			_, err := Load("spec.yaml", []byte(spec))
			assert.ErrorContains(t, err, "has if_exists/if_absent/if_other without follow_up: ask_existence")
		})
	}
}

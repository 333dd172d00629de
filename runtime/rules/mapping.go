package rules

import (
	"fmt"

	"github.com/kvblob/kvblob/runtime/driver"
)

// EnforceVersion is used by generated code to fail the build when it was
// generated for another version of these types:
//
//	const _ = rules.EnforceVersion(GenVersion - rules.MinGenVersion)
//	const _ = rules.EnforceVersion(rules.MaxGenVersion - GenVersion)
//
// A negative constant does not convert to uint, so a stale generated package
// stops compiling; re-run drivergen.
type EnforceVersion uint

const (
	// GenVersion is the generated-code version this package writes.
	GenVersion = 1
	// MinGenVersion and MaxGenVersion bound what this package accepts.
	MinGenVersion = 1
	MaxGenVersion = 1
)

// Written says whether a call may have written a row's destination.
type Written uint8

const (
	WrittenNo    Written = iota + 1 // the destination is untouched
	WrittenMaybe                    // it may have been written, in part or whole
	WrittenYes                      // it was written (perhaps with the wrong bytes)
)

func (w Written) String() string {
	switch w {
	case WrittenNo:
		return "no"
	case WrittenMaybe:
		return "maybe"
	case WrittenYes:
		return "yes"
	}
	return fmt.Sprintf("Written(%d)", uint8(w))
}

// FollowUp is what a driver must do after an answer before the row's result
// is final.
type FollowUp uint8

const (
	// FollowNone: the mapped result is final.
	FollowNone FollowUp = iota
	// FollowRereadOnce: read the row once more and map that answer with
	// AfterReread (a read lease expired while the bytes were written).
	FollowRereadOnce
	// FollowAskExistence: ask whether the key exists before calling it READY
	// (the store answered "already exists" for a write it may not have
	// finished).
	FollowAskExistence
	// FollowKeepOpen: the store may still apply this write: never revoke or
	// free its space, and keep the key held.
	FollowKeepOpen
	// FollowRevokeInDrain: the write's end went unanswered: keep the key
	// held, and revoke the write in Drain once no call runs.
	FollowRevokeInDrain
	// FollowEndAgain: the write's end went unanswered and was applied late,
	// completing the object, so the revoke meant for it is refused: end it
	// again, which the store answers OK, so the client drops the write.
	FollowEndAgain
	// FollowEndsAtTeardown: the access this answer keeps ends once the
	// driver tears its client down (the SDK's close returned): the driver
	// may end it so when such calls are all that is left, instead of
	// pinning the memory for the life of the process.
	FollowEndsAtTeardown
)

func (f FollowUp) String() string {
	switch f {
	case FollowNone:
		return "none"
	case FollowRereadOnce:
		return "reread_once"
	case FollowAskExistence:
		return "ask_existence"
	case FollowKeepOpen:
		return "keep_open"
	case FollowRevokeInDrain:
		return "revoke_in_drain"
	case FollowEndAgain:
		return "end_again"
	case FollowEndsAtTeardown:
		return "ends_at_teardown"
	}
	return fmt.Sprintf("FollowUp(%d)", uint8(f))
}

// AccessRule says when a call stops touching the caller's memory.
type AccessRule uint8

const (
	// AccessNone: the call never touches the caller's memory.
	AccessNone AccessRule = iota + 1
	// AccessOnReturn: the call's return ends its access, whatever it answers.
	AccessOnReturn
	// AccessUnlessKept: the return ends access unless some row's answer
	// keeps it (Mapping.KeepsAccess); then access is never provable.
	AccessUnlessKept
	// AccessNever: the call's return never proves its access ended.
	AccessNever
)

func (a AccessRule) String() string {
	switch a {
	case AccessNone:
		return "none"
	case AccessOnReturn:
		return "on_return"
	case AccessUnlessKept:
		return "unless_kept"
	case AccessNever:
		return "never"
	}
	return fmt.Sprintf("AccessRule(%d)", uint8(a))
}

// Ended reports whether a call under rule proved its access ended, given
// whether any row's answer kept access.
func (a AccessRule) Ended(kept bool) bool {
	switch a {
	case AccessNone, AccessOnReturn:
		return true
	case AccessUnlessKept:
		return !kept
	}
	return false
}

// Mapping is what one SDK answer means for one row.
type Mapping struct {
	// Continue: the answer is a middle step of a multi-call operation
	// that says "go on to the next call" (the spec's CONTINUE). Result is
	// then Pending: the row's result is the later calls'.
	Continue    bool
	Result      driver.Result
	Written     Written
	FollowUp    FollowUp
	KeepsAccess bool // the answer does not prove the call's access ended
	// IfExists and IfAbsent are the row's result after FollowAskExistence
	// found the row's whole object, or nothing (or another writer's
	// unfinished object). IfOther is the result when the key holds
	// something other than the row's whole object (another length, or
	// bytes that fail the store's check); Pending when the spec does not
	// say, because the store's existence answer cannot tell.
	IfExists, IfAbsent, IfOther driver.Status
}

// Other is the row's result when FollowAskExistence found something other
// than the row's whole object under its key: IfOther, and a FAULT saying
// what was found when the spec says FAULT. A spec that does not say
// (IfOther is Pending) gets a FAULT too, never READY.
func (m Mapping) Other(found string) driver.Result {
	switch m.IfOther {
	case driver.Pending, driver.Fault:
		code := m.Result.Code
		return driver.FaultResult(code, "%s: %s", m.Result.Text, found)
	}
	return driver.Result{Status: m.IfOther}
}

// AfterReread maps the answer to a reread (FollowRereadOnce). The first read
// already wrote the slot, so a reread that finds the key absent or not ready
// is a FAULT, never a MISS or NOT_READY; and a reread is never reread again.
func AfterReread(m Mapping) Mapping {
	switch m.Result.Status {
	case driver.Miss, driver.NotReady:
		m.Result = driver.FaultResult(0, "reread after an expired lease answered %s; the first read already wrote the slot", m.Result.Status)
		m.Written = WrittenYes
	}
	if m.FollowUp == FollowRereadOnce {
		m.FollowUp = FollowNone // a reread is never reread again; any other follow-up stands
	}
	return m
}

// WithCause returns the mapped result, and for a FAULT or DECLINED adds
// what the client reported (cause) to the spec's text, so an operator
// sees both.
func (m Mapping) WithCause(cause error) driver.Result {
	r := m.Result
	if (r.Status == driver.Fault || r.Status == driver.Declined) && cause != nil {
		r.Text += ": " + cause.Error()
	}
	return r
}

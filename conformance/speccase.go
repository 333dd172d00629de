package conformance

import (
	"fmt"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/rules"
)

// Op names a driver call a case drives.
type Op uint8

const (
	OpPut Op = iota + 1
	OpGet
)

func (o Op) String() string {
	if o == OpPut {
		return "put"
	}
	if o == OpGet {
		return "get"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// SizeAnswer is the kind of non-negative answer a size-returning call gave.
type SizeAnswer uint8

const (
	SizeNone  SizeAnswer = iota // the answer is a code
	SizeWhole                   // the row's whole length
	SizeShort                   // fewer bytes than the row
)

func (s SizeAnswer) String() string {
	switch s {
	case SizeNone:
		return "code"
	case SizeWhole:
		return "whole"
	case SizeShort:
		return "short"
	}
	return fmt.Sprintf("SizeAnswer(%d)", uint8(s))
}

// Answer is what an SDK call answers for one row in a case: a code, or a
// size.
type Answer struct {
	Code     int64
	CodeName string
	Size     SizeAnswer
}

func (a Answer) String() string {
	if a.Size != SizeNone {
		return "size:" + a.Size.String()
	}
	return fmt.Sprintf("%s(%d)", a.CodeName, a.Code)
}

// Case is one generated conformance case: a store's SDK answers Call
// with Answer for a row, and the driver's operation must end with Want and
// the access state AccessEnded. Cases are data; conformance.Run
// interprets them through a store's stager.
type Case struct {
	ID   string // call/answer[/follow-up]
	Pos  string // spec file:line:col of the rule the case pins
	Op   Op
	Call string
	// Answer is the SDK's answer to Call for the row.
	Answer Answer
	// Exists answers an existence question (FollowAskExistence).
	Exists bool
	// Other: what exists under the key is not the row's whole object
	// (another length, or bytes that fail the store's check).
	Other bool
	// Reread answers the reread (FollowRereadOnce).
	Reread *Answer
	// Want is the row's final status, and WantCode its code for a FAULT
	// (0 when the fault has no store code).
	Want     driver.Status
	WantCode int64
	// Written says whether the get destination may have been written.
	Written rules.Written
	// AccessEnded is whether the operation must prove its access ended.
	AccessEnded bool
	// Stageable: a real server can stage this case.
	Stageable bool

	// Key, when set, makes the case an admission case of the spec's keys
	// block: no SDK call is staged, and a put and a get of a key of this
	// shape must be refused with the rule Rejected names before anything
	// is recorded, or, when Rejected is "", admitted.
	Key KeyShape
	// KeyBytes is the key's length for KeyAtLimit and KeyOverLimit.
	KeyBytes int
	// Rejected is the rule a RejectedError must name ("": admitted).
	Rejected string
}

// KeyShape is the shape of the key an admission case submits.
type KeyShape uint8

const (
	KeyNone          KeyShape = iota // not an admission case
	KeyAtLimit                       // a well-formed key of exactly KeyBytes bytes
	KeyOverLimit                     // a well-formed key of KeyBytes bytes, one over the limit
	KeyWithSpace                     // a key with a space in a prefix segment
	KeyWithControl                   // a key with a control byte (a tab) in a prefix segment
	KeyWithNonASCII                  // a key with a UTF-8 letter in a prefix segment
	KeyDotSegment                    // a key whose prefix has a "." segment
	KeyDotDotSegment                 // a key whose prefix has a ".." segment
)

func (k KeyShape) String() string {
	names := [...]string{"none", "at-limit", "over-limit", "space", "control", "non-ascii", "dot-segment", "dotdot-segment"}
	if int(k) < len(names) {
		return names[k]
	}
	return fmt.Sprintf("KeyShape(%d)", uint8(k))
}

package driver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
)

// Status is a row's logical result. The numbers never change; new statuses
// are appended.
type Status uint8

const (
	// Pending is the zero Status: no result recorded yet. Drivers never
	// report it in a finished Poll.
	Pending Status = iota
	// Ready: the row was stored (put) or read whole into its spans (get).
	Ready
	// Miss: the key is absent; a get left its destination untouched.
	Miss
	// NotReady: another writer has not finished the key; try later.
	NotReady
	// Declined: the store is full and refused the row. Not a fault.
	Declined
	// Fault: any other failure; the result carries the store's code and text.
	Fault
	// Cancelled: the row never started, because the operation was cancelled.
	Cancelled
)

var statusNames = [...]string{"PENDING", "READY", "MISS", "NOT_READY", "DECLINED", "FAULT", "CANCELLED"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

// ParseStatus returns the status named name (READY, MISS, ...).
func ParseStatus(name string) (Status, bool) {
	for i, n := range statusNames {
		if n == name && i != int(Pending) {
			return Status(i), true
		}
	}
	return Pending, false
}

// Result is one row's result. Code and Text are set only for a Fault,
// which must say what went wrong, and a Declined, which says the store's
// answer when it has one (the code of the answer that refused the row:
// a full disk, an out-of-memory reply), so that a caller can tell which
// answer caused it.
type Result struct {
	Status Status
	Code   int64  // the store's numeric code, for a Fault or Declined
	Text   string // what went wrong (Fault), what the store answered (Declined)
}

// FaultResult returns a Fault with the store's code and a text saying what
// went wrong.
func FaultResult(code int64, format string, args ...any) Result {
	return Result{Status: Fault, Code: code, Text: fmt.Sprintf(format, args...)}
}

func (r Result) String() string {
	if r.Status == Fault || (r.Status == Declined && (r.Code != 0 || r.Text != "")) {
		return fmt.Sprintf("%s(%d: %s)", r.Status, r.Code, r.Text)
	}
	return r.Status.String()
}

// Validate refuses a status out of range, a fault without text and a code
// or text on anything but a fault or a decline.
func (r Result) Validate() error {
	if r.Status == Pending || int(r.Status) >= len(statusNames) {
		return fmt.Errorf("driver: result status %d is out of range", uint8(r.Status))
	}
	if r.Status == Fault && r.Text == "" {
		return fmt.Errorf("driver: a FAULT must say what went wrong (code %d has no text)", r.Code)
	}
	if r.Status != Fault && r.Status != Declined && (r.Code != 0 || r.Text != "") {
		return fmt.Errorf("driver: %s carries code %d %q; only a FAULT or DECLINED has a code", r.Status, r.Code, r.Text)
	}
	return nil
}

// Capabilities declares what a driver supports. The zero value supports
// nothing; every capability added later defaults to unsupported.
type Capabilities struct {
	// Hints: Get reads a non-zero Hint. Without it the caller must pass the
	// zero Hint.
	Hints bool
	// AbsentIsMiss: an absent key answers MISS (otherwise it may be a FAULT).
	AbsentIsMiss bool
	// DeviceMemory: Register accepts Device regions.
	DeviceMemory bool
	// MultiSpan: a row may have more than one span.
	MultiSpan bool
	// MaxRowsPerOp bounds the rows of one Put or Get; 0 means no bound.
	MaxRowsPerOp int
	// Probe: the driver can answer existence without reading.
	Probe bool
	// Evicts: the store may drop a complete object to make room (Mooncake
	// when its pool is full, Redis under an LRU maxmemory-policy,
	// memcached), so a row whose put answered READY may later read MISS.
	// READY still promises the row's bytes were stored whole, and a get
	// that answers READY still delivers them; only "it stays readable"
	// is given up. Without it, a READY row reads READY until overwritten.
	Evicts bool
}

// Hint is an opaque, immutable routing hint for a get (which instance holds
// the rows, say). The zero Hint is "no hint".
type Hint struct{ b *[]byte }

// NewHint returns a hint holding a copy of b.
func NewHint(b []byte) Hint {
	c := bytes.Clone(b)
	if c == nil {
		c = []byte{}
	}
	return Hint{b: &c}
}

// IsZero reports whether h is the zero Hint.
func (h Hint) IsZero() bool { return h.b == nil }

// Bytes returns a copy of the hint's bytes: nil for the zero Hint alone,
// so that a hint of no bytes still reads as given.
func (h Hint) Bytes() []byte {
	if h.b == nil {
		return nil
	}
	return bytes.Clone(*h.b)
}

// Registration is a driver's handle on a registered region.
type Registration interface {
	Region() *Region
}

// Operation is a recorded Put or Get.
//
// Poll and AccessEnded answer separate questions, and neither implies the
// other: a row may be READY while the store still touches its memory, and an
// operation may end its access before its results are known.
//
// Every method is safe to call from any goroutine, at any time, and never
// blocks on the store.
type Operation interface {
	// Poll returns one result per row, in row order, and true once every
	// row has its result; until then it returns nil, false. The slice is
	// the operation's and final once returned with true: a caller reads it
	// and never writes it, so an operation may hand out the same slice on
	// every call instead of copying its rows' results each time.
	Poll() ([]Result, bool)
	// AccessEnded reports whether the store can no longer touch any memory
	// the operation named. Once true it stays true.
	AccessEnded() bool
	// AccessUnprovable reports that the store lost the evidence that its
	// access ended and never will have it. Once true it stays true, and
	// AccessEnded stays false.
	AccessUnprovable() bool
	// Cancel asks the driver to stop rows that have not started; they
	// answer CANCELLED. It is best effort.
	Cancel()
}

// Driver is what a store implements. Package driverkit holds the lifecycle
// every driver shares (registrations, calls in progress, drain and close).
//
// Every method is safe for concurrent use by multiple goroutines: Put and
// Get may run beside each other and beside Register, Unregister and Drain;
// Close may be called at any time and refuses what it must.
//
// Put and Get record an operation and return it, or return a RejectedError
// having recorded nothing. They may block until the operation is done or
// return early. ctx bounds the store calls the operation makes where the
// store's client honors a context (a driver documents the calls that
// cannot); a cancelled ctx turns the rows it stopped into row results,
// never an error, once the operation is recorded.
type Driver interface {
	Capabilities() Capabilities
	// Register makes a region's memory available to the store. A Device
	// region is refused (RejectedError) unless DeviceMemory is declared.
	// Any error other than a RejectedError means the registration may be
	// live.
	Register(r *Region) (Registration, error)
	// Unregister revokes a registration. It is refused (RejectedError)
	// while an operation that may touch the region is open or unprovable.
	Unregister(reg Registration) error
	// Put stores each row's spans under its key. It never writes a span.
	Put(ctx context.Context, rows []Row) (Operation, error)
	// Get reads each row's object into its spans. hint must be zero unless
	// the driver declares Hints.
	Get(ctx context.Context, rows []Row, hint Hint) (Operation, error)
	// Drain waits until no work is in progress, or ctx is done, and reports
	// whether none is left. It answers false at once while an operation is
	// unprovable. A driver whose store ends some operations' access only
	// when its client is torn down (they report neither AccessEnded nor
	// AccessUnprovable until then) does not wait for them: once they are
	// all that is left, it tears the client down, which ends their access,
	// and takes no new call after that (RuleClosed).
	Drain(ctx context.Context) bool
	// Close releases the driver once nothing can touch the caller's
	// memory: every call ended (no Drain is needed first) and every
	// region is unregistered. It is refused (RejectedError, saying which)
	// while a call is in progress, where Drain must come first, and for
	// good once an operation is unprovable.
	Close() error
}

// As is the escape hatch from the contract to a driver's own type, in the
// manner of gocloud.dev/blob's As: target must be a non-nil pointer; when d
// is of the type target points to, As stores d there and returns true.
// Otherwise, when d has a method As(any) bool (a wrapper of another driver
// does), As returns what that method returns; a wrapper's As calls
// driver.As on the driver it wraps. Tests use it to stage scenarios on the
// store behind a wrapping driver.
func As(d Driver, target any) bool {
	v := reflect.ValueOf(target)
	if d == nil || v.Kind() != reflect.Pointer || v.IsNil() {
		return false
	}
	if dv := reflect.ValueOf(d); dv.Type().AssignableTo(v.Elem().Type()) {
		v.Elem().Set(dv)
		return true
	}
	if w, ok := d.(interface{ As(any) bool }); ok {
		return w.As(target)
	}
	return false
}

// Rule names a RejectedError carries: the admission rules as spec files
// spell them, and the states that refuse a call.
const (
	RuleNoRows              = "no_rows"
	RuleEmptyKey            = "empty_key"
	RuleRepeatedKey         = "repeated_key"
	RuleMultiSpan           = "multi_span"
	RuleRowTooLarge         = "row_too_large"
	RuleSpanOutside         = "span_outside_registration"
	RuleHint                = "hint"
	RuleDeviceRegion        = "device_region"
	RuleKeyTooLong          = "key_too_long"
	RuleKeyBytes            = "key_bytes"
	RuleKeyFormat           = "key_format"
	RuleTooManyRows         = "too_many_rows"
	RuleInvalidSpan         = "invalid_span"
	RuleClosed              = "closed"
	RuleAccessOpen          = "access_open"
	RuleUnknownRegistration = "unknown_registration"
)

// RejectedError is the DriverRejected error: the only error that certifies
// nothing escaped. It is not a store error. Match it with errors.As or
// IsRejected.
type RejectedError struct {
	Rule   string // the admission rule or state that refused, e.g. "repeated_key"
	Reason string // what was wrong and what to do
}

func (e *RejectedError) Error() string {
	return "driver rejected (" + e.Rule + "): " + e.Reason
}

// Reject returns a RejectedError naming rule.
func Reject(rule, format string, args ...any) error {
	return &RejectedError{Rule: rule, Reason: fmt.Sprintf(format, args...)}
}

// IsRejected reports whether err is (or wraps) a RejectedError.
func IsRejected(err error) bool {
	var r *RejectedError
	return errors.As(err, &r)
}

package driver

// Notifier is an optional interface of an Operation: an operation that
// can say when it changed, so its observer need not poll it on a timer.
// An observer finds it by type assertion; an operation without it is
// polled, as the contract says.
type Notifier interface {
	// Notify asks the operation to call f after each later change of what
	// Poll, AccessEnded or AccessUnprovable answer. f may be called from
	// any goroutine, never under the operation's own locks, and more often
	// than needed; it must return quickly. The observer calls Notify at
	// most once, then polls once: a change before Notify need not call f.
	Notify(f func())
}

// TeardownEnder is an optional interface of an Operation whose access the
// store ends only when the driver tears its store client down: a transfer
// whose wait gave up, which nothing but the client's teardown stops
// (Mooncake's get that answered TRANSFER_FAIL, the spec follow-up
// ends_at_teardown). A driver does that in a Drain once such operations
// are all it has left (driverkit.Call.EndsAtTeardown), and a drain answers
// false while any operation is unprovable. So beside an unprovable call no
// teardown ever ends this access, and an observer that must stop waiting
// then may count such an operation, and only such a one, as unprovable:
// any other operation whose access has not ended may still end it by
// itself.
type TeardownEnder interface {
	// AccessEndsAtTeardown reports that the operation's access ends only
	// when the driver tears its store client down. It answers false once
	// AccessEnded is true, and for an unprovable operation.
	AccessEndsAtTeardown() bool
}

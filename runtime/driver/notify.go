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

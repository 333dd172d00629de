package driverkit

// Stack and Resize keep memory a store or a driver uses call after call,
// so that once warm a call takes from the Go heap only what it hands back
// to its caller: garbage made per call brings collections, whose mark
// phase takes a core and sets a fetch's tail.
//
// Neither locks: the caller's own lock guards each value.

// Stack keeps values for reuse, the one put last given first (its memory
// likeliest still in cache). Its zero value is empty and ready.
type Stack[T any] struct{ s []*T }

// Get returns the value put last, or a new zero T when none is kept. The
// caller resets what it takes (Put leaves values as they were put).
func (k *Stack[T]) Get() *T {
	n := len(k.s)
	if n == 0 {
		return new(T)
	}
	v := k.s[n-1]
	k.s[n-1] = nil // the stack no longer keeps it
	k.s = k.s[:n-1]
	return v
}

// Put keeps v for a later Get. Nothing else may use v once it is put.
func (k *Stack[T]) Put(v *T) { k.s = append(k.s, v) }

// Len returns the number of values kept.
func (k *Stack[T]) Len() int { return len(k.s) }

// Resize returns b with length n, reusing its array when it has room (its
// elements then keep what they held: the caller writes them) and making a
// new one when it has not.
func Resize[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

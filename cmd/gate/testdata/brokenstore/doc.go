// Package brokenstore is the store the gate's own test runs it over: the
// memory store as is ("memory"), and behind the twin from internal/broken
// that answers FAULT where the store answers MISS ("broken"), so that the
// gate's table and reports can be seen to carry a real failure, and a
// generated case's failure with its spec position.
package brokenstore

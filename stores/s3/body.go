package s3

import (
	"errors"
	"io"
	"sync"
)

// errSealed is what a sealed body answers: its call has returned, and the
// caller's slot is no longer the driver's to read.
var errSealed = errors.New("s3: the request body was sealed when its call returned")

// body is a PUT's request body: the row's span (the caller's slot, read in
// place) followed by the trailer. Go's http.Transport may go on reading a
// request body after RoundTrip returned (with an error), from a goroutine
// of its own; so the driver seals the body before its call returns, and a
// sealed body answers every Read and Seek with errSealed without touching
// the slot. The mutex orders the seal after any Read in progress: once
// seal returns, nothing reads the slot through this body again.
type body struct {
	mu     sync.Mutex
	slot   []byte // the caller's memory, until sealed
	tail   []byte // the trailer, the driver's own
	off    int64
	sealed bool
}

func newBody(slot, tail []byte) *body {
	return &body{slot: slot, tail: tail}
}

func (b *body) size() int64 { return int64(len(b.slot) + len(b.tail)) }

// Read copies from the slot, then the trailer.
func (b *body) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sealed {
		return 0, errSealed
	}
	if b.off >= b.size() {
		return 0, io.EOF
	}
	n := 0
	if b.off < int64(len(b.slot)) {
		n = copy(p, b.slot[b.off:])
	}
	if n < len(p) && b.off+int64(n) >= int64(len(b.slot)) {
		n += copy(p[n:], b.tail[b.off+int64(n)-int64(len(b.slot)):])
	}
	b.off += int64(n)
	return n, nil
}

// Seek lets the client rewind the body for signing and retries, until the
// body is sealed.
func (b *body) Seek(offset int64, whence int) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sealed {
		return 0, errSealed
	}
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += b.off
	case io.SeekEnd:
		offset += b.size()
	default:
		return 0, errors.New("s3: body: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("s3: body: negative position")
	}
	b.off = offset
	return offset, nil
}

// Close seals the body, as the transport does when it is done with it.
func (b *body) Close() error {
	b.seal()
	return nil
}

// seal ends the body's access to the slot: it waits for a Read in progress
// and drops the slot, so no later Read can reach it.
func (b *body) seal() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sealed, b.slot = true, nil
}

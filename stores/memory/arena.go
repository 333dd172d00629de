package memory

import "math/bits"

// arena is the store's object memory, as a real store's segments are:
// segments allocated once and kept, carved into blocks by size class, a
// freed block going back to its class's free list for the next object of
// that class. Once warm, storing an object allocates nothing on the Go
// heap, and no page is touched for the first time. Its caller holds the
// store's lock.
type arena struct {
	seg  []byte     // the current segment's unused tail
	free [][][]byte // classIndex -> free blocks
	kept int64      // bytes held in segments and blocks
}

// segmentBytes is one segment; an object above a quarter of it gets a
// block of its own, kept for reuse like any other.
const segmentBytes = 64 << 20

// class rounds n up to its size class: a multiple of 64 bytes up to
// 4 KiB, then eight classes per power of two, so a block wastes at most
// an eighth of its size.
func class(n int) int {
	if n <= 4<<10 {
		return max(64, (n+63)&^63)
	}
	step := 1 << (bits.Len(uint(n-1)) - 4) // 1/8 of the power of two above
	return (n + step - 1) &^ (step - 1)
}

// classIndex numbers the classes in order from 0: 64 classes up to
// 4 KiB, then eight per power of two. c is a class (class(c) == c).
func classIndex(c int) int {
	if c <= 4<<10 {
		return c/64 - 1
	}
	k := bits.Len(uint(c - 1)) // c is m steps of 2^(k-4), m in 9..16
	return 64 + (k-13)*8 + c>>(k-4) - 9
}

// alloc returns a block of n bytes (its capacity is its class's).
func (a *arena) alloc(n int) []byte {
	c := class(n)
	if i := classIndex(c); i < len(a.free) && len(a.free[i]) > 0 {
		fl := a.free[i]
		b := fl[len(fl)-1]
		fl[len(fl)-1] = nil
		a.free[i] = fl[:len(fl)-1]
		return b[:n]
	}
	if c > segmentBytes/4 {
		a.kept += int64(c)
		return make([]byte, n, c)
	}
	if len(a.seg) < c {
		a.seg = make([]byte, segmentBytes)
		a.kept += segmentBytes
	}
	b := a.seg[:n:c]
	a.seg = a.seg[c:]
	return b
}

// release gives a block back to its class.
func (a *arena) release(b []byte) {
	c := cap(b)
	i := classIndex(c)
	if i >= len(a.free) {
		a.free = append(a.free, make([][][]byte, i+1-len(a.free))...)
	}
	a.free[i] = append(a.free[i], b[:c])
}

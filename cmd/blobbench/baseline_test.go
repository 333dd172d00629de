package main

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheBaselinesShareTheRowsTheSameWay: share cuts the rows into n
// contiguous runs that cover each row once (more goroutines than rows
// included), and parallelCopy and allocCopy, which both run on those
// shares, copy every row. (Tried: a share's hi of rows*(g+1)/n-1 fails
// the cover; parallelCopy stepping by two rows fails the copy.)
func TestTheBaselinesShareTheRowsTheSameWay(t *testing.T) {
	const rowBytes = 64
	for _, c := range []struct{ rows, n int }{{1, 1}, {7, 2}, {8, 2}, {3, 4}, {16, 3}} {
		t.Run(fmt.Sprintf("%d rows on %d", c.rows, c.n), func(t *testing.T) {
			seen := make([]int, c.rows)
			prev := int64(0)
			for g := 0; g < c.n; g++ {
				lo, hi := share(int64(c.rows), g, c.n)
				require.Equal(t, prev, lo, "share %d does not start where %d ended", g, g-1)
				for k := lo; k < hi; k++ {
					seen[k]++
				}
				prev = hi
			}
			for k, s := range seen {
				assert.Equal(t, 1, s, "row %d taken %d times", k, s)
			}
			src := make([]byte, c.rows*rowBytes)
			for i := range src {
				src[i] = byte(i*7 + 1)
			}
			dst := make([]byte, len(src))
			parallelCopy(dst, src, rowBytes, c.n)
			assert.Equal(t, src, dst, "parallelCopy")
			objs := allocCopy(src, rowBytes, c.n)
			require.Len(t, objs, c.rows)
			assert.Equal(t, src, bytes.Join(objs, nil), "allocCopy")
		})
	}
}

// TestJoinedReadsBothSlicesAsOne reads a joined body whole through a
// SectionReader, in reads of every size that straddle the seam. (Tried:
// dropping b's read fails every size.)
func TestJoinedReadsBothSlicesAsOne(t *testing.T) {
	a, b := []byte("the row's payload"), []byte("+trailer")
	want := append(append([]byte(nil), a...), b...)
	for step := 1; step <= len(want)+1; step++ {
		r := io.NewSectionReader(joined{a, b}, 0, int64(len(want)))
		var got []byte
		buf := make([]byte, step)
		for {
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
		}
		assert.Equal(t, want, got, "reads of %d", step)
	}
}

// TestAPlainWorksRowsAreTheRowsSlots: plainWork.rows cuts the rig's
// memory into one slot per key, each the row's own, in order, none
// another's (tried: every key given the first row's slot fails).
func TestAPlainWorksRowsAreTheRowsSlots(t *testing.T) {
	const rowBytes, rows = 64, 5
	mem := make([]byte, rowBytes*rows)
	for i := range mem {
		mem[i] = byte(i / rowBytes)
	}
	w := plainWork{keys: make([]string, rows), rowBytes: rowBytes}
	got := w.rows(mem)
	require.Len(t, got, rows)
	for k, b := range got {
		require.Len(t, b, rowBytes, "row %d", k)
		assert.Equal(t, bytes.Repeat([]byte{byte(k)}, rowBytes), b, "row %d is not its own slot", k)
	}
}

// TestTheCheckedBaselineRefusesWhatTheDriverRefuses: the fs baseline's
// check (crcChecks) passes an object as the driver stores it and refuses
// one with a byte of its payload flipped anywhere, as the driver's
// fetch does, so posix_checked times the same work. (Tried: crcChecks
// returning nil before it compares passes the flipped payloads.)
func TestTheCheckedBaselineRefusesWhatTheDriverRefuses(t *testing.T) {
	payload := bytes.Repeat([]byte("kv rows "), 512)
	obj := plainObject(nil, "p/v1/00", payload)
	tail := obj[len(payload):]
	require.NoError(t, crcChecks("f", payload, tail))
	for _, at := range []int{0, len(payload) / 2, len(payload) - 1} {
		bad := bytes.Clone(payload)
		bad[at] ^= 0xff
		assert.Error(t, crcChecks("f", bad, tail), "a byte flipped at %d", at)
	}
}

package s3

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/kvblob/kvblob/internal/bound"
)

// bodyBound bounds each call on a body: a lock a broken line never
// releases, or a read that never moves on, fails the test in seconds.
const bodyBound = 10 * time.Second

// readAll reads b to its end with reads of at most chunk bytes, each call
// bounded, and fails t when a read makes no progress more often than the
// body has bytes (a Read that answers 0, nil for ever).
func readAll(t *testing.T, b *body, chunk int) []byte {
	t.Helper()
	var out []byte
	for calls := 0; ; calls++ {
		if calls > int(b.size())+2 {
			t.Fatalf("reads of %d bytes: %d calls and no end; got %d bytes of %d", chunk, calls, len(out), b.size())
		}
		p := make([]byte, chunk)
		var n int
		var err error
		bound.Within(t, bodyBound, "body.Read", func() { n, err = b.Read(p) })
		out = append(out, p[:n]...)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("reads of %d bytes: %v after %d bytes", chunk, err, len(out))
		}
	}
}

// TestABodyIsTheSlotThenTheTrailer: read in chunks of any size, and again
// after each kind of Seek, a body is the slot's bytes then the trailer's;
// sealed, it answers errSealed and reads nothing. Tried: the tail copied
// only when the slot ended exactly at the read's start (>= -> >) never
// ends the read; a dropped Unlock in Read or Seek blocks the next call.
func TestABodyIsTheSlotThenTheTrailer(t *testing.T) {
	slot := []byte("the caller's slot")
	tail := []byte("TRAILER")
	whole := append(append([]byte{}, slot...), tail...)
	for _, chunk := range []int{1, 3, len(slot), len(slot) + 1, 64} {
		t.Run(fmt.Sprintf("chunks of %d", chunk), func(t *testing.T) {
			b := newBody(slot, tail)
			if got := readAll(t, b, chunk); !bytes.Equal(got, whole) {
				t.Fatalf("read %q, want %q", got, whole)
			}
			for _, c := range []struct {
				name   string
				offset int64
				whence int
				at     int64
			}{
				{"start", 0, io.SeekStart, 0},
				{"into the trailer", int64(len(slot) + 2), io.SeekStart, int64(len(slot) + 2)},
				{"from the end", -3, io.SeekEnd, int64(len(whole) - 3)},
				{"current", -1, io.SeekCurrent, int64(len(whole) - 4)},
			} {
				var at int64
				var err error
				bound.Within(t, bodyBound, "body.Seek", func() { at, err = b.Seek(c.offset, c.whence) })
				if err != nil || at != c.at {
					t.Fatalf("Seek %s: %d, %v; want %d", c.name, at, err, c.at)
				}
				if c.name != "from the end" { // the next Seek is relative to this position
					if got := readAll(t, b, chunk); !bytes.Equal(got, whole[c.at:]) {
						t.Fatalf("after Seek %s: read %q, want %q", c.name, got, whole[c.at:])
					}
				}
			}
			for _, c := range []struct {
				name   string
				offset int64
				whence int
				want   string
			}{
				{"bad whence", 0, 7, "bad whence"},
				{"before the start", -1, io.SeekStart, "negative position"},
			} {
				var err error
				bound.Within(t, bodyBound, "body.Seek", func() { _, err = b.Seek(c.offset, c.whence) })
				if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
					t.Fatalf("Seek %s: %v, want an error saying %q", c.name, err, c.want)
				}
			}
			bound.Within(t, bodyBound, "body.Close", func() { _ = b.Close() })
			var n int
			var err error
			bound.Within(t, bodyBound, "body.Read", func() { n, err = b.Read(make([]byte, 8)) })
			if n != 0 || !errors.Is(err, errSealed) {
				t.Fatalf("Read of a sealed body: %d, %v; want 0, errSealed", n, err)
			}
			bound.Within(t, bodyBound, "body.Seek", func() { _, err = b.Seek(0, io.SeekStart) })
			if !errors.Is(err, errSealed) {
				t.Fatalf("Seek of a sealed body: %v, want errSealed", err)
			}
		})
	}
}

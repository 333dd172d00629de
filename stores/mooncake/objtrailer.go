package mooncake

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/rs/zerolog"

	mooncakegen "github.com/kvblob/kvblob/generated/mooncake"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/trailer"
)

// Options configure a Driver (NewWith).
type Options struct {
	// Trailer appends the object trailer of stores/trailer (name digest,
	// length, CRC32) to every object the driver writes, and checks it on
	// every get: a flipped bit, a torn object or another key's object is a
	// FAULT instead of READY. Off by default (see NewWith). Every client of
	// one Mooncake deployment must agree on it: an object written without
	// a trailer reads as a FAULT with it, and the reverse.
	Trailer bool
	// Integrity, when set, turns the trailer on keyed: the writer tags every
	// object with the current row key, and a get refuses an object whose tag
	// does not verify under the current or previous key (see
	// trailer.Integrity). It guards against a peer without the key, which
	// Mooncake, with no authentication, lets write any key.
	Integrity *trailer.Integrity
	// AllowUnverified opens a build of a release a spec holds for whose
	// commit the spec was not verified on (rules.Spec.Verified): a build
	// of another commit may answer otherwise than the spec says, so by
	// default the driver refuses it. The gate sets it, to run such a build
	// and report it; an operator who sets it is told so in Logger, at
	// warning level, once per driver.
	AllowUnverified bool
	// Logger receives the driver's events (zero value: discarded).
	Logger zerolog.Logger
}

// stageMax is the most an object carries past its row: a tag and a trailer.
const stageMax = trailer.TailSize

// objectOverhead is how many bytes the trailer of opt adds to each object
// the driver writes: none with the trailer off. NewWith keeps it in
// Driver.overhead, since the options never change after.
func objectOverhead(opt Options) int64 {
	if !opt.Integrity.On() && !opt.Trailer {
		return 0
	}
	return opt.Integrity.Overhead()
}

// stage is memory of the driver's own, off the Go heap and registered with
// the SDK: a put's tags and trailers, a get's staging. A stage some SDK
// answer may still write (TRANSFER_FAIL) is never used again, nor freed.
type stage struct {
	mem []byte
	buf Buffer
}

// allocStage maps a stage's memory. A variable so that a test can make the
// mapping fail, which no fake SDK can: that failure has a path of its own
// (every row of the call a FAULT with no SDK code), and only a test that
// reaches it can hold it to that.
var allocStage = hostmem.Alloc

// room makes *s at least n bytes: a new stage registered with the SDK,
// the old one (no call of this driver uses it: it is a scratch's own)
// unregistered and freed.
func (d *Driver) room(s **stage, n int64) error {
	if *s != nil && int64(len((*s).mem)) >= n {
		return nil
	}
	n = max(n, 64<<10)
	if *s != nil {
		d.dropStage(*s)
		*s = nil
	}
	mem, err := allocStage(int(n))
	if err != nil {
		return err
	}
	buf := BufferOf(mem)
	code, err := d.sdk.RegisterBuffer(buf)
	if err != nil {
		return fmt.Errorf("register_buffer of %d bytes of the driver's own raised; it may be registered, so it is kept: %w", n, err)
	}
	if code != int64(mooncakegen.OK) {
		_ = hostmem.Free(mem)
		return fmt.Errorf("register_buffer of %d bytes of the driver's own answered %s", n, d.codeName(code))
	}
	*s = &stage{mem: mem, buf: buf}
	return nil
}

// dropStage unregisters and frees s; a stage the SDK would not unregister
// is kept registered, its memory never freed.
func (d *Driver) dropStage(s *stage) {
	if code, err := d.sdk.UnregisterBuffer(s.buf); err == nil && code == int64(mooncakegen.OK) {
		_ = hostmem.Free(s.mem)
	}
}

// at is the Buffer over s's bytes [off, off+n).
func (s *stage) at(off, n int64) Buffer { return Buffer{Addr: s.buf.Addr + uintptr(off), Len: n} }

// tagShare is the least a goroutine tags of a keyed put's rows. A keyed
// put tags every row before its one scatter, and the SDK moves nothing
// meanwhile; a publish runs on one worker (backend.PublishWorkers), so
// on one core the tag's whole time was added to the call's. Rows of
// several shares are tagged on up to GOMAXPROCS goroutines at once, the
// put's own among them: measured on the real SDK (docs/security.md) that
// took a keyed publish from 0.55-0.63 of integrity off to 0.65-0.88, in
// each of four runs beside the one-goroutine tag. A share of 1 MiB keeps
// a goroutine's start and wait (microseconds) under a hundredth of its
// tag (170-200 µs a MiB at the tag's 5-6 GB/s a core).
const tagShare = 1 << 20

// tails writes each scattered row's tag and trailer into sc's tail stage
// and returns the Buffer of row k's, or an error with nothing written.
func (d *Driver) tails(sc *scratch, rows []driver.Row, idx []int) ([]Buffer, error) {
	if err := d.room(&sc.tailStage, d.overhead*int64(len(idx))); err != nil {
		return nil, err
	}
	out := make([]Buffer, len(idx))
	n := 1
	if d.opt.Integrity.On() { // the unkeyed trailer's CRC32 is too cheap to share
		var total int64
		for _, i := range idx {
			total += rows[i].Bytes()
		}
		n = int(min(int64(runtime.GOMAXPROCS(0)), int64(len(idx)), total/tagShare))
	}
	var wg sync.WaitGroup
	for j := 1; j < n; j++ {
		wg.Go(func() { d.tagRows(sc.tailStage, out, rows, idx[len(idx)*j/n:len(idx)*(j+1)/n], len(idx)*j/n) })
	}
	d.tagRows(sc.tailStage, out, rows, idx[:len(idx)/max(1, n)], 0)
	wg.Wait()
	return out, nil
}

// tagRows writes the tags and trailers of rows idx, the scatter's rows
// from the at-th on, into tails, and their Buffers into out.
func (d *Driver) tagRows(tails *stage, out []Buffer, rows []driver.Row, idx []int, at int) {
	ov := d.overhead
	for k, i := range idx {
		off := ov * int64(at+k)
		d.opt.Integrity.Append(tails.mem[off:off:off+ov], rows[i].Key, rows[i].Spans[0].Bytes())
		out[at+k] = tails.at(off, ov)
	}
}

// unstage checks row's object, read into staged (n bytes of it, or a
// negative code), and copies its payload into the row's span when it
// verifies. It returns the answer as the spec maps it for the row (the
// payload's length, or the code), and the error of an object that failed
// its trailer or tag check (the span untouched).
func (d *Driver) unstage(row driver.Row, n int64, staged []byte) (int64, error) {
	if n < 0 {
		return n, nil
	}
	payload, err := d.opt.Integrity.Check(staged[:min(n, int64(len(staged)))], row.Key)
	if err != nil {
		return 0, err
	}
	if int64(len(payload)) == row.Bytes() {
		copy(row.Spans[0].Bytes(), payload)
	}
	return int64(len(payload)), nil
}

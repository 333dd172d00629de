package fs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kvblob/kvblob/runtime/sweep"
)

// Sweep removes what dead writers left under the root: temporary files
// (<hex>.tmp-<random>, a writer killed between its create and its rename)
// and markers moved aside (<hex>.pending.expired-<random>, a writer killed
// while it took over an expired marker). A file is swept only when its
// mtime is older than MarkerTTL plus MaxClockSkew by the driver's clock
// (or dated more than MaxClockSkew ahead of it): a writer finishes a row
// within MarkerTTL (see Options), so such a file's writer is dead or past
// its claim, and a live writer's file, younger than that, is never
// removed.
//
// Its work is bounded by budget whatever the tree's shape (runtime/sweep):
// it looks at no more than budget directory entries (every entry it reads
// counts, directories and files alike), reads each directory SweepBatch
// entries at a time through a fixed buffer, holds at most SweepDepth
// directories open (a directory deeper than that is not entered), and
// builds no path. A driver's sweeps continue one another: each starts
// where the last stopped, and once one reaches the tree's end the next
// starts over, so repeated sweeps of a tree larger than budget cover all
// of it. Open runs one with Options.SweepBudget (from the tree's start); a
// long-running process calls Sweep now and then. It follows no link, and removes only
// regular files, by unlinkat(2) in a directory opened beneath the root. It
// answers how many files it removed and the first error it met (it goes
// on past errors).
func (d *Driver) Sweep(budget int) (removed int, err error) {
	removed, _, err = d.sweep(budget)
	return removed, err
}

// SweepDepth is how many directories a sweep holds open at once, the
// root's included: deeper than any key's directory under a prefix of up to
// 24 segments (a key's directories are its prefix's segments, v1, a
// fan-out directory and at most five more for a name under
// driver.MaxKeyBytes).
const SweepDepth = 32

// SweepBatch is how many entries a sweep takes from a directory at a
// time.
const SweepBatch = 64

// direntBuf is the size of the buffer a directory is read through
// (getdents64): at least 15 entries of the longest name.
const direntBuf = 4 << 10

func (d *Driver) sweep(budget int) (int, sweep.Stats, error) {
	d.sweepMu.Lock()
	defer d.sweepMu.Unlock()
	fd, err := unix.Openat(d.tree.rootFD(), ".", dirFlags, 0)
	if err != nil {
		return 0, sweep.Stats{}, fmt.Errorf("fs: sweep: %w", err)
	}
	root := &sweepDir{fd: fd, name: d.opt.Root}
	defer root.Close()
	now := d.opt.Now()
	removed := 0
	st, err := sweep.Walk(root, sweep.Limits{Budget: budget, Depth: SweepDepth, Batch: SweepBatch}, &d.sweepAt, func(dir *sweepDir, _ []string, e sweep.Entry) error {
		if !strings.Contains(e.Name, tempInfix) && !strings.Contains(e.Name, asideInfix) {
			return nil
		}
		st, err := lstatAt(dir.fd, e.Name)
		if err != nil || !st.regular() || !d.dead(st, now) {
			return nil // gone meanwhile, replaced (not ours to judge), or live
		}
		if err := unix.Unlinkat(dir.fd, e.Name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "unlink", Path: filepath.Join(dir.path(), e.Name), Err: err}
		}
		removed++
		return nil
	})
	if err != nil {
		err = fmt.Errorf("fs: sweep: %w", err)
	}
	return removed, st, err
}

// dead reports whether a temporary file or a marker moved aside, of st,
// belongs to a writer that is dead or past its claim by now.
func (d *Driver) dead(st fileStat, now time.Time) bool {
	return st.mtime.After(now.Add(d.opt.MaxClockSkew)) || now.Sub(st.mtime) > d.opt.MarkerTTL+d.opt.MaxClockSkew
}

// sweepDir is a directory a sweep reads, a sweep.Dir: its descriptor, read
// through a fixed buffer by getdents64.
type sweepDir struct {
	fd     int
	parent *sweepDir // nil for the root
	name   string    // its name in parent (the root's path for the root)
	buf    []byte    // made at the first Read
	at     int       // buf[at:n] is still to parse
	n      int
}

// path is the directory's path, for errors: made only when asked for, from
// the directories the walk holds open above it.
func (d *sweepDir) path() string {
	if d.parent == nil {
		return d.name
	}
	return filepath.Join(d.parent.path(), d.name)
}

// Read hands out up to len(ents) entries, reading the directory a buffer
// at a time; an entry whose type the filesystem does not report is
// lstat'ed.
func (d *sweepDir) Read(ents []sweep.Entry) (int, error) {
	if d.buf == nil {
		d.buf = make([]byte, direntBuf)
	}
	k := 0
	for k < len(ents) {
		if d.at >= d.n {
			n, err := unix.ReadDirent(d.fd, d.buf)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n <= 0 {
				return k, err
			}
			d.at, d.n = 0, n
		}
		// struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name.
		rec := d.buf[d.at:d.n]
		if len(rec) < 20 {
			d.at = d.n
			return k, fmt.Errorf("%s: a directory entry cut short at %d bytes", d.path(), len(rec))
		}
		reclen := int(rec[16]) | int(rec[17])<<8
		if reclen < 20 || reclen > len(rec) {
			d.at = d.n
			return k, fmt.Errorf("%s: a directory entry of %d bytes in a buffer of %d", d.path(), reclen, len(rec))
		}
		d.at += reclen
		typ, name := rec[18], rec[19:reclen]
		if i := indexNUL(name); i >= 0 {
			name = name[:i]
		}
		if string(name) == "." || string(name) == ".." {
			continue
		}
		e := sweep.Entry{Name: string(name), Next: int64(binary.NativeEndian.Uint64(rec[8:16]))}
		switch typ {
		case unix.DT_DIR:
			e.Dir = true
		case unix.DT_UNKNOWN:
			st, err := lstatAt(d.fd, e.Name)
			e.Dir = err == nil && st.mode == unix.S_IFDIR
		}
		ents[k] = e
		k++
	}
	return k, nil
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// Resume makes the next Read continue after the entry whose d_off is next
// (lseek(2) on the directory, as seekdir(3) does).
func (d *sweepDir) Resume(next int64) error {
	d.at, d.n = 0, 0
	if _, err := unix.Seek(d.fd, next, 0); err != nil {
		return &os.PathError{Op: "seek", Path: d.path(), Err: err}
	}
	return nil
}

// Open opens the subdirectory name, following no link (a link there is
// ELOOP or ENOTDIR, and not entered).
func (d *sweepDir) Open(name string) (*sweepDir, error) {
	fd, err := unix.Openat(d.fd, name, dirFlags|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: filepath.Join(d.path(), name), Err: err}
	}
	return &sweepDir{fd: fd, parent: d, name: name}, nil
}

// Close closes the directory's descriptor.
func (d *sweepDir) Close() error { return unix.Close(d.fd) }

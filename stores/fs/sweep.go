package fs

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
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
// The work is bounded: Sweep looks at no more than budget directory
// entries (every entry it reads counts, directories and files alike),
// starting each directory at a random entry, so repeated sweeps of a tree
// larger than budget cover all of it. Open runs one with
// Options.SweepBudget; a long-running process calls Sweep now and then. It
// follows no link, and removes only regular files, by unlinkat(2) in a
// directory opened beneath the root. It answers how many files it removed
// and the first error it met (it goes on past errors).
func (d *Driver) Sweep(budget int) (removed int, err error) {
	s := sweep{d: d, budget: budget, now: d.opt.Now()}
	root, err := unix.Openat(d.tree.rootFD(), ".", dirFlags, 0)
	if err != nil {
		return 0, fmt.Errorf("fs: sweep: %w", err)
	}
	s.dir(root, d.opt.Root)
	return s.removed, s.err
}

type sweep struct {
	d       *Driver
	budget  int
	now     time.Time
	removed int
	err     error
}

// dead reports whether a temporary file or a marker moved aside, of st,
// belongs to a writer that is dead or past its claim by now.
func (d *Driver) dead(st fileStat, now time.Time) bool {
	return st.mtime.After(now.Add(d.opt.MaxClockSkew)) || now.Sub(st.mtime) > d.opt.MarkerTTL+d.opt.MaxClockSkew
}

// dir sweeps the directory fd (whose path is path, for errors) and closes
// it.
func (s *sweep) dir(fd int, path string) {
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	ents, err := f.ReadDir(-1)
	if err != nil {
		s.fail(err)
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	start := 0
	if len(ents) > 0 {
		start = rand.IntN(len(ents))
	}
	for k := range ents {
		if s.budget <= 0 {
			return
		}
		s.budget--
		e := ents[(start+k)%len(ents)]
		name := e.Name()
		switch {
		case e.Type().IsDir():
			sub, err := unix.Openat(fd, name, dirFlags|unix.O_NOFOLLOW, 0)
			if err != nil {
				s.fail(&os.PathError{Op: "open", Path: filepath.Join(path, name), Err: err})
				continue
			}
			s.dir(sub, filepath.Join(path, name))
		case e.Type().IsRegular() && (strings.Contains(name, tempInfix) || strings.Contains(name, asideInfix)):
			st, err := lstatAt(fd, name)
			if err != nil || !st.regular() {
				continue // gone meanwhile, or replaced: not ours to judge
			}
			if !s.d.dead(st, s.now) {
				continue
			}
			if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				s.fail(&os.PathError{Op: "unlink", Path: filepath.Join(path, name), Err: err})
				continue
			}
			s.removed++
		}
	}
}

func (s *sweep) fail(err error) {
	if s.err == nil {
		s.err = fmt.Errorf("fs: sweep: %w", err)
	}
}

package fs

import (
	"os"

	"golang.org/x/sys/unix"
)

// ForceWalk makes d resolve every path one component at a time with
// O_NOFOLLOW, as on a kernel without openat2.
func ForceWalk(d *Driver) { d.tree.walk.Store(true) }

// Walks reports whether d resolves paths by walking.
func Walks(d *Driver) bool { return d.tree.walk.Load() }

// SetReadPiece makes d read a payload n bytes at a time, so that a test's
// rows span several pieces.
func SetReadPiece(d *Driver, n int) { d.piece = n }

// OnMarkerAttempt makes d call f before each exclusive create of a marker,
// with the attempt's number (0, then 1 after a takeover or a release).
func OnMarkerAttempt(d *Driver, f func(attempt int)) { d.markerAttempt = f }

// OnMarkerFound makes d call f when an exclusive create of a marker found
// one under the name, before d reads it.
func OnMarkerFound(d *Driver, f func()) { d.markerFound = f }

// IsLink is isLink on name in the directory dir.
func IsLink(dir *os.File, name string) bool { return isLink(int(dir.Fd()), name) }

// RefuseNoatime makes every open d asks not to update the access time of
// answer EPERM, as open(2) does for another user's file (tests run as
// root, which may open any file so).
func RefuseNoatime(d *Driver) { d.tree.refuseNoatime = true }

// SetSysFault makes every put and get ask f before each system call on a
// row's files (sysFault, driver.go), until the returned restore is called.
func SetSysFault(f func(call, name string) (unix.Errno, int)) (restore func()) {
	sysFault = f
	return func() { sysFault = nil }
}

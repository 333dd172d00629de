package fs

import (
	"strings"

	"golang.org/x/sys/unix"
)

// resolveBeneath keeps openat2 under its directory and off every link,
// magic links (/proc/self/fd/...) included.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openat2 opens path under dir, resolved as how says (Linux 5.6 and later),
// again after an EINTR.
func openat2(dir int, path string, flags int, resolve uint64) (int, error) {
	for {
		fd, err := -1, error(nil)
		if e, _ := fault("openat2", path[strings.LastIndexByte(path, '/')+1:]); e != 0 {
			err = e
		} else {
			fd, err = unix.Openat2(dir, path, &unix.OpenHow{Flags: uint64(flags), Resolve: resolve})
		}
		// A signal during an open that blocks (a file server's) answers
		// EINTR: open again, as os.Open does.
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// noatime asks open(2) not to update the file's access time on reads: a
// get dirties no inode (on ext4 the first read after a write would, under
// relatime), which on a shared filesystem is a metadata write to the
// server. Only for files the process owns (tree.notOwner).
const noatime = unix.O_NOATIME

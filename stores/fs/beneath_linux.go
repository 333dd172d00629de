package fs

import "golang.org/x/sys/unix"

// resolveBeneath keeps openat2 under its directory and off every link,
// magic links (/proc/self/fd/...) included.
const resolveBeneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// openat2 opens path under dir, resolved as how says (Linux 5.6 and later).
func openat2(dir int, path string, flags int, resolve uint64) (int, error) {
	return unix.Openat2(dir, path, &unix.OpenHow{Flags: uint64(flags), Resolve: resolve})
}

// noatime asks open(2) not to update the file's access time on reads: a
// get dirties no inode (on ext4 the first read after a write would, under
// relatime), which on a shared filesystem is a metadata write to the
// server. Only for files the process owns (tree.notOwner).
const noatime = unix.O_NOATIME

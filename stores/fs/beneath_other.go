//go:build !linux

package fs

import "golang.org/x/sys/unix"

const resolveBeneath = 0

// noatime is Linux's O_NOATIME: none elsewhere.
const noatime = 0

// openat2 is Linux's: elsewhere the driver walks with O_NOFOLLOW.
func openat2(int, string, int, uint64) (int, error) { return -1, unix.ENOSYS }

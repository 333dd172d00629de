package fs

import (
	"errors"

	"golang.org/x/sys/unix"
)

// sysFault, set by tests only (export_test.go's SetSysFault), is asked
// before each system call a put or a get makes on a row's files: call
// names the system call (openat2, openat, mkdirat, fstat, write, fsync,
// renameat, pread, preadv), name the file it acts on (its last component;
// "" for a call on a descriptor). It answers an errno the call then fails
// with instead of running (0: it runs), and for a read or write at most
// how many bytes it may move (0: all; a negative limit: none, the end of
// the file for a read). A nil sysFault, production's, costs one check.
var sysFault func(call, name string) (unix.Errno, int)

// fault is sysFault's answer for call on name.
func fault(call, name string) (unix.Errno, int) {
	if sysFault == nil {
		return 0, 0
	}
	return sysFault(call, name)
}

// limitTo is b cut to limit (0: whole; negative: empty).
func limitTo(b []byte, limit int) []byte {
	switch {
	case limit < 0:
		return b[:0]
	case limit > 0 && limit < len(b):
		return b[:limit]
	}
	return b
}

// writeAll writes b to fd, going on after a short write and an EINTR as
// write(2) asks of its caller (os.File.Write does the same).
func writeAll(fd int, name string, b []byte) error {
	for len(b) > 0 {
		e, limit := fault("write", name)
		if e != 0 {
			if e == unix.EINTR {
				continue
			}
			return e
		}
		n, err := unix.Write(fd, limitTo(b, limit))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case n == 0:
			return unix.EIO // write(2) never answers 0 for a regular file with bytes to write
		}
		b = b[n:]
	}
	return nil
}

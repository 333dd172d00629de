package fs

import (
	"errors"
	"syscall"

	"github.com/kvblob/kvblob/generated/fsspec"
)

// named holds the codes of spec/fs-posix.yaml that are negated errno values.
var named = func() map[fsspec.Code]bool {
	m := map[fsspec.Code]bool{}
	for _, c := range fsspec.Codes() {
		if c < 0 && c > -4096 {
			m[c] = true
		}
	}
	return m
}()

// classify turns a system call's error into a spec/fs-posix.yaml code: the
// negated errno when the table names it (EPERM counts as EACCES), and ERR
// otherwise. What each code means for a row is the spec's.
func classify(err error) fsspec.Code {
	var errno syscall.Errno
	switch {
	case err == nil:
		return fsspec.OK
	case !errors.As(err, &errno):
		return fsspec.Err
	case errno == syscall.EPERM:
		return fsspec.Eacces
	}
	if c := fsspec.Code(-int64(errno)); named[c] {
		return c
	}
	return fsspec.Err
}

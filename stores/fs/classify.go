package fs

import (
	"errors"
	"syscall"

	gen "github.com/kvblob/kvblob/generated/fs"
)

// named holds the codes of spec/fs-posix.yaml that are negated errno values.
var named = func() map[gen.Code]bool {
	m := map[gen.Code]bool{}
	for _, c := range gen.Codes {
		if c < 0 && c > -4096 {
			m[c] = true
		}
	}
	return m
}()

// classify turns a system call's error into a spec/fs-posix.yaml code: the
// negated errno when the table names it (EPERM counts as EACCES), and ERR
// otherwise. What each code means for a row is the spec's.
func classify(err error) gen.Code {
	var errno syscall.Errno
	switch {
	case err == nil:
		return gen.OK
	case !errors.As(err, &errno):
		return gen.Err
	case errno == syscall.EPERM:
		return gen.Eacces
	}
	if c := gen.Code(-int64(errno)); named[c] {
		return c
	}
	return gen.Err
}

package fs

import (
	"errors"
	"syscall"

	fsgen "github.com/kvblob/kvblob/generated/fs"
)

// named holds the codes of spec/fs-posix.yaml that are negated errno values.
var named = func() map[fsgen.Code]bool {
	m := map[fsgen.Code]bool{}
	for _, c := range fsgen.FsPosix().Codes() {
		if c < 0 && c > -4096 {
			m[c] = true
		}
	}
	return m
}()

// classify turns a system call's error into a spec/fs-posix.yaml code: the
// negated errno when the table names it (EPERM counts as EACCES), and ERR
// otherwise. What each code means for a row is the spec's.
func classify(err error) fsgen.Code {
	var errno syscall.Errno
	switch {
	case err == nil:
		return fsgen.OK
	case !errors.As(err, &errno):
		return fsgen.Err
	case errno == syscall.EPERM:
		return fsgen.Eacces
	}
	if c := fsgen.Code(-int64(errno)); named[c] {
		return c
	}
	return fsgen.Err
}

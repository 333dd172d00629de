package fs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The driver never leaves its root: every path it uses is resolved from a
// descriptor of the root, one directory at a time or by openat2, and no
// symbolic link is followed anywhere under the root. A neighbour who can
// write the root can plant a link where a key's directory, object or
// marker goes; the call that meets it answers ELOOP (a FAULT), and nothing
// is read or written through it. The last component of every file the
// driver opens is opened O_NOFOLLOW (and created O_EXCL), renamed with
// renameat(2) and removed with unlinkat(2), which act on a link itself,
// never on its target.

// dirFlags open a directory to resolve names in.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC

// tree is the root directory, held open for the driver's life.
type tree struct {
	root *os.File
	// walk forces the component-by-component resolution (a kernel without
	// openat2, or a test of that path); set once openat2 answered ENOSYS.
	walk atomic.Bool
	// trace is Options.Trace (nil: none).
	trace func(Event)
	// refuseNoatime, set only by tests, answers EPERM to every open with
	// noatime, as open(2) does for a file of another user (notOwner).
	refuseNoatime bool
}

// openTree opens root (which the operator named, links and all) as the
// descriptor every later path is resolved from.
func openTree(root string) (*tree, error) {
	fd, err := unix.Open(root, dirFlags, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) {
			return nil, &os.PathError{Op: "open", Path: root, Err: errors.New("is not a directory")}
		}
		return nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	return &tree{root: os.NewFile(uintptr(fd), root)}, nil
}

func (t *tree) rootFD() int { return int(t.root.Fd()) }

// openDir opens the directory rel (components under the root, none "." or
// ".."), following no link. With create, missing directories are made with
// mode (and chmod'ed to it exactly when mode is not private, so a group
// mode survives the umask).
func (t *tree) openDir(rel []string, create bool, mode uint32) (int, error) {
	if !t.walk.Load() {
		fd, err := openat2(t.rootFD(), strings.Join(rel, "/"), dirFlags, resolveBeneath)
		switch {
		case err == nil:
			return fd, nil
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM):
			// No openat2 in this kernel (before 5.6), or a seccomp filter
			// that refuses it: walk from now on.
			t.walk.Store(true)
		case errors.Is(err, unix.ENOENT) && create:
			// Walk, making what is missing.
		default:
			return -1, t.pathErr(rel, err)
		}
	}
	return t.walkDir(rel, create, mode)
}

// openFile opens name in the directory rel beneath the root (O_NOFOLLOW
// and O_CLOEXEC added to flags), following no link anywhere on its path:
// one openat2 of the whole path where the kernel has it, so the file
// opened is the one the name led to beneath the root when it was opened,
// in one call; else a walk to the directory and an openat(2) of name in
// it. A link at any component (the file itself included) answers ELOOP.
// With noatime in flags, a file the process may not open so (open(2)
// answers EPERM: another user's file, in a root shared by a group) is
// opened without it; that EPERM says nothing of openat2 itself.
func (t *tree) openFile(rel []string, name string, flags int) (int, error) {
	flags |= unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !t.walk.Load() {
		path := strings.Join(append(rel[:len(rel):len(rel)], name), "/")
		fd, err := t.notOwner(flags, func(flags int) (int, error) { return openat2(t.rootFD(), path, flags, resolveBeneath) })
		if !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EPERM) {
			return fd, err
		}
		t.walk.Store(true) // as openDir: no openat2 here
	}
	dir, err := t.walkDir(rel, false, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dir)
	return t.notOwner(flags, func(flags int) (int, error) { return unix.Openat(dir, name, flags, 0) })
}

// notOwner opens with open(flags), and once more without noatime when
// flags hold it and open answered EPERM: O_NOATIME is only for the file's
// owner (or a process with CAP_FOWNER). With refuseNoatime set (tests,
// which run as root) every open with noatime answers EPERM, as for
// another user's file.
func (t *tree) notOwner(flags int, open func(flags int) (int, error)) (int, error) {
	if flags&noatime == 0 {
		return open(flags)
	}
	fd, err := -1, error(unix.EPERM)
	if !t.refuseNoatime {
		fd, err = open(flags)
	}
	if errors.Is(err, unix.EPERM) {
		return open(flags &^ noatime)
	}
	return fd, err
}

// walkDir opens rel one component at a time with O_NOFOLLOW: the kernel
// follows no link, and one planted at any component answers ELOOP.
func (t *tree) walkDir(rel []string, create bool, mode uint32) (int, error) {
	fd, err := unix.Openat(t.rootFD(), ".", dirFlags, 0)
	if err != nil {
		return -1, t.pathErr(nil, err)
	}
	for i, c := range rel {
		next, err := unix.Openat(fd, c, dirFlags|unix.O_NOFOLLOW, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if e, _ := fault("mkdirat", c); e != 0 {
				err = e
			} else {
				err = unix.Mkdirat(fd, c, mode)
			}
			if err == nil {
				t.traced(EventMkdir, rel[:i+1])
				if mode&^0o700 != 0 {
					err = unix.Fchmodat(fd, c, mode, 0)
				}
				// The new directory's entry survives a crash of the file
				// server only once its parent is fsynced: until then an
				// object renamed into it may vanish with it.
				if err == nil {
					err = t.syncDir(fd, rel[:i])
				}
			}
			if err == nil || errors.Is(err, unix.EEXIST) { // EEXIST: another writer made it
				next, err = unix.Openat(fd, c, dirFlags|unix.O_NOFOLLOW, 0)
			}
		}
		if errors.Is(err, unix.ENOTDIR) && isLink(fd, c) {
			// O_DIRECTORY|O_NOFOLLOW answers ENOTDIR for a link.
			err = unix.ELOOP
		}
		_ = unix.Close(fd)
		if err != nil {
			return -1, t.pathErr(rel[:i+1], err)
		}
		fd = next
	}
	return fd, nil
}

// isLink reports whether name in dir is a symbolic link.
func isLink(dir int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK
}

// syncDir fsyncs the directory fd, rel, and tells Options.Trace once it
// succeeded.
func (t *tree) syncDir(fd int, rel []string) error {
	err := unix.Fsync(fd)
	if err == nil {
		t.traced(EventSyncDir, rel)
	}
	return err
}

// traced tells Options.Trace of op on the directory rel ("." for the
// root).
func (t *tree) traced(op EventOp, rel []string) {
	if t.trace == nil {
		return
	}
	p := filepath.Join(rel...)
	if p == "" {
		p = "."
	}
	t.trace(Event{Op: op, Path: p})
}

// pathErr names the path under the root that failed, and says that a link
// is refused when the kernel answered ELOOP.
func (t *tree) pathErr(rel []string, err error) error {
	p := filepath.Join(append([]string{t.root.Name()}, rel...)...)
	if errors.Is(err, unix.ELOOP) {
		return fmt.Errorf("%s: a symbolic link on the key's path; the driver follows none under its root: %w", p, err)
	}
	return &os.PathError{Op: "open", Path: p, Err: err}
}

// unixMode is m's permission and setgid bits as open(2) and mkdir(2) take
// them.
func unixMode(m os.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&os.ModeSetgid != 0 {
		u |= unix.S_ISGID
	}
	return u
}

package fs_test

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/fs"
)

// Neighbour writes files under a driver's root as another user of the
// filesystem would (conformance.Neighbour): an object file of any bytes,
// a directory where an object's file goes (a value of the wrong type),
// and a wide folder and a deep chain for the tree check. The store keeps
// its markers in files of their own, not in a value, so it gives no
// conformance.MarkerWriter.
type Neighbour struct{ Env *Env }

// WriteRaw writes value as key's object file.
func (Neighbour) WriteRaw(d driver.Driver, key string, value []byte) error {
	return Parts(d).PlantObject(key, value)
}

// WriteWrongType makes key's object a directory.
func (Neighbour) WriteWrongType(d driver.Driver, key string) error {
	return Parts(d).DirAtObject(key)
}

// OverTree makes a fresh root in the Env holding a folder of wide empty
// files named as a killed writer's temporary files would be (what a sweep
// looks at) and a chain of deep nested folders, both removed at t's
// cleanup, and returns what opens a driver over it with the default
// sweep budget.
func (n Neighbour) OverTree(t conformance.T, wide, deep int) (func() (driver.Driver, error), error) {
	root, err := os.MkdirTemp(n.Env.Dir, "tree-")
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	rootFD, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(rootFD)
	if err := unix.Mkdirat(rootFD, "wide", 0o700); err != nil {
		return nil, err
	}
	wideFD, err := unix.Openat(rootFD, "wide", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(wideFD)
	for i := range wide {
		if err := unix.Mknodat(wideFD, fmt.Sprintf("%064x.tmp-%d", i, i), unix.S_IFREG|0o600, 0); err != nil {
			return nil, fmt.Errorf("making the wide folder's file %d: %w", i, err)
		}
	}
	fd, err := unix.Dup(rootFD)
	if err != nil {
		return nil, err
	}
	for i := range deep {
		if err := unix.Mkdirat(fd, "d", 0o700); err != nil {
			_ = unix.Close(fd)
			return nil, fmt.Errorf("making the chain's level %d: %w", i, err)
		}
		next, err := unix.Openat(fd, "d", unix.O_RDONLY|unix.O_DIRECTORY, 0)
		_ = unix.Close(fd)
		if err != nil {
			return nil, fmt.Errorf("opening the chain's level %d: %w", i, err)
		}
		fd = next
	}
	_ = unix.Close(fd)
	return func() (driver.Driver, error) { return fs.Open(fs.Options{Root: root}) }, nil
}

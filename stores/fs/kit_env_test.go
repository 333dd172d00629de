package fs_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kvblob/kvblob/conformance/storekit"
)

// TmpfsBytes is the size of the tmpfs the kit mounts: room for the gate's
// backend round trip (16 rows of 256 KiB) many times over, small enough to
// fill in milliseconds.
const TmpfsBytes = 64 << 20

// Env is the directory drivers store under.
type Env struct {
	// Dir is the directory; each driver gets a fresh one inside it.
	Dir string
	// Tmpfs says Dir is a tmpfs of TmpfsBytes the kit mounted, so a full
	// filesystem can be staged.
	Tmpfs bool
}

// Mounts says whether Setup mounts a tmpfs: only root may. NoMount says
// why not.
func Mounts() bool { return storekit.CanMount() }

// NoMount is why a full filesystem cannot be staged without root.
const NoMount = "a full filesystem needs a tmpfs mount, which needs root"

// Setup makes the directory: a tmpfs mount in a new temporary directory when
// Mounts, a plain temporary directory otherwise. As root, a mount that fails
// is an error, never a quiet fallback.
func Setup() (*Env, error) {
	dir, err := os.MkdirTemp("", "kvblob-fs-")
	if err != nil {
		return nil, err
	}
	e := &Env{Dir: dir}
	if !Mounts() {
		return e, nil
	}
	if err := storekit.Mount(dir, TmpfsBytes); err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("fs test kit: %w", err)
	}
	e.Tmpfs = true
	return e, nil
}

// Close unmounts the tmpfs and removes the directory.
func (e *Env) Close() error {
	if e.Tmpfs {
		if err := storekit.Unmount(e.Dir); err != nil {
			return fmt.Errorf("fs test kit: %w", err)
		}
		e.Tmpfs = false
	}
	return os.RemoveAll(e.Dir)
}

// Listing returns every path under dir, relative to it, for tests that
// check no stray file was left behind.
func Listing(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, rel)
		}
		return nil
	})
	return out, err
}

// Plant writes obj at path, making its directory.
func Plant(path string, obj []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, obj, 0o644)
}

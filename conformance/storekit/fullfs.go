// This file stages a full filesystem for a store's tests: a tmpfs of a set
// size mounted on a folder (only root may mount), and a filler file that
// takes every byte of it until removed.

package storekit

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// CanMount reports whether this process may mount a tmpfs (it runs as
// root).
func CanMount() bool { return os.Geteuid() == 0 }

// Mount mounts a tmpfs of size bytes on dir.
func Mount(dir string, size int64) error {
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		return fmt.Errorf("storekit: mount -t tmpfs -o size=%d on %s: %w", size, dir, err)
	}
	return nil
}

// Unmount unmounts the tmpfs on dir.
func Unmount(dir string) error {
	if err := syscall.Unmount(dir, 0); err != nil {
		return fmt.Errorf("storekit: umount %s: %w", dir, err)
	}
	return nil
}

// FillFS writes a filler file in dir until its filesystem answers ENOSPC,
// and returns the filler's path: removing it frees the space again.
func FillFS(dir string) (string, error) {
	f, err := os.CreateTemp(dir, "filler-")
	if err != nil {
		return "", err
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for len(chunk) > 0 {
		_, err := f.Write(chunk)
		switch {
		case errors.Is(err, syscall.ENOSPC):
			chunk = chunk[:len(chunk)/2]
		case err != nil:
			return f.Name(), err
		}
	}
	return f.Name(), nil
}

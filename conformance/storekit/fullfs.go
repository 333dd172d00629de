// This file stages a full filesystem for a store's tests: a tmpfs of a set
// size mounted on a folder (only root may mount), and a filler file that
// takes every byte of it until removed.

package storekit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// CanMount reports whether this process may mount a tmpfs (it runs as
// root).
func CanMount() bool { return os.Geteuid() == 0 }

// Mount mounts a tmpfs of size bytes on dir, first sweeping the tmpfs
// mounts that dead test processes left (SweepMounts). It records this
// process as the mount's owner beside dir (dir+OwnerSuffix), since a test
// binary killed at its -timeout, or by a mutation run, runs no cleanup:
// without the record its mount would stay until the machine reboots.
func Mount(dir string, size int64) error {
	_, _ = SweepMounts() // best effort: a mount it cannot sweep is no reason not to mount
	owner, err := ownerOf(os.Getpid())
	if err != nil {
		return fmt.Errorf("storekit: recording the owner of %s: %w", dir, err)
	}
	if err := os.WriteFile(dir+OwnerSuffix, []byte(owner), 0o600); err != nil {
		return fmt.Errorf("storekit: recording the owner of %s: %w", dir, err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		_ = os.Remove(dir + OwnerSuffix)
		return fmt.Errorf("storekit: mount -t tmpfs -o size=%d on %s: %w", size, dir, err)
	}
	return nil
}

// Unmount unmounts the tmpfs on dir and removes its owner record.
func Unmount(dir string) error {
	if err := syscall.Unmount(dir, 0); err != nil {
		return fmt.Errorf("storekit: umount %s: %w", dir, err)
	}
	_ = os.Remove(dir + OwnerSuffix)
	return nil
}

// OwnerSuffix names a Mount's owner record: the file beside the mount
// point, holding the owning process's pid and start time.
const OwnerSuffix = ".storekit-owner"

// SweepMounts unmounts every tmpfs under the temporary folder whose owner
// record (Mount's) names a process that is gone, and removes its mount
// point and record; a mount with no record (not Mount's), with a live
// owner, or outside the temporary folder (where a test kit mounts
// nothing) is left alone. It returns the mount points it swept.
func SweepMounts() ([]string, error) {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	tmp := filepath.Clean(os.TempDir()) + string(filepath.Separator)
	var swept []string
	var errs []error
	for _, dir := range tmpfsMounts(string(info)) {
		if !strings.HasPrefix(dir, tmp) {
			continue
		}
		rec, err := os.ReadFile(dir + OwnerSuffix)
		if err != nil {
			continue // not Mount's
		}
		if alive(string(rec)) {
			continue
		}
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			errs = append(errs, fmt.Errorf("storekit: sweeping %s, left by a dead test process: umount: %w", dir, err))
			continue
		}
		_ = os.RemoveAll(dir)
		_ = os.Remove(dir + OwnerSuffix)
		swept = append(swept, dir)
	}
	return swept, errors.Join(errs...)
}

// tmpfsMounts returns the mount points of the tmpfs mounts a
// /proc/self/mountinfo lists (its fifth field, octal escapes undone; the
// filesystem type follows the " - " separator).
func tmpfsMounts(info string) []string {
	var dirs []string
	for _, line := range strings.Split(info, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f := strings.Fields(pre)
		if !ok || len(f) < 5 || !strings.HasPrefix(post, "tmpfs ") {
			continue
		}
		dirs = append(dirs, unescapeMountinfo(f[4]))
	}
	return dirs
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownerOf is a process's owner record: its pid and its start time (field
// 22 of /proc/<pid>/stat, in clock ticks since boot), so a pid the
// system gave to another process since does not pass for the owner.
func ownerOf(pid int) (string, error) {
	start, err := startTime(pid)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d %s\n", pid, start), nil
}

// alive reports whether the process an owner record names still runs.
func alive(rec string) bool {
	var pid int
	var start string
	if _, err := fmt.Sscan(rec, &pid, &start); err != nil {
		return true // a record it cannot read: leave the mount alone
	}
	now, err := startTime(pid)
	return err == nil && now == start
}

// startTime is field 22 of /proc/<pid>/stat: the process's start time.
// The command name (field 2) may hold spaces, so fields are counted from
// its closing parenthesis.
func startTime(pid int) (string, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(f) < 20 {
		return "", fmt.Errorf("/proc/%d/stat has no start time: %q", pid, stat)
	}
	return f[19], nil
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

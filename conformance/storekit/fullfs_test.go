package storekit

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mountOwnerEnv, set, makes the test binary a test process that mounts a
// tmpfs on the folder it names (Mount), says "mounted" and waits to be
// killed: TestMain runs mountOwner instead of the tests.
const mountOwnerEnv = "STOREKIT_TEST_MOUNT_OWNER"

func mountOwner(dir string) int {
	if err := Mount(dir, 1<<20); err != nil {
		fmt.Println(err)
		return 1
	}
	fmt.Println("mounted")
	select {} // until killed, with no cleanup: as a test binary at its -timeout
}

// mounted reports whether dir is a tmpfs mount point now.
func mounted(t *testing.T, dir string) bool {
	t.Helper()
	info, err := os.ReadFile("/proc/self/mountinfo")
	require.NoError(t, err)
	return slices.Contains(tmpfsMounts(string(info)), dir)
}

// TestATmpfsItsKilledOwnerLeftIsSwept: a test process killed with its
// tmpfs mounted (no cleanup runs) leaves an owner record, and the next
// Mount's sweep unmounts that tmpfs and removes its folder and record;
// while the owner lives, for a mount Mount did not make, and for one
// outside the temporary folder, the sweep leaves the mount alone.
func TestATmpfsItsKilledOwnerLeftIsSwept(t *testing.T) {
	if !CanMount() {
		t.Skip("mounting a tmpfs needs root")
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "owned")
	require.NoError(t, os.Mkdir(dir, 0o700))
	foreign := filepath.Join(parent, "foreign")
	require.NoError(t, os.Mkdir(foreign, 0o700))
	require.NoError(t, syscall.Mount("tmpfs", foreign, "tmpfs", 0, "size=1m"))
	t.Cleanup(func() { _ = syscall.Unmount(foreign, 0) })
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) }) // if the sweep failed

	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), mountOwnerEnv+"="+dir)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || line != "mounted\n" {
		_ = child.Process.Kill()
		_ = child.Wait()
		t.Fatalf("the owner said %q, %v; want mounted", line, err)
	}
	require.True(t, mounted(t, dir), "the owner's tmpfs is not mounted")
	require.FileExists(t, dir+OwnerSuffix, "Mount left no owner record")

	swept, err := SweepMounts()
	require.NoError(t, err)
	assert.NotContains(t, swept, dir, "a live owner's mount was swept")
	assert.True(t, mounted(t, dir), "a live owner's mount was swept")

	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	require.True(t, mounted(t, dir), "the killed owner's tmpfs went by itself: nothing to sweep")

	elsewhere := filepath.Join(parent, "elsewhere")
	require.NoError(t, os.Mkdir(elsewhere, 0o700))
	tmp := os.Getenv("TMPDIR")
	t.Setenv("TMPDIR", elsewhere)
	swept, err = SweepMounts()
	require.NoError(t, err)
	assert.Empty(t, swept, "a mount outside the temporary folder was swept")
	assert.True(t, mounted(t, dir), "a mount outside the temporary folder was swept")
	t.Setenv("TMPDIR", tmp)

	swept, err = SweepMounts()
	require.NoError(t, err)
	assert.Equal(t, []string{dir}, swept)
	assert.False(t, mounted(t, dir), "the dead owner's tmpfs is still mounted")
	assert.NoDirExists(t, dir, "its mount point is left")
	assert.NoFileExists(t, dir+OwnerSuffix, "its owner record is left")
	assert.True(t, mounted(t, foreign), "a tmpfs Mount did not make was swept")
}

// TestAnOwnerRecordPassesOnlyForItsOwnProcess: a record names a live
// process only while the pid it holds runs with the start time it holds,
// so a pid the system gave to another process does not keep a dead
// owner's mount; a record it cannot read keeps the mount.
func TestAnOwnerRecordPassesOnlyForItsOwnProcess(t *testing.T) {
	self, err := ownerOf(os.Getpid())
	require.NoError(t, err)
	for _, c := range []struct {
		rec  string
		want bool
	}{
		{self, true},
		{fmt.Sprintf("%d 1\n", os.Getpid()), false}, // this pid, another start: the pid was reused
		{"2147483646 1\n", false},                   // no such process
		{"not a record", true},
	} {
		assert.Equal(t, c.want, alive(c.rec), "%q", c.rec)
	}
}

// TestMountinfoIsReadAsTheKernelWritesIt: the mount point is the fifth
// field with its octal escapes undone, and the type is the first field
// after " - " (optional fields may come between).
func TestMountinfoIsReadAsTheKernelWritesIt(t *testing.T) {
	info := "36 35 98:0 / /mnt/a\\040b rw,noatime master:1 - tmpfs tmpfs rw\n" +
		"37 35 98:0 / /tmp/x rw shared:2 master:3 - tmpfs none rw,size=64k\n" +
		"38 35 98:0 / /data rw - ext4 /dev/vda rw\n" +
		"39 35 98:0 / /tmp/tmpfs-looking rw - ext4 tmpfs rw\n"
	assert.Equal(t, []string{"/mnt/a b", "/tmp/x"}, tmpfsMounts(info))
}

// TestMountRefusesWhenItCannotRecordItsOwner: a mount whose owner record
// cannot be written is not made (no sweep could ever find it), and the
// error says which record failed and why.
func TestMountRefusesWhenItCannotRecordItsOwner(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "no-such-folder", "mnt")
	err := Mount(dir, 1<<20)
	require.Error(t, err)
	assert.ErrorIs(t, err, os.ErrNotExist)
	assert.Contains(t, err.Error(), "recording the owner of "+dir)
}

//go:build linux

package fs_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/fs"
)

// The tests here run part of the suite on hosts the test process is not:
// as another user (the tests run as root, which may open any file with
// O_NOATIME) and under a seccomp filter that refuses openat2 as container
// runtimes do. Each re-executes this test binary as a child that runs one
// TestHostChild test, its role and inputs in the environment; the child
// test skips when run any other way.

// hostRole names the child's role in its environment; hostRoot, hostKey,
// hostSum and hostErrno are its inputs.
const (
	hostRole  = "KVBLOB_FS_HOST_ROLE"
	hostRoot  = "KVBLOB_FS_HOST_ROOT"
	hostKey   = "KVBLOB_FS_HOST_KEY"
	hostSum   = "KVBLOB_FS_HOST_SUM"
	hostErrno = "KVBLOB_FS_HOST_ERRNO"
)

// nobody is the user and group another user's child runs as.
const nobody = 65534

// child runs the test binary's test named run with env added, as cred
// (nil: as this process), and fails t unless that test ran and passed.
// The binary is copied where cred may execute it (go test's build folder
// is root's alone).
func child(t *testing.T, run string, env []string, cred *syscall.Credential) {
	t.Helper()
	bin := os.Args[0]
	if cred != nil {
		dir, err := os.MkdirTemp("", "kvblob-fs-child-") // t.TempDir's parent is root's alone
		require.NoError(t, err)
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		require.NoError(t, os.Chmod(dir, 0o755))
		src, err := os.Open(bin)
		require.NoError(t, err)
		defer src.Close()
		bin = filepath.Join(dir, "fs.test")
		dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
		require.NoError(t, err)
		_, err = io.Copy(dst, src)
		require.NoError(t, err)
		require.NoError(t, dst.Close())
	}
	cmd := exec.Command(bin, "-test.run=^"+run+"$", "-test.v", "-test.count=1", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = os.TempDir()
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "the child %s failed:\n%s", run, out)
	require.Contains(t, string(out), "--- PASS: "+run, "the child did not run %s:\n%s", run, out)
}

// childOnly skips t unless it runs as a child in role.
func childOnly(t *testing.T, role string) {
	if os.Getenv(hostRole) != role {
		t.Skip("runs only as a child of the host tests (" + role + ")")
	}
}

// TestAnotherUsersFileIsReadAsThatUser: a row root put, in a root its
// group may read, is read by a driver running as another user, for real:
// open(2) with O_NOATIME answers that user EPERM for a file it does not
// own (fs.RefuseNoatime plays this for the tests that run as root), the
// driver opens it again without, and with openat2 keeps resolving by
// openat2. Both resolvers. (Tried: dropping notOwner's retry without
// noatime fails the child with both resolvers.)
func TestAnotherUsersFileIsReadAsThatUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run a child as another user")
	}
	top, err := os.MkdirTemp("", "kvblob-fs-host-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(top) })
	require.NoError(t, os.Chmod(top, 0o755))
	root := filepath.Join(top, "root")
	require.NoError(t, os.Mkdir(root, 0o755))
	d, err := fs.Open(fs.Options{Root: root, FileMode: 0o644, DirMode: 0o755})
	require.NoError(t, err)
	f := storekit.NewFx(t, d, 5*time.Second)
	k := key(t, "a")
	row := f.Row(k, 0, 1)
	require.Equal(t, driver.Ready, f.Put(row)[0].Status)
	sum := sha256.Sum256(row.Spans[0].Bytes())
	for _, resolver := range []string{"openat2", "walk"} {
		t.Run(resolver, func(t *testing.T) {
			child(t, "TestHostChildReadsAnotherUsersFile", []string{
				hostRole + "=other-user-" + resolver, hostRoot + "=" + root, hostKey + "=" + k, hostSum + "=" + hex.EncodeToString(sum[:]),
			}, &syscall.Credential{Uid: nobody, Gid: nobody})
		})
	}
}

// TestHostChildReadsAnotherUsersFile is TestAnotherUsersFileIsReadAsThatUser's
// child, as another user.
func TestHostChildReadsAnotherUsersFile(t *testing.T) {
	role := os.Getenv(hostRole)
	resolver, ok := strings.CutPrefix(role, "other-user-")
	if !ok {
		childOnly(t, "other-user-*")
	}
	root, k := os.Getenv(hostRoot), os.Getenv(hostKey)
	d, err := fs.Open(fs.Options{Root: root})
	require.NoError(t, err)
	file, _, err := d.Paths(k)
	require.NoError(t, err)
	var st unix.Stat_t
	require.NoError(t, unix.Stat(file, &st))
	require.NotEqual(t, uint32(os.Geteuid()), st.Uid, "the child owns the file: nothing is lived")
	require.NotZero(t, os.Geteuid(), "the child runs as root")
	require.ErrorIs(t, func() error {
		fd, err := unix.Open(file, unix.O_RDONLY|unix.O_NOATIME, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}(), unix.EPERM, "this host lets the child open another user's file O_NOATIME")
	if resolver == "walk" {
		fs.ForceWalk(d)
	}
	f := storekit.NewFx(t, d, 5*time.Second)
	dst := f.Row(k, 1, storekit.Dest)
	res := f.Get(dst)[0]
	require.Equal(t, driver.Ready, res.Status, "%v", res)
	sum := sha256.Sum256(dst.Spans[0].Bytes())
	assert.Equal(t, os.Getenv(hostSum), hex.EncodeToString(sum[:]), "the row read is not the row put")
	assert.Equal(t, resolver == "walk", fs.Walks(d), "an EPERM for O_NOATIME changed how the driver resolves")
}

// TestAFilterRefusingOpenat2IsWalkedAround: under a seccomp filter that
// refuses openat2 (EPERM, as Docker's default profile on hosts whose
// runtime predates it does; ENOSYS, as a kernel before 5.6 and newer
// container runtimes answer), a driver whose first call is a get and one
// whose first call is a put succeed by walking the path one component at
// a time, and walk from then on. (Tried: dropping EPERM from openDir's
// fallback fails the EPERM child's put first, FAULT "operation not
// permitted"; dropping it from openFile's fails its get first.)
func TestAFilterRefusingOpenat2IsWalkedAround(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the filter's program is written for amd64's audit arch")
	}
	for _, errno := range []unix.Errno{unix.EPERM, unix.ENOSYS} {
		t.Run(errno.Error(), func(t *testing.T) {
			child(t, "TestHostChildUnderAFilterRefusingOpenat2", []string{
				hostRole + "=seccomp", hostErrno + "=" + strconv.Itoa(int(errno)),
			}, nil)
		})
	}
}

// TestHostChildUnderAFilterRefusingOpenat2 is
// TestAFilterRefusingOpenat2IsWalkedAround's child: it installs the filter
// on every thread of its process, and gets and puts rows under it.
func TestHostChildUnderAFilterRefusingOpenat2(t *testing.T) {
	childOnly(t, "seccomp")
	n, err := strconv.Atoi(os.Getenv(hostErrno))
	require.NoError(t, err)
	errno := unix.Errno(n)

	// A driver whose first call under the filter is a get (openFile's
	// fallback), its row put before the filter was installed; another
	// whose first call under it is a put (openDir's).
	getFirst, err := fs.Open(fs.Options{Root: t.TempDir()})
	require.NoError(t, err)
	g := storekit.NewFx(t, getFirst, 5*time.Second)
	k := key(t, "a")
	row := g.Row(k, 0, 1)
	require.Equal(t, driver.Ready, g.Put(row)[0].Status)
	require.False(t, fs.Walks(getFirst), "openat2 before the filter")

	require.NoError(t, refuseOpenat2(errno))
	_, err = unix.Openat2(unix.AT_FDCWD, ".", &unix.OpenHow{Flags: unix.O_RDONLY})
	require.ErrorIs(t, err, errno, "the filter does not refuse openat2")

	dst := g.Row(k, 1, storekit.Dest)
	res := g.Get(dst)[0]
	require.Equal(t, driver.Ready, res.Status, "a get first: %v", res)
	assert.True(t, bytes.Equal(row.Spans[0].Bytes(), dst.Spans[0].Bytes()), "the row read is not the row put")
	assert.True(t, fs.Walks(getFirst), "a get first: the driver did not fall back to walking")

	putFirst, err := fs.Open(fs.Options{Root: t.TempDir()})
	require.NoError(t, err)
	p := storekit.NewFx(t, putFirst, 5*time.Second)
	row = p.Row(k, 0, 1)
	res = p.Put(row)[0]
	require.Equal(t, driver.Ready, res.Status, "a put first: %v", res)
	dst = p.Row(k, 2, storekit.Dest)
	res = p.Get(dst)[0]
	require.Equal(t, driver.Ready, res.Status, "a put first, its get: %v", res)
	assert.True(t, bytes.Equal(row.Spans[0].Bytes(), dst.Spans[0].Bytes()), "the row read is not the row put")
	assert.True(t, fs.Walks(putFirst), "a put first: the driver did not fall back to walking")
}

// refuseOpenat2 installs, on every thread of the process, a seccomp filter
// that answers openat2 with errno and lets every other system call
// through.
func refuseOpenat2(errno unix.Errno) error {
	const (
		ldAbs = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeqK  = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		retK  = unix.BPF_RET | unix.BPF_K
	)
	prog := []unix.SockFilter{
		{Code: ldAbs, K: 4}, // seccomp_data.arch
		{Code: jeqK, Jt: 0, Jf: 3, K: unix.AUDIT_ARCH_X86_64},
		{Code: ldAbs, K: 0}, // seccomp_data.nr
		{Code: jeqK, Jt: 0, Jf: 1, K: unix.SYS_OPENAT2},
		{Code: retK, K: unix.SECCOMP_RET_ERRNO | uint32(errno)},
		{Code: retK, K: unix.SECCOMP_RET_ALLOW},
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", e)
	}
	runtime.KeepAlive(prog)
	return nil
}

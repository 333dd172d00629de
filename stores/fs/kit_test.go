package fs_test

// The store's test kit is this file and the kit_*_test.go files: a root
// directory (a small tmpfs mount where the tests run as root, so that a
// full filesystem is real), drivers over it with a fake clock and a
// driverkit.Seam keyed by the spec's call names, the scenarios a
// filesystem can stage and a stager for every case generated from
// spec/fs-posix.yaml. It lives in the store's test files because only the
// store's own tests use it; its names are exported as a kit package's
// would be, so that moving it to stores/fs/fskit, should another package
// need it, changes nothing but its package clause and its callers'
// qualifiers (docs/writing-a-store.md).

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	fsgen "github.com/kvblob/kvblob/generated/fs"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/stores/fs"
	"github.com/kvblob/kvblob/stores/trailer"
)

// Clock is a clock tests move by hand, so a marker's TTL runs out without
// waiting for it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock starts at the real time, so the mtime of a marker created now is
// the clock's present.
func NewClock() *Clock { return &Clock{now: time.Now()} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// TTL is the marker TTL of the kit's drivers.
const TTL = 30 * time.Second

// Driver is an fs driver from Factory, with its seam, clock and the
// filesystem it stores on.
type Driver struct {
	*fs.Driver
	// Seam is the driver's, keyed by spec/fs-posix.yaml's call names.
	Seam  *driverkit.Seam
	Clock *Clock
	// Full stages a full filesystem (nil when the Env has no tmpfs).
	full func() error
}

// Parts returns the kit's Driver behind d.
func Parts(d driver.Driver) *Driver { return storekit.Unwrap[*Driver](d) }

// Open opens a driver over a fresh directory inside e, removed at t's
// cleanup (after the harness's own, which runs first).
func Open(t conformance.T, e *Env) *Driver {
	root, err := os.MkdirTemp(e.Dir, "store-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	seam, c := &driverkit.Seam{}, NewClock()
	d, err := fs.Open(fs.Options{Root: root, MarkerTTL: TTL, Now: c.Now, Seam: seam})
	if err != nil {
		t.Fatal(err)
	}
	k := &Driver{Driver: d, Seam: seam, Clock: c}
	if e.Tmpfs {
		k.full = func() error { _, err := storekit.FillFS(root); return err }
	}
	return k
}

// Factory returns drivers over e, each over a directory of its own.
func Factory(e *Env) conformance.Factory {
	return func(t conformance.T) driver.Driver { return Open(t, e) }
}

// Object returns the bytes of key's object: payload and trailer.
func Object(key string, payload []byte) []byte { return trailer.Encode(key, payload) }

// PlantMarker makes key look as if another writer were publishing it now.
func (k *Driver) PlantMarker(key string) error {
	_, marker, err := k.Paths(key)
	if err != nil {
		return err
	}
	return Plant(marker, nil)
}

// PlantObject writes obj as key's object.
func (k *Driver) PlantObject(key string, obj []byte) error {
	file, _, err := k.Paths(key)
	if err != nil {
		return err
	}
	return Plant(file, obj)
}

// DirAtObject replaces key's object (if any) with a directory.
func (k *Driver) DirAtObject(key string) error {
	file, _, err := k.Paths(key)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(file); err != nil {
		return err
	}
	return os.MkdirAll(file, 0o755)
}

// LinkDirOut replaces key's directory with a symbolic link to a new
// directory outside the root (a neighbour's attack), and returns that
// directory: a driver that followed the link would write there.
func (k *Driver) LinkDirOut(key string) (string, error) {
	file, _, err := k.Paths(key)
	if err != nil {
		return "", err
	}
	out, err := os.MkdirTemp(filepath.Dir(k.Root()), "outside-")
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(file)
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	return out, os.Symlink(out, dir)
}

// LinkObjectOut puts obj in a file outside the root and a symbolic link to
// it at key's object: a driver that followed the link would read it.
func (k *Driver) LinkObjectOut(key string, obj []byte) error {
	file, _, err := k.Paths(key)
	if err != nil {
		return err
	}
	out, err := os.CreateTemp(filepath.Dir(k.Root()), "outside-")
	if err != nil {
		return err
	}
	_, err = out.Write(obj)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	_ = os.Remove(file)
	return os.Symlink(out.Name(), file)
}

// Scenarios are what a filesystem stages for real. Unprovable and HoldAccess
// are not among them: every call ends its access on return. Full fills the
// Env's tmpfs, so it is there only when the kit Mounts.
func Scenarios() conformance.Scenarios {
	s := conformance.Scenarios{
		HoldGet: func(d driver.Driver, key string) (<-chan struct{}, func()) {
			return Parts(d).Seam.Hold("open", key)
		},
		Writing: func(d driver.Driver, key string) func() {
			k := Parts(d)
			_ = k.PlantMarker(key)
			return func() {
				_, marker, _ := k.Paths(key)
				_ = os.Remove(marker)
			}
		},
		// A directory where the object goes: the rename answers EISDIR.
		// EIO raised in the write, after the claim: the next put fails
		// there, and only it (a directory left in the object's place would
		// fail every later put too, which is the staging's doing).
		FailPut: func(d driver.Driver, key string) {
			Parts(d).Seam.Raise("write", key, &os.PathError{Op: "write", Path: key, Err: syscall.EIO})
		},
		// The object replaced by a directory: the read answers EISDIR.
		FailRead: func(d driver.Driver, key string) { _ = Parts(d).DirAtObject(key) },
	}
	if Mounts() {
		s.Full = func(d driver.Driver, key string) {
			if k := Parts(d); k.full != nil {
				_ = k.full()
			}
		}
	}
	return s
}

// SkipReasons say why the kit leaves a scenario out: a full filesystem
// needs the tmpfs only root can mount.
var SkipReasons = map[conformance.Scenario]string{conformance.Full: NoMount}

// injected are the answers no filesystem gives on cue: the seam raises
// them as the errno of the call's system call, so classify still runs.
var injected = map[fsgen.Code]syscall.Errno{
	fsgen.Eio: syscall.EIO, fsgen.Enospc: syscall.ENOSPC, fsgen.Edquot: syscall.EDQUOT,
	fsgen.Estale: syscall.ESTALE, fsgen.Eacces: syscall.EACCES,
}

// Stage makes the filesystem answer case c for key. A case the spec marks
// stageable is staged for real (a marker, a planted or damaged object, a
// directory in the way, a full tmpfs) or skipped with the reason; the
// others are raised through the driver's driverkit.Seam, keyed by the
// case's call.
func Stage(h *conformance.Harness, c conformance.Case, key string) error {
	k := Parts(h.D)
	payload, done, err := storekit.PlantCase(c, key, k.PlantObject)
	if done || err != nil {
		return err
	}
	code := fsgen.Code(c.Answer.Code)
	switch {
	case code == fsgen.OK:
		return nil
	case c.Call == "claim" && code == fsgen.Eexist:
		return k.PlantMarker(key)
	case c.Call == "claim" && code == fsgen.Enotdir:
		// A file where the key's directory goes.
		file, _, err := k.Paths(key)
		if err != nil {
			return err
		}
		return Plant(filepath.Dir(file), nil)
	case c.Call == "write" && code == fsgen.Enospc:
		if k.full == nil {
			return fmt.Errorf("%s", NoMount)
		}
		return k.full()
	case c.Call == "claim" && code == fsgen.Eloop:
		_, err := k.LinkDirOut(key)
		return err
	case c.Call == "open" && code == fsgen.Eloop:
		return k.LinkObjectOut(key, Object(key, payload))
	case (c.Call == "publish" || c.Call == "open") && code == fsgen.Eisdir:
		return k.DirAtObject(key)
	case c.Call == "open" && code == fsgen.Enoent:
		file, _, _ := k.Paths(key)
		return os.Remove(file)
	case c.Call == "open" && code == fsgen.Pending:
		file, _, _ := k.Paths(key)
		if err := os.Remove(file); err != nil {
			return err
		}
		return k.PlantMarker(key)
	case c.Call == "open" && code == fsgen.Corrupt:
		// A byte more than the row's object, so no whole row's size: open
		// reads the tail and refuses it before the slot is written.
		obj := append([]byte{0}, Object(key, payload)...)
		obj[len(obj)-trailer.Size] ^= 0xff // the trailer's first byte: its magic no longer matches
		return k.PlantObject(key, obj)
	case c.Call == "read" && code == fsgen.Corrupt:
		// A whole row's size: its tail is read with the payload.
		obj := Object(key, payload)
		obj[len(obj)-trailer.Size] ^= 0xff
		return k.PlantObject(key, obj)
	case c.Call == "read" && code == fsgen.Mismatch:
		obj := Object(key, payload)
		obj[7] ^= 0xff // a payload byte: the CRC32 no longer matches
		return k.PlantObject(key, obj)
	}
	var raise error
	if errno, ok := injected[code]; ok {
		raise = &os.PathError{Op: c.Call, Path: key, Err: errno}
	}
	return conformance.SeamRaise(h, k.Seam, c, key, raise)
}

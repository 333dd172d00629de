// Package fs is kvblob's driver for a shared filesystem: objects as files
// under a root directory that many hosts mount (NFS, Lustre, CephFS, 3FS in
// production; a local directory in tests), through POSIX file I/O.
//
// spec/fs-posix.yaml holds the layout, the publish protocol (an exclusive
// marker, a temporary file fsynced and renamed over the object, the
// directory fsynced) and every errno-to-result rule: this package only
// issues the system calls and classifies their errors into the spec's codes
// (classify.go).
package fs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kvblob/kvblob/generated/fsspec"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/runtime/rules"
	"github.com/kvblob/kvblob/stores/trailer"
)

// Options configure a Driver.
type Options struct {
	// Root is the directory objects live under (it must exist).
	Root string
	// MarkerTTL is how long a writer's marker keeps other writers out and
	// makes readers answer NOT_READY; past it, a dead writer's marker is
	// taken over (default 60 s). It must exceed the slowest write of one
	// row plus the clock skew between hosts.
	MarkerTTL time.Duration
	// Now is the clock markers expire by (default time.Now).
	Now func() time.Time
	// FileMode and DirMode are the permissions of objects and the
	// directories made for them (defaults 0644 and 0755, less the umask).
	FileMode, DirMode os.FileMode
	// Seam, when set, is entered before each spec call (claim, write,
	// publish, read) on a key: a held call waits in it, a raise is answered
	// as if the call's system call had failed with that error (a
	// syscall.Errno inside it is classified), and a staged negative code is
	// the call's answer without touching the filesystem. Tests stage what a
	// real filesystem cannot do on cue through it; production leaves it nil.
	Seam *driverkit.Seam
}

// Driver is a driver.Driver over one directory tree.
type Driver struct {
	opt  Options
	life driverkit.Lifecycle
	bufs sync.Pool // *[]byte: read buffers
}

var _ driver.Driver = (*Driver)(nil)

// Open checks that the spec holds for this operating system and that root
// is a directory, and returns the driver.
func Open(opt Options) (*Driver, error) {
	if !fsspec.SupportsVersion(runtime.GOOS) {
		return nil, fmt.Errorf("fs: %s has no spec; kvblob holds specs for %v (spec/fs-*.yaml)", runtime.GOOS, fsspec.SDKVersions())
	}
	if opt.Root == "" {
		return nil, errors.New("fs: no root; set Options.Root to the shared directory")
	}
	root, err := filepath.Abs(opt.Root)
	if err != nil {
		return nil, fmt.Errorf("fs: root %q: %w", opt.Root, err)
	}
	if fi, err := os.Stat(root); err != nil {
		return nil, fmt.Errorf("fs: root: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("fs: root %q is not a directory", root)
	}
	opt.Root = root
	if opt.MarkerTTL <= 0 {
		opt.MarkerTTL = 60 * time.Second
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.FileMode == 0 {
		opt.FileMode = 0o644
	}
	if opt.DirMode == 0 {
		opt.DirMode = 0o755
	}
	return &Driver{opt: opt}, nil
}

// Root is the directory the driver stores under.
func (d *Driver) Root() string { return d.opt.Root }

// Capabilities are spec/fs-posix.yaml's.
func (d *Driver) Capabilities() driver.Capabilities { return fsspec.Capabilities() }

// Register admits a host region; files need no registration of their own.
func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	return d.life.Register(r, fsspec.AdmitRegister, nil)
}

// Unregister refuses while a call that may touch the region is in progress.
func (d *Driver) Unregister(reg driver.Registration) error { return d.life.Unregister(reg, nil) }

// Drain waits for the calls in progress. Every call ends its access on
// return, so no operation is ever unprovable.
func (d *Driver) Drain(ctx context.Context) bool { return d.life.Drain(ctx, nil) }

// Close closes the driver once a drain returned true and every region is
// unregistered; it holds no descriptor between calls.
func (d *Driver) Close() error { return d.life.Close(nil) }

// Put publishes each row: claim, write, publish, release.
func (d *Driver) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	return d.life.EachRow(ctx, rows, func(live func(*driver.Region) bool) error {
		return fsspec.AdmitPut(rows, live)
	}, func(r driver.Row) driver.Result { return d.put(r) })
}

// Get reads each row's object, checks its trailer and only then copies its
// payload into the row's span.
func (d *Driver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	return d.life.EachRow(ctx, rows, func(live func(*driver.Region) bool) error {
		return fsspec.AdmitGet(rows, hint, live)
	}, func(r driver.Row) driver.Result { return d.get(r) })
}

// paths are a key's files.
type paths struct {
	dir, file, marker string
}

// Paths returns the object file of key and the marker a writer holds
// while it publishes the object (for tests and diagnostics).
func (d *Driver) Paths(key string) (file, marker string, err error) {
	p, err := pathOf(d.opt.Root, key)
	return p.file, p.marker, err
}

// pathOf maps key to its files under root (spec/fs-posix.yaml, Layout).
func pathOf(root, key string) (paths, error) {
	i := strings.LastIndex(key, "/"+driver.KeyVersion+"/")
	if i < 0 {
		return paths{}, fmt.Errorf("key %q has no /%s/ segment", key, driver.KeyVersion)
	}
	prefix, h := key[:i], key[i+len(driver.KeyVersion)+2:]
	// KeyStem refuses an empty, "." or ".." segment: no key leaves the root.
	if _, err := driver.KeyStem(prefix); err != nil {
		return paths{}, err
	}
	segs := strings.Split(prefix, "/")
	if h == "" || strings.Trim(h, "0123456789abcdef") != "" {
		return paths{}, fmt.Errorf("key %q name is not lower-case hex", key)
	}
	digest := trailer.NameDigest(key)
	parts := append([]string{root}, segs...)
	parts = append(parts, driver.KeyVersion, hex.EncodeToString(digest[:1])+"+")
	for len(h) > maxChunk {
		parts, h = append(parts, h[:maxChunk]+"+"), h[maxChunk:]
	}
	dir := filepath.Join(parts...)
	file := filepath.Join(dir, h)
	return paths{dir: dir, file: file, marker: file + ".pending"}, nil
}

// maxChunk bounds one path component of a long hex name (NAME_MAX is 255).
const maxChunk = 200

// seam enters the seam for call on key: staged reports that it answered
// for the filesystem, with the code and the error to answer.
func (d *Driver) seam(call, key string) (code fsspec.Code, staged bool, err error) {
	p := d.opt.Seam.Enter(call, key)
	if err := p.Err(); err != nil {
		return classify(err), true, err
	}
	if c, ok := p.Answer(0); ok {
		if c >= 0 { // a size or OK would need bytes no call read or wrote
			return fsspec.Err, true, fmt.Errorf("%s: the seam staged %d; only negative codes can be staged", call, c)
		}
		return fsspec.Code(c), true, fmt.Errorf("%s: staged through the seam", call)
	}
	return fsspec.OK, false, nil
}

func (d *Driver) put(row driver.Row) driver.Result {
	p, err := pathOf(d.opt.Root, row.Key)
	if err != nil { // admission refused it already
		return driver.FaultResult(int64(fsspec.Err), "fs: %v", err)
	}
	code, mine, err := d.claim(p, row.Key)
	if m := fsspec.MapClaim(int64(code)); !m.Continue {
		return m.WithCause(err)
	}
	defer d.release(p, mine)
	tmp, code, err := d.write(p, row.Key, row.Spans[0].Bytes())
	if m := fsspec.MapWrite(int64(code)); !m.Continue {
		return m.WithCause(err)
	}
	code, err = d.publish(p, tmp, row.Key)
	return fsspec.MapPublish(int64(code)).WithCause(err)
}

func token() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// claim creates the key's marker exclusively, taking over one whose TTL has
// passed. It returns the marker it created, so release removes only its own.
func (d *Driver) claim(p paths, key string) (fsspec.Code, iofs.FileInfo, error) {
	if code, staged, err := d.seam("claim", key); staged {
		return code, nil, err
	}
	if err := os.MkdirAll(p.dir, d.opt.DirMode); err != nil {
		return classify(err), nil, err
	}
	for attempt := 0; ; attempt++ {
		f, err := os.OpenFile(p.marker, os.O_WRONLY|os.O_CREATE|os.O_EXCL, d.opt.FileMode)
		if err == nil {
			fi, serr := f.Stat()
			_ = f.Close()
			if serr != nil {
				return classify(serr), nil, serr
			}
			return fsspec.OK, fi, nil
		}
		if !errors.Is(err, iofs.ErrExist) || attempt > 0 {
			return classify(err), nil, err
		}
		old, serr := os.Lstat(p.marker)
		switch {
		case errors.Is(serr, iofs.ErrNotExist): // released meanwhile: try once more
			continue
		case serr != nil:
			return classify(serr), nil, serr
		case d.opt.Now().Before(old.ModTime().Add(d.opt.MarkerTTL)):
			return fsspec.Eexist, nil, fmt.Errorf("marker %s is live until %v", p.marker, old.ModTime().Add(d.opt.MarkerTTL))
		}
		// A dead writer's marker: move it aside, and put it back if what
		// moved was a fresh marker another writer made in between.
		aside := p.marker + ".expired-" + token()
		if err := os.Rename(p.marker, aside); err != nil {
			continue // another writer took it over first
		}
		if moved, err := os.Lstat(aside); err == nil && !os.SameFile(moved, old) {
			_ = os.Link(aside, p.marker)
			_ = os.Remove(aside)
			return fsspec.Eexist, nil, fmt.Errorf("marker %s was taken over by another writer", p.marker)
		}
		_ = os.Remove(aside)
	}
}

// release removes the marker this writer created (not one that replaced it
// after its TTL ran out). A marker it cannot remove expires.
func (d *Driver) release(p paths, mine iofs.FileInfo) {
	if fi, err := os.Lstat(p.marker); err == nil && os.SameFile(fi, mine) {
		_ = os.Remove(p.marker)
	}
}

// write writes payload and its trailer to a new temporary file beside the
// object and fsyncs it; on any failure the temporary file is removed.
func (d *Driver) write(p paths, key string, payload []byte) (string, fsspec.Code, error) {
	if code, staged, err := d.seam("write", key); staged {
		return "", code, err
	}
	tmp := p.file + ".tmp-" + token()
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, d.opt.FileMode)
	if err != nil {
		return "", classify(err), err
	}
	_, err = f.Write(payload)
	if err == nil {
		_, err = f.Write(trailer.Append(nil, key, payload))
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", classify(err), err
	}
	return tmp, fsspec.OK, nil
}

// publish renames tmp over the object and fsyncs the directory. A failed
// rename removes tmp; a failed directory fsync leaves a whole object
// behind that may not survive a crash of the file server.
func (d *Driver) publish(p paths, tmp, key string) (fsspec.Code, error) {
	if code, staged, err := d.seam("publish", key); staged {
		_ = os.Remove(tmp)
		return code, err
	}
	// rename(2) itself: os.Rename first lstats the target (one more round
	// trip on NFS) and answers EEXIST for a directory there, where the
	// kernel answers EISDIR.
	if err := syscall.Rename(tmp, p.file); err != nil {
		_ = os.Remove(tmp)
		return classify(err), &os.LinkError{Op: "rename", Old: tmp, New: p.file, Err: err}
	}
	dir, err := os.Open(p.dir)
	if err != nil {
		return classify(err), err
	}
	err = dir.Sync()
	if cerr := dir.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return classify(err), fmt.Errorf("the object is in place but its directory's fsync failed: %w", err)
	}
	return fsspec.OK, nil
}

func (d *Driver) get(row driver.Row) driver.Result {
	p, err := pathOf(d.opt.Root, row.Key)
	if err != nil { // admission refused it already
		return driver.FaultResult(int64(fsspec.Err), "fs: %v", err)
	}
	span := row.Spans[0]
	buf := d.buffer()
	defer d.bufs.Put(buf)
	payload, answer, err := d.read(p, row.Key, buf)
	m := fsspec.MapRead(answer, span.Length)
	if m.Written == rules.WrittenYes {
		copy(span.Bytes(), payload)
	}
	return m.WithCause(err)
}

func (d *Driver) buffer() *[]byte {
	if b, ok := d.bufs.Get().(*[]byte); ok {
		return b
	}
	return new([]byte)
}

// read opens the object, reads it whole with pread into *buf and checks its
// trailer. It answers the payload and its length, or a negative code.
func (d *Driver) read(p paths, key string, buf *[]byte) ([]byte, int64, error) {
	if code, staged, err := d.seam("read", key); staged {
		return nil, int64(code), err
	}
	f, err := os.OpenFile(p.file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, iofs.ErrNotExist) && d.markerLive(p) {
		return nil, int64(fsspec.Pending), fmt.Errorf("the object is absent and %s is live", p.marker)
	}
	if err != nil {
		return nil, int64(classify(err)), err
	}
	defer f.Close()
	fi, err := f.Stat()
	switch {
	case err != nil:
		return nil, int64(classify(err)), err
	case fi.IsDir():
		return nil, int64(fsspec.Eisdir), fmt.Errorf("%s is a directory", p.file)
	case !fi.Mode().IsRegular():
		return nil, int64(fsspec.Corrupt), fmt.Errorf("%s is not a regular file (%v)", p.file, fi.Mode().Type())
	case fi.Size() < trailer.Size:
		return nil, int64(fsspec.Corrupt), fmt.Errorf("%s holds %d bytes, less than a trailer", p.file, fi.Size())
	}
	if int64(cap(*buf)) < fi.Size() {
		*buf = make([]byte, fi.Size())
	}
	obj := (*buf)[:fi.Size()]
	n, err := f.ReadAt(obj, 0)
	if err != nil && !errors.Is(err, io.EOF) { // EOF: the file shrank; the trailer check refuses it
		return nil, int64(classify(err)), err
	}
	payload, err := trailer.Check(obj[:n], key)
	if err != nil {
		return nil, int64(fsspec.Corrupt), err
	}
	return payload, int64(len(payload)), nil
}

// markerLive reports whether another writer's marker for p is live.
func (d *Driver) markerLive(p paths) bool {
	fi, err := os.Lstat(p.marker)
	return err == nil && d.opt.Now().Before(fi.ModTime().Add(d.opt.MarkerTTL))
}

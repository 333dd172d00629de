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
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	fsgen "github.com/kvblob/kvblob/generated/fs"
	"github.com/kvblob/kvblob/runtime/claim"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/runtime/sweep"
	"github.com/kvblob/kvblob/stores/trailer"
)

// Options configure a Driver.
type Options struct {
	// Root is the directory objects live under (it must exist). The driver
	// follows no symbolic link under it (the root itself may be one).
	Root string
	// MarkerTTL is how long a writer's marker keeps other writers out and
	// makes readers answer NOT_READY; past it, a dead writer's marker is
	// taken over (default 60 s). It must exceed the slowest write of one
	// row plus the clock skew between hosts.
	MarkerTTL time.Duration
	// MaxClockSkew is how far ahead of this host's clock a file's mtime may
	// be and still be believed (default DefaultMaxClockSkew). A marker
	// dated further ahead (another host's clock running fast, or a planted
	// file) is expired at once, so it cannot hold its key for as long as it
	// says; a temporary file dated further ahead is swept.
	MaxClockSkew time.Duration
	// Now is the clock markers expire by (default time.Now).
	Now func() time.Time
	// FileMode and DirMode are the permissions of the files and of the
	// directories the driver makes (defaults 0600 and 0700: private to the
	// OS user the driver runs as). To share a root among OS users of one
	// group, give the root that group and the setgid bit (chgrp G root;
	// chmod 2770 root: new directories inherit both) and set FileMode 0o660
	// and DirMode 0o770|os.ModeSetgid; a mode other than the private default
	// is set exactly (chmod after create), whatever the umask.
	FileMode, DirMode os.FileMode
	// SweepBudget bounds the sweep Open runs: how many directory entries
	// it looks at (default DefaultSweepBudget; negative: no sweep at Open).
	// See Sweep.
	SweepBudget int
	// RowsInFlight is how many of a call's rows are written or read at
	// once (default DefaultRowsInFlight; 1: one after another). A put's
	// row waits on two fsyncs, a get's on a file's open and read: a shared
	// filesystem serves many such at once, so a call of many rows keeps
	// several going. The backend's workers multiply it.
	RowsInFlight int
	// Integrity, when set, tags every object the driver writes with the
	// current row key and refuses every object whose tag does not verify
	// under the current or previous key: CORRUPT, by its tail alone, for
	// one another writer stored with a valid unkeyed trailer; MISMATCH,
	// once its payload was read, for a tag that fails (see
	// trailer.Integrity).
	Integrity *trailer.Integrity
	// Seam, when set, is entered before each spec call (claim, write,
	// publish, read) on a key: a held call waits in it, a raise is answered
	// as if the call's system call had failed with that error (a
	// syscall.Errno inside it is classified), and a staged negative code is
	// the call's answer without touching the filesystem. Tests stage what a
	// real filesystem cannot do on cue through it; production leaves it nil.
	Seam *driverkit.Seam
	// Trace, when set, is told of each call that decides what a crash of
	// the file server leaves, once it succeeded and in the order made: a
	// temporary file written whole (EventWrite), the file fsynced
	// (EventSync), renamed over the object (EventRename), removed
	// (EventRemove), a directory made (EventMkdir), and a directory
	// fsynced (EventSyncDir: the key's, or a new one's parent). The
	// driver issues the fsyncs through the same helpers that report them,
	// so a fsync left out is missing from the trace too. Tests replay it
	// to model a crash; production leaves it nil.
	Trace func(Event)
}

// Event is one call Options.Trace is told of. Path (and To, for a rename)
// are relative to the root.
type Event struct {
	Op       EventOp
	Path, To string
}

// EventOp is what an Event did.
type EventOp string

// The calls Options.Trace is told of.
const (
	EventWrite   EventOp = "write"    // Path: a temporary file, written whole
	EventSync    EventOp = "fsync"    // Path: a file, fsynced
	EventRename  EventOp = "rename"   // Path renamed to To
	EventRemove  EventOp = "remove"   // Path removed
	EventSyncDir EventOp = "fsyncdir" // Path: a directory, fsynced ("." is the root)
	EventMkdir   EventOp = "mkdir"    // Path: a directory, made
)

// DefaultMaxClockSkew is Options.MaxClockSkew's default.
const DefaultMaxClockSkew = 10 * time.Second

// DefaultRowsInFlight is Options.RowsInFlight's default: a few fsyncs at
// once per call, so a 2-worker backend keeps 8 going; not tuned against a
// shared filesystem, whose round trips may want more (docs/operating.md,
// "Scale").
const DefaultRowsInFlight = 4

// DefaultSweepBudget is Options.SweepBudget's default: directory entries
// Open's sweep looks at.
const DefaultSweepBudget = 1 << 16

// Driver is a driver.Driver over one directory tree.
type Driver struct {
	opt Options
	// spec is the spec of this operating system, picked from every spec of
	// the store (generated/fs's Specs) at Open: its Calls map each answer.
	spec *fsgen.Spec
	tree *tree
	life driverkit.Lifecycle
	// fileMode and dirMode are the modes as open(2) and mkdir(2) take them;
	// exact says a file's mode is set by fchmod after create.
	fileMode, dirMode uint32
	exact             bool
	piece             int // readPiece; tests make it smaller than their rows
	// sweepMu serializes sweeps; sweepAt is where the last one stopped.
	sweepMu sync.Mutex
	sweepAt sweep.Cursor
	// markerAttempt, set only by tests (export_test.go), is called before
	// each exclusive create of a marker with the attempt's number: the one
	// place a test can plant what another writer would have made between a
	// takeover and the create that follows it.
	markerAttempt func(attempt int)
	// markerFound, set only by tests, is called when an exclusive create
	// found a marker under the name, before that marker is read: where a
	// test makes the other writer release the key in between.
	markerFound func()
}

var _ driver.Driver = (*Driver)(nil)

// SDKName is the SDK every fs spec names (sdk.name): the POSIX file calls,
// at the operating system's name (runtime.GOOS) as its version.
const SDKName = "posix"

// Open picks the spec that holds for this operating system, checks that root
// is a directory, opens it (the descriptor every path is resolved from,
// held until Close), sweeps the temporary files of dead writers within
// Options.SweepBudget, and returns the driver.
func Open(opt Options) (*Driver, error) {
	spec, err := fsgen.Pick(SDKName, runtime.GOOS)
	if err != nil {
		return nil, err
	}
	if opt.Root == "" {
		return nil, errors.New("fs: no root; set Options.Root to the shared directory")
	}
	root, err := filepath.Abs(opt.Root)
	if err != nil {
		return nil, fmt.Errorf("fs: root %q: %w", opt.Root, err)
	}
	opt.Root = root
	if opt.MarkerTTL <= 0 {
		opt.MarkerTTL = 60 * time.Second
	}
	if opt.MaxClockSkew <= 0 {
		opt.MaxClockSkew = DefaultMaxClockSkew
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.FileMode == 0 {
		opt.FileMode = 0o600
	}
	if opt.DirMode == 0 {
		opt.DirMode = 0o700
	}
	if opt.RowsInFlight <= 0 {
		opt.RowsInFlight = DefaultRowsInFlight
	}
	if opt.SweepBudget == 0 {
		opt.SweepBudget = DefaultSweepBudget
	}
	t, err := openTree(root)
	if err != nil {
		return nil, fmt.Errorf("fs: root: %w", err)
	}
	t.trace = opt.Trace
	d := &Driver{opt: opt, spec: spec, tree: t, fileMode: unixMode(opt.FileMode), dirMode: unixMode(opt.DirMode), piece: readPiece}
	d.exact = d.fileMode != 0o600
	if opt.SweepBudget > 0 {
		_, _ = d.Sweep(opt.SweepBudget) // best effort: what it cannot reach, a later sweep may
	}
	return d, nil
}

// Root is the directory the driver stores under.
func (d *Driver) Root() string { return d.opt.Root }

// Capabilities are spec/fs-posix.yaml's.
func (d *Driver) Capabilities() driver.Capabilities { return d.spec.Capabilities }

// Register admits a host region; files need no registration of their own.
func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	return d.life.Register(r, d.spec.Admission.Register, nil)
}

// Unregister refuses while a call that may touch the region is in progress.
func (d *Driver) Unregister(reg driver.Registration) error { return d.life.Unregister(reg, nil) }

// Drain waits for the calls in progress. Every call ends its access on
// return, so no operation is ever unprovable.
func (d *Driver) Drain(ctx context.Context) bool { return d.life.Drain(ctx, nil) }

// Close closes the driver, and its descriptor of the root, once every
// call ended and every region is unregistered (driverkit.Lifecycle.Close).
func (d *Driver) Close() error { return d.life.Close(d.tree.root.Close) }

// Put publishes each row: claim, write, publish, release; up to
// Options.RowsInFlight rows at once.
func (d *Driver) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	return d.life.EachRowIn(ctx, rows, d.opt.RowsInFlight, func(live func(*driver.Region) bool) error {
		return d.spec.Admission.Put(rows, live)
	}, func(r driver.Row) driver.Result { return d.put(r) })
}

// Get reads each row's object: its payload straight into the row's span,
// checked as it is read, and its trailer (with the last piece for a file
// of a whole row's size, else from the file's tail before the payload);
// READY only once every byte passed; up to Options.RowsInFlight rows at
// once.
func (d *Driver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	return d.life.EachRowIn(ctx, rows, d.opt.RowsInFlight, func(live func(*driver.Region) bool) error {
		return d.spec.Admission.Get(rows, hint, live)
	}, func(r driver.Row) driver.Result { return d.get(r) })
}

// paths are a key's files: where they are under the root (rel, the
// directory's components; name, the object's file in it). Their paths, for
// messages and tests, are made only when asked for (dir, file, marker): a
// get that succeeds names no path, and two filepath.Joins a row were a
// few percent of a 256 KiB get's CPU.
type paths struct {
	root             string
	rel              []string
	name, markerName string
}

// dir is the path of the key's directory.
func (p paths) dir() string { return filepath.Join(append([]string{p.root}, p.rel...)...) }

// file is the path of the key's object.
func (p paths) file() string { return filepath.Join(p.dir(), p.name) }

// marker is the path of the key's writer's marker.
func (p paths) marker() string { return p.file() + markerSuffix }

// Paths returns the object file of key and the marker a writer holds
// while it publishes the object (for tests and diagnostics).
func (d *Driver) Paths(key string) (file, marker string, err error) {
	p, err := pathOf(d.opt.Root, key)
	return p.file(), p.marker(), err
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
	if h == "" || strings.Trim(h, "0123456789abcdef") != "" {
		return paths{}, fmt.Errorf("key %q name is not lower-case hex", key)
	}
	digest := trailer.NameDigest(key)
	rel := append(strings.Split(prefix, "/"), driver.KeyVersion, hex.EncodeToString(digest[:1])+"+")
	for len(h) > maxChunk {
		rel, h = append(rel, h[:maxChunk]+"+"), h[maxChunk:]
	}
	return paths{root: root, rel: rel, name: h, markerName: h + markerSuffix}, nil
}

// The suffixes of a key's other files: its writer's marker, a write in
// progress, and a dead writer's marker moved aside to be removed.
const (
	markerSuffix = ".pending"
	tempInfix    = ".tmp-"
	asideInfix   = ".expired-"
)

// maxChunk bounds one path component of a long hex name (NAME_MAX is 255).
const maxChunk = 200

// seam enters the seam for call on key (driverkit.Stage): staged reports
// that a test answered for the store, with the code and the error to answer.
func (d *Driver) seam(call, key string) (code fsgen.Code, staged bool, err error) {
	return driverkit.Stage(d.opt.Seam, call, key, classify)
}

func (d *Driver) put(row driver.Row) driver.Result {
	p, err := pathOf(d.opt.Root, row.Key)
	if err != nil { // admission refused it already
		return driver.FaultResult(int64(fsgen.Err), "fs: %v", err)
	}
	dir, code, mine, err := d.claim(p, row.Key)
	if m := d.spec.Calls.Claim.Map(int64(code)); !m.Continue {
		return m.WithCause(err)
	}
	defer unix.Close(dir)
	defer d.release(dir, p, mine)
	tmp, code, err := d.write(dir, p, row.Key, row.Spans[0].Bytes())
	if m := d.spec.Calls.Write.Map(int64(code)); !m.Continue {
		return m.WithCause(err)
	}
	code, err = d.publish(dir, p, tmp, row.Key)
	return d.spec.Calls.Publish.Map(int64(code)).WithCause(err)
}

// claim opens the key's directory beneath the root (making it), then
// creates the key's marker exclusively, holding a new claim.Token, taking
// over one whose TTL has passed. It returns the directory (to close once
// the put is done) and the token it wrote, so release removes only its own
// marker.
func (d *Driver) claim(p paths, key string) (int, fsgen.Code, claim.Token, error) {
	if code, staged, err := d.seam("claim", key); staged {
		return -1, code, claim.Token{}, err
	}
	dir, err := d.tree.openDir(p.rel, true, d.dirMode)
	if err != nil {
		return -1, classify(err), claim.Token{}, err
	}
	mine := claim.New()
	code, err := d.createMarker(dir, p, mine)
	if code != fsgen.OK {
		_ = unix.Close(dir)
		return -1, code, claim.Token{}, err
	}
	return dir, fsgen.OK, mine, nil
}

// createMarker makes the key's marker holding mine, or takes a dead
// writer's over once (the claim package's rules): it reads the old
// marker's token and judges it by its mtime, moves it aside, reads what it
// moved, and removes it only when that is the marker it judged dead (the
// same token, still dead). A fresh marker another writer made in between
// holds another token, whatever inode number the filesystem reused for
// it: it goes back under its name (or, when yet another marker holds the
// name by then, stays aside for the sweep), and the put is NOT_READY.
func (d *Driver) createMarker(dir int, p paths, mine claim.Token) (fsgen.Code, error) {
	for attempt := 0; ; attempt++ {
		if d.markerAttempt != nil {
			d.markerAttempt(attempt)
		}
		fd, err := d.create(dir, p.markerName)
		if err == nil {
			var buf [claim.TextLen]byte
			err = writeFull(fd, mine.AppendText(buf[:0]))
			_ = unix.Close(fd)
			if err != nil {
				_ = unix.Unlinkat(dir, p.markerName, 0)
				return classify(err), &os.PathError{Op: "write", Path: p.marker(), Err: err}
			}
			return fsgen.OK, nil
		}
		if !errors.Is(err, unix.EEXIST) || attempt > 0 {
			return classify(err), &os.PathError{Op: "create", Path: p.marker(), Err: err}
		}
		if d.markerFound != nil {
			d.markerFound()
		}
		old, err := d.seeMarker(dir, p.markerName, true)
		switch {
		case errors.Is(err, unix.ENOENT): // released meanwhile: try once more
			continue
		case errors.Is(err, unix.ELOOP):
			return fsgen.Eloop, fmt.Errorf("%s is a symbolic link, not a marker; the driver follows none under its root: %w", p.marker(), err)
		case err != nil:
			return classify(err), &os.PathError{Op: "open", Path: p.marker(), Err: err}
		case !old.Dead:
			return fsgen.Eexist, fmt.Errorf("marker %s is another writer's, live until its TTL (%v) has passed", p.marker(), d.opt.MarkerTTL)
		}
		// A dead writer's marker: move it aside, and put it back if what
		// moved is not the marker judged dead.
		aside := p.markerName + asideInfix + token()
		if err := unix.Renameat(dir, p.markerName, dir, aside); err != nil {
			continue // another writer took it over first
		}
		if moved, err := d.seeMarker(dir, aside, true); err != nil || !claim.Judged(old).Is(moved) {
			if unix.Linkat(dir, aside, dir, p.markerName, 0) == nil {
				_ = unix.Unlinkat(dir, aside, 0)
			} // else another marker holds the name: this one stays aside, for the sweep
			return fsgen.Eexist, fmt.Errorf("marker %s was taken over by another writer", p.marker())
		}
		_ = unix.Unlinkat(dir, aside, 0)
	}
}

// create makes name in dir exclusively (O_EXCL: never through a link), with
// the driver's file mode, set exactly when it is not the private default.
func (d *Driver) create(dir int, name string) (int, error) {
	if e, _ := fault("openat", name); e != 0 {
		return -1, e
	}
	fd, err := unix.Openat(dir, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, d.fileMode)
	if err == nil && d.exact {
		if err = unix.Fchmod(fd, d.fileMode); err != nil {
			_ = unix.Close(fd)
			_ = unix.Unlinkat(dir, name, 0)
		}
	}
	return fd, err
}

// writeFull writes b to fd whole.
func writeFull(fd int, b []byte) error {
	for len(b) > 0 {
		n, err := unix.Write(fd, b)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		}
		b = b[n:]
	}
	return nil
}

// seeMarker reads the marker name in dir: its token (zero when it holds
// none) and, with judge, whether it is dead by its mtime, judged once the
// marker is closed. A link there is ELOOP, a FIFO cannot block it
// (O_NONBLOCK), and anything but a regular file is no marker (an error
// naming it).
func (d *Driver) seeMarker(dir int, name string, judge bool) (claim.Seen, error) {
	tok, mtime, err := readMarker(dir, name)
	if err != nil {
		return claim.Seen{}, err
	}
	return claim.Seen{Token: tok, Dead: judge && d.expired(mtime, d.opt.Now())}, nil
}

// readMarker is seeMarker's read: the marker's token and mtime.
func readMarker(dir int, name string) (claim.Token, time.Time, error) {
	fd, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return claim.Token{}, time.Time{}, err
	}
	defer unix.Close(fd)
	st, err := fstat(fd)
	if err != nil {
		return claim.Token{}, time.Time{}, err
	}
	if !st.regular() {
		return claim.Token{}, time.Time{}, fmt.Errorf("not a regular file, so not a marker (mode %o)", st.mode)
	}
	var buf [claim.TextLen + 1]byte // one byte more: a longer file is no token
	n, err := preadFull(fd, buf[:], 0)
	return claim.Parse(buf[:n]), st.mtime, err
}

// expired reports whether a file of mtime, a marker, is past its TTL by
// now; one dated more than MaxClockSkew ahead of now is expired at once
// (no sane clock wrote it, and believed it would hold its key for as long
// as it says).
func (d *Driver) expired(mtime, now time.Time) bool {
	return mtime.After(now.Add(d.opt.MaxClockSkew)) || !now.Before(mtime.Add(d.opt.MarkerTTL))
}

func token() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// write writes payload and its trailer to a new temporary file beside the
// object and fsyncs it; on any failure the temporary file is removed.
func (d *Driver) write(dir int, p paths, key string, payload []byte) (string, fsgen.Code, error) {
	if code, staged, err := d.seam("write", key); staged {
		return "", code, err
	}
	tmp := p.name + tempInfix + token()
	fd, err := d.create(dir, tmp)
	if err != nil {
		return "", classify(err), &os.PathError{Op: "create", Path: filepath.Join(p.dir(), tmp), Err: err}
	}
	f := os.NewFile(uintptr(fd), filepath.Join(p.dir(), tmp))
	err = writeAll(fd, tmp, payload)
	if err == nil {
		err = writeAll(fd, tmp, d.opt.Integrity.Append(nil, key, payload))
	}
	if err == nil {
		d.trace(EventWrite, p, tmp, "")
		err = d.fsync(fd, EventSync, p, tmp)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		d.remove(dir, p, tmp)
		return "", classify(err), err
	}
	return tmp, fsgen.OK, nil
}

// fsync fsyncs fd, p's file name (or p's directory, for EventSyncDir), and
// tells Options.Trace once it succeeded.
func (d *Driver) fsync(fd int, op EventOp, p paths, name string) error {
	if e, _ := fault("fsync", name); e != 0 {
		return e
	}
	err := unix.Fsync(fd)
	if err == nil {
		d.trace(op, p, name, "")
	}
	return err
}

// remove unlinks name in p's directory (dir), best effort, and tells
// Options.Trace once it is gone.
func (d *Driver) remove(dir int, p paths, name string) {
	if unix.Unlinkat(dir, name, 0) == nil {
		d.trace(EventRemove, p, name, "")
	}
}

// trace tells Options.Trace of op on name (and to) in p's directory; name
// "" is the directory itself.
func (d *Driver) trace(op EventOp, p paths, name, to string) {
	if d.opt.Trace == nil {
		return
	}
	rel := filepath.Join(p.rel...)
	e := Event{Op: op, Path: filepath.Join(rel, name)}
	if to != "" {
		e.To = filepath.Join(rel, to)
	}
	d.opt.Trace(e)
}

// publish renames tmp over the object and fsyncs the directory. A failed
// rename removes tmp; a failed directory fsync leaves a whole object
// behind that may not survive a crash of the file server.
func (d *Driver) publish(dir int, p paths, tmp, key string) (fsgen.Code, error) {
	if code, staged, err := d.seam("publish", key); staged {
		d.remove(dir, p, tmp)
		return code, err
	}
	// renameat(2) replaces whatever is at the object's name, a link
	// included, and follows none.
	var err error
	if e, _ := fault("renameat", p.name); e != 0 {
		err = e
	} else {
		err = unix.Renameat(dir, tmp, dir, p.name)
	}
	if err != nil {
		d.remove(dir, p, tmp)
		return classify(err), &os.LinkError{Op: "rename", Old: filepath.Join(p.dir(), tmp), New: p.file(), Err: err}
	}
	d.trace(EventRename, p, tmp, p.name)
	if err := d.fsync(dir, EventSyncDir, p, ""); err != nil {
		return classify(err), fmt.Errorf("the object is in place but the fsync of %s failed: %w", p.dir(), err)
	}
	return fsgen.OK, nil
}

// release removes the marker while it holds this writer's token (not one
// that replaced it after its TTL ran out, whatever inode it has). A marker
// it cannot remove expires.
func (d *Driver) release(dir int, p paths, mine claim.Token) {
	if seen, err := d.seeMarker(dir, p.markerName, false); err == nil && seen.Token == mine {
		_ = unix.Unlinkat(dir, p.markerName, 0)
	}
}

func (d *Driver) get(row driver.Row) driver.Result {
	p, err := pathOf(d.opt.Root, row.Key)
	if err != nil { // admission refused it already
		return driver.FaultResult(int64(fsgen.Err), "fs: %v", err)
	}
	span := row.Spans[0]
	fd, o, answer, err := d.open(p, row.Key, span.Length)
	if m := d.spec.Calls.Open.Map(answer, span.Length); !m.Continue {
		return m.WithCause(err)
	}
	defer unix.Close(fd)
	answer, err = d.read(fd, p, row.Key, o, span.Bytes())
	return d.spec.Calls.Read.Map(answer, span.Length).WithCause(err)
}

// opened is what open learnt of an object for read: its size, and either
// its checked trailer (checked) or, for a file exactly a whole row's size,
// nothing yet: read reads its tail with the payload's last piece.
type opened struct {
	size    int64
	checked bool
	h       trailer.Head
}

// open opens the object beneath the root (tree.openFile: one openat2 of
// the whole path where the kernel has it) and checks by fstat that it is a
// regular file no longer than a row of rowBytes with its tag and trailer.
// A file of exactly a whole row's size (the row's bytes and the overhead
// of what this driver writes: the only size the row's object has) is read
// no further: open answers the row's length, and read reads the payload
// and the tail together and checks the trailer there, saving a call. A
// file of any other size cannot be the row: open reads its tail and checks
// the trailer there (trailer.ReadHead), so a file of another length, or
// none, is refused by its tail and length alone, before a byte reaches the
// caller's memory. It answers the open file (to close once read) and the
// payload's length, or a negative code with the file closed.
func (d *Driver) open(p paths, key string, rowBytes int64) (int, opened, int64, error) {
	if code, staged, err := d.seam("open", key); staged {
		return -1, opened{}, int64(code), err
	}
	fd, err := d.tree.openFile(p.rel, p.name, unix.O_RDONLY|unix.O_NONBLOCK|noatime)
	switch {
	case errors.Is(err, unix.ENOENT) && d.markerLive(p):
		return -1, opened{}, int64(fsgen.Pending), fmt.Errorf("the object is absent and %s is live", p.marker())
	case errors.Is(err, unix.ELOOP):
		return -1, opened{}, int64(fsgen.Eloop), fmt.Errorf("a symbolic link sits on the path of %s under the root; the driver follows none: %w", p.file(), err)
	case err != nil:
		return -1, opened{}, int64(classify(err)), &os.PathError{Op: "open", Path: p.file(), Err: err}
	}
	o, code, err := d.head(fd, p, key, rowBytes)
	switch {
	case code != fsgen.OK:
		_ = unix.Close(fd)
		return -1, opened{}, int64(code), err
	case !o.checked:
		return fd, o, rowBytes, nil
	}
	return fd, o, o.h.Len, nil
}

// markerLive reports whether another writer's marker for p is live: a
// regular file (a link there is no marker) whose TTL has not passed. Only
// a get that found no object asks, so only a miss pays for opening the
// key's directory.
func (d *Driver) markerLive(p paths) bool {
	dir, err := d.tree.openDir(p.rel, false, 0)
	if err != nil {
		return false
	}
	defer unix.Close(dir)
	st, err := lstatAt(dir, p.markerName)
	return err == nil && st.regular() && !d.expired(st.mtime, d.opt.Now())
}

// head is open's checks of the open file fd: its type and size, then, for
// a file not of a whole row's size, its tail.
func (d *Driver) head(fd int, p paths, key string, rowBytes int64) (opened, fsgen.Code, error) {
	st, err := fstat(fd)
	limit := rowBytes + trailer.TailSize
	switch {
	case err != nil:
		return opened{}, classify(err), &os.PathError{Op: "fstat", Path: p.file(), Err: err}
	case st.mode == unix.S_IFDIR:
		return opened{}, fsgen.Eisdir, fmt.Errorf("%s is a directory", p.file())
	case !st.regular():
		return opened{}, fsgen.Corrupt, fmt.Errorf("%s is not a regular file (mode %o)", p.file(), st.mode)
	case st.size < trailer.Size:
		return opened{}, fsgen.Corrupt, fmt.Errorf("%s holds %d bytes, less than a trailer", p.file(), st.size)
	case st.size > limit:
		return opened{}, fsgen.Corrupt, fmt.Errorf("%s holds %d bytes, more than the row's %d with its tag and trailer; not read", p.file(), st.size, rowBytes)
	case rowBytes > 0 && st.size == rowBytes+d.opt.Integrity.Overhead():
		return opened{size: st.size}, fsgen.OK, nil
	}
	var buf [trailer.TailSize]byte
	tail := buf[:min(st.size, trailer.TailSize)]
	n, err := preadFull(fd, tail, st.size-int64(len(tail)))
	if err != nil {
		return opened{}, classify(err), &os.PathError{Op: "pread", Path: p.file(), Err: err}
	}
	if n < len(tail) {
		return opened{}, fsgen.Corrupt, fmt.Errorf("%s ended %d bytes into its %d-byte tail: it shrank while opened", p.file(), n, len(tail))
	}
	h, err := d.opt.Integrity.ReadHead(tail, st.size, key)
	if err != nil {
		return opened{}, fsgen.Corrupt, fmt.Errorf("%s: %w", p.file(), err)
	}
	return opened{size: st.size, checked: true, h: h}, fsgen.OK, nil
}

// readPiece is how much of a payload read preads at a time before it
// checks what it read: small enough that the piece is still in cache
// (L2) when the CRC32 reads it, so the check makes no pass over memory of
// its own; large enough that a call per piece costs little.
const readPiece = 256 << 10

// read preads the payload straight into dst (the row's slot, as long as
// the payload: open checked) a readPiece at a time, feeding each piece to
// the trailer's check while it is in cache, and answers the bytes read
// once the check passed: MISMATCH when the bytes fail it, or fewer bytes
// (short) when the file ended early. For a file open did not read the
// tail of (o.checked false: a whole row's size), the last piece is read
// with the tail in one preadv and the trailer checked there before the
// payload's check: CORRUPT when it is no trailer of this key's row. Every
// answer but the whole one leaves dst holding bytes that are not the row.
func (d *Driver) read(fd int, p paths, key string, o opened, dst []byte) (int64, error) {
	if code, staged, err := d.seam("read", key); staged {
		return int64(code), err
	}
	// win is the object's last min(size, TailSize) bytes, as ReadHead
	// takes them: the payload's end (copied from dst once read) and tail,
	// what follows the payload, still to read (none once open checked it).
	var buf [trailer.TailSize]byte
	var win, tail []byte
	if !o.checked {
		win = buf[:min(o.size, trailer.TailSize)]
		tail = win[len(win)-int(o.size-int64(len(dst))):]
	}
	v := d.opt.Integrity.Verifier(o.h)
	for off := 0; off < len(dst); {
		piece := dst[off:min(off+d.piece, len(dst))]
		var n int
		var err error
		if last := off+len(piece) == len(dst); last && tail != nil {
			var t int
			n, t, err = preadvFull(fd, piece, tail, int64(off))
			if err == nil && n == len(piece) && t < len(tail) {
				return int64(fsgen.Corrupt), fmt.Errorf("%s ended %d bytes into its %d-byte tail: it shrank while read", p.file(), t, len(tail))
			}
		} else {
			n, err = preadFull(fd, piece, int64(off))
		}
		v.Write(piece[:n])
		off += n
		switch {
		case err != nil:
			return int64(classify(err)), &os.PathError{Op: "pread", Path: p.file(), Err: err}
		case n < len(piece):
			return int64(off), fmt.Errorf("%s ended %d bytes into a payload of %d", p.file(), off, len(dst))
		}
	}
	if tail != nil {
		copy(win, dst[len(dst)-(len(win)-len(tail)):])
		h, err := d.opt.Integrity.ReadHead(win, o.size, key)
		switch {
		case err != nil:
			return int64(fsgen.Corrupt), fmt.Errorf("%s: %w", p.file(), err)
		case h.Len != int64(len(dst)):
			// A keyed object read with integrity off: its tag takes room
			// the row's payload would.
			return int64(fsgen.Corrupt), fmt.Errorf("%s: a payload of %d bytes, not the row's %d", p.file(), h.Len, len(dst))
		}
		v.Against(h)
	}
	if err := v.Check(dst); err != nil {
		return int64(fsgen.Mismatch), fmt.Errorf("%s: %w", p.file(), err)
	}
	return int64(len(dst)), nil
}

// preadvFull reads piece and then tail, which follows it in the file,
// from fd at off: in one preadv(2) when it answers them whole (a regular
// file's read is short only at its end), else the rest of each with
// preadFull. It answers how much of each it filled.
func preadvFull(fd int, piece, tail []byte, off int64) (n, t int, err error) {
	m, err := preadv(fd, piece, tail, off)
	for errors.Is(err, unix.EINTR) {
		m, err = preadv(fd, piece, tail, off)
	}
	if err != nil {
		return 0, 0, err
	}
	n, t = min(m, len(piece)), max(0, m-len(piece))
	if n < len(piece) && m > 0 {
		var k int
		k, err = preadFull(fd, piece[n:], off+int64(n))
		n += k
	}
	if err == nil && n == len(piece) && t < len(tail) && m > 0 {
		var k int
		k, err = preadFull(fd, tail[t:], off+int64(n+t))
		t += k
	}
	return n, t, err
}

// preadFull reads b from fd at offset off until b is full or the file
// ends.
func preadFull(fd int, b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		m, err := pread(fd, b[n:], off+int64(n))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return n, err
		case m == 0:
			return n, nil
		}
		n += m
	}
	return n, nil
}

// The system calls a put or a get makes on a row's files, and what the
// driver reads of a file (fileStat). Each call a test can fail on cue asks
// sysFault first.

// sysFault, set by tests only (export_test.go's SetSysFault), is asked
// before each system call a put or a get makes on a row's files: call
// names the system call (openat2, openat, mkdirat, fstat, write, fsync,
// renameat, pread, preadv), name the file it acts on (its last component;
// "" for a call on a descriptor). It answers an errno the call then fails
// with instead of running (0: it runs), and for a read or write at most
// how many bytes it may move (0: all; a negative limit: none, the end of
// the file for a read). A nil sysFault, production's, costs one check.
var sysFault func(call, name string) (unix.Errno, int)

// fault is sysFault's answer for call on name.
func fault(call, name string) (unix.Errno, int) {
	if sysFault == nil {
		return 0, 0
	}
	return sysFault(call, name)
}

// limitTo is b cut to limit (0: whole; negative: empty).
func limitTo(b []byte, limit int) []byte {
	switch {
	case limit < 0:
		return b[:0]
	case limit > 0 && limit < len(b):
		return b[:limit]
	}
	return b
}

// writeAll writes b to fd, going on after a short write and an EINTR as
// write(2) asks of its caller (os.File.Write does the same).
func writeAll(fd int, name string, b []byte) error {
	for len(b) > 0 {
		e, limit := fault("write", name)
		if e != 0 {
			if e == unix.EINTR {
				continue
			}
			return e
		}
		n, err := unix.Write(fd, limitTo(b, limit))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return err
		case n == 0:
			return unix.EIO // write(2) never answers 0 for a regular file with bytes to write
		}
		b = b[n:]
	}
	return nil
}

// pread is pread(2), through sysFault.
func pread(fd int, b []byte, off int64) (int, error) {
	e, limit := fault("pread", "")
	if e != 0 {
		return 0, e
	}
	return unix.Pread(fd, limitTo(b, limit), off)
}

// preadv is preadv(2) of piece then tail, through sysFault (a limit cuts
// piece; tail is then not read).
func preadv(fd int, piece, tail []byte, off int64) (int, error) {
	e, limit := fault("preadv", "")
	switch {
	case e != 0:
		return 0, e
	case limit != 0:
		return unix.Pread(fd, limitTo(piece, limit), off)
	}
	return unix.Preadv(fd, [][]byte{piece, tail}, off)
}

// fileStat is what the driver reads of a file: its type, size and mtime,
// without following a link. Not its device and inode: a filesystem may
// give a freed inode's number to the next file at once, so they identify
// nothing over time (a marker is identified by its claim.Token).
type fileStat struct {
	mode  uint32 // S_IFMT bits
	size  int64
	mtime time.Time
}

// statOf is st as the driver reads it.
func statOf(st *unix.Stat_t) fileStat {
	return fileStat{
		mode: uint32(st.Mode) & unix.S_IFMT, size: st.Size,
		mtime: time.Unix(st.Mtim.Unix()),
	}
}

// lstatAt is fstatat(dir, name, AT_SYMLINK_NOFOLLOW).
func lstatAt(dir int, name string) (fileStat, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileStat{}, err
	}
	return statOf(&st), nil
}

// fstat is fstat(2), through sysFault.
func fstat(fd int) (fileStat, error) {
	if e, _ := fault("fstat", ""); e != 0 {
		return fileStat{}, e
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fileStat{}, err
	}
	return statOf(&st), nil
}

// regular reports a regular file: not a directory, a link, a FIFO or a
// device.
func (s fileStat) regular() bool { return s.mode == unix.S_IFREG }

package fs_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/kvblob/kvblob/internal/witness"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/fs"
)

// The witnesses of spec/fs-posix.yaml: the real driver on a real
// directory, each system call a put or a get makes for a row failed in
// turn (ENOSPC, EDQUOT, EIO, EINTR, a short transfer, a read that finds
// the end), and a few planted states, each run checked against the rule
// it reaches (internal/witness).

const (
	fwRowBytes = 96 << 10
	fwCanary   = 0xEE
)

type fsw struct {
	d      *fs.Driver
	root   string
	region *hostmem.Mapping
	reg    driver.Registration
	n      int
}

func newFsw(t *testing.T) *fsw {
	t.Helper()
	f := &fsw{root: t.TempDir()}
	var err error
	f.d, err = fs.Open(fs.Options{Root: f.root, SweepBudget: -1})
	require.NoError(t, err)
	// Two pieces a row, so a read makes a pread and a preadv.
	fs.SetReadPiece(f.d, fwRowBytes/2)
	f.region, err = hostmem.Map("fsw", driver.Layout{SlotBytes: fwRowBytes, Slots: 2})
	require.NoError(t, err)
	f.reg, err = f.d.Register(f.region.Region)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.True(t, f.d.Drain(t.Context()))
		assert.NoError(t, f.d.Unregister(f.reg))
		assert.NoError(t, f.d.Close())
		assert.NoError(t, f.region.Close())
	})
	src := f.region.Slot(0).Bytes()
	for i := range src {
		src[i] = byte(i*29) ^ 0x5A
	}
	return f
}

func (f *fsw) row(slot int) driver.Row {
	f.n++
	stem, err := driver.KeyStem("fsw")
	if err != nil {
		panic(err)
	}
	key, err := stem.Key([]byte{byte(f.n)})
	if err != nil {
		panic(err)
	}
	return driver.Row{Key: key, Spans: []driver.Span{f.region.Slot(slot)}}
}

func at(r driver.Row, slot int, s *hostmem.Mapping) driver.Row {
	return driver.Row{Key: r.Key, Spans: []driver.Span{s.Slot(slot)}}
}

// sysCall is one system call a run made.
type sysCall struct{ call, name string }

// inject fails the k-th system call (from 0) with errno e or a limit;
// calls records every call made.
type inject struct {
	k     int
	e     unix.Errno
	limit int
	calls []sysCall
}

func (in *inject) hook(call, name string) (unix.Errno, int) {
	in.calls = append(in.calls, sysCall{call, name})
	if len(in.calls)-1 == in.k {
		return in.e, in.limit
	}
	return 0, 0
}

func (f *fsw) put(t *testing.T, row driver.Row, in *inject) witness.Observed {
	t.Helper()
	before := bytes.Clone(row.Spans[0].Bytes())
	if in != nil {
		defer fs.SetSysFault(in.hook)()
	}
	op, err := f.d.Put(t.Context(), []driver.Row{row})
	require.NoError(t, err)
	res, done := op.Poll()
	require.True(t, done)
	return witness.Observed{Result: res[0], AccessEnded: op.AccessEnded(), SourceWritten: !bytes.Equal(before, row.Spans[0].Bytes())}
}

func (f *fsw) get(t *testing.T, row driver.Row, in *inject) witness.Observed {
	t.Helper()
	dst := row.Spans[0].Bytes()
	for i := range dst {
		dst[i] = fwCanary
	}
	if in != nil {
		defer fs.SetSysFault(in.hook)()
	}
	op, err := f.d.Get(t.Context(), []driver.Row{row}, driver.Hint{})
	require.NoError(t, err)
	res, done := op.Poll()
	require.True(t, done)
	o := witness.Observed{Result: res[0], AccessEnded: op.AccessEnded(),
		Written: bytes.Count(dst, []byte{fwCanary}) != len(dst), Whole: bytes.Equal(dst, f.region.Slot(0).Bytes())}
	// No call of the driver's goes on after its return (no async I/O):
	// the slot is the same once every descriptor is closed.
	after := bytes.Clone(dst)
	assert.True(t, f.d.Drain(t.Context()))
	o.LateWritten = !bytes.Equal(after, dst)
	return o
}

// putStep is the spec call of a put that the i-th of calls belongs to:
// claim up to the marker's create, write from the temporary file's create
// to its fsync, publish from the rename to the directory's fsync, and
// release after it (the marker read back before it is removed).
func putStep(calls []sysCall, i int) string {
	step := "claim"
	for _, c := range calls[:i+1] {
		switch {
		case step == "publish" && c.call == "fsync" && c.name == "":
			step = "publish-end"
		case step == "publish-end":
			step = "release"
		case c.call == "openat" && strings.Contains(c.name, ".tmp-"):
			step = "write"
		case c.call == "renameat":
			step = "publish"
		}
	}
	if step == "publish-end" {
		return "publish"
	}
	return step
}

// getStep: open up to the fstat (and a tail's pread before any preadv),
// read from the first read of the payload.
func getStep(calls []sysCall, i int) string {
	for _, c := range calls[:i+1] {
		if c.call == "preadv" || c.call == "pread" {
			return "read"
		}
	}
	return "open"
}

// errnoFaults are the errors each call is failed with, by code name.
var errnoFaults = []struct {
	name string
	e    unix.Errno
}{{"ENOSPC", unix.ENOSPC}, {"EDQUOT", unix.EDQUOT}, {"EIO", unix.EIO}, {"EINTR", unix.EINTR}}

// ruleFor is the rule of step a fault reaches: the step's rule for the
// code when it lists one, else otherwise. An EINTR or a short transfer is
// no failure (the caller goes on, as POSIX asks): the operation's success
// rule. A read that meets the file's end reaches read's short rule.
func ruleFor(specs []string, step, code string, listed func(step, code string) bool) string {
	if listed(step, code) {
		return step + "." + code
	}
	return step + ".otherwise"
}

func TestWitness(t *testing.T) {
	specs, err := witness.Specs()
	require.NoError(t, err)
	const stem = "fs-posix"
	listed := func(step, code string) bool {
		_, err := witness.Find(specs, stem, step+"."+code)
		return err == nil
	}
	type run struct {
		rule, how string
		obs       func(t *testing.T) witness.Observed
	}
	var runs []run
	// Record each operation's calls once, fault-free.
	f := newFsw(t)
	rec := &inject{k: -1}
	row := f.row(0)
	require.Equal(t, driver.Ready, f.put(t, row, rec).Result.Status)
	putCalls := rec.calls
	rec = &inject{k: -1}
	require.Equal(t, driver.Ready, f.get(t, at(row, 1, f.region), rec).Result.Status)
	getCalls := rec.calls
	t.Logf("a put makes %v; a get %v", putCalls, getCalls)

	for i, c := range putCalls {
		step := putStep(putCalls, i)
		for _, ef := range errnoFaults {
			rule := ruleFor(nil, step, ef.name, listed)
			if step == "release" {
				// A cleanup: whatever it meets, the row is published.
				rule = "publish.OK"
			}
			if ef.e == unix.EINTR {
				if c.call != "write" && c.call != "openat2" {
					continue // a call that never answers EINTR
				}
				rule = "publish.OK"
			}
			in := &inject{k: i, e: ef.e}
			runs = append(runs, run{rule, fmt.Sprintf("%s %d (%s %s) fails %s", step, i, c.call, c.name, ef.name), func(t *testing.T) witness.Observed {
				f := newFsw(t)
				return f.put(t, f.row(0), in)
			}})
		}
		if c.call == "write" {
			in := &inject{k: i, limit: 1}
			runs = append(runs, run{"publish.OK", fmt.Sprintf("write %d writes one byte", i), func(t *testing.T) witness.Observed {
				f := newFsw(t)
				return f.put(t, f.row(0), in)
			}})
		}
	}
	for i, c := range getCalls {
		step := getStep(getCalls, i)
		for _, ef := range errnoFaults {
			rule := ruleFor(nil, step, ef.name, listed)
			if ef.e == unix.EINTR {
				if c.call != "pread" && c.call != "preadv" && c.call != "openat2" {
					continue
				}
				rule = "read.whole"
			}
			in := &inject{k: i, e: ef.e}
			runs = append(runs, run{rule, fmt.Sprintf("%s %d (%s) fails %s", step, i, c.call, ef.name), func(t *testing.T) witness.Observed {
				f := newFsw(t)
				src := f.row(0)
				require.Equal(t, driver.Ready, f.put(t, src, nil).Result.Status)
				return f.get(t, at(src, 1, f.region), in)
			}})
		}
		if c.call == "pread" || c.call == "preadv" {
			for _, lim := range []struct {
				rule, how string
				limit     int
			}{{"read.whole", "reads one byte", 1}, {"read.short", "finds the file's end", -1}} {
				in := &inject{k: i, limit: lim.limit}
				runs = append(runs, run{lim.rule, fmt.Sprintf("read %d (%s) %s", i, c.call, lim.how), func(t *testing.T) witness.Observed {
					f := newFsw(t)
					src := f.row(0)
					require.Equal(t, driver.Ready, f.put(t, src, nil).Result.Status)
					return f.get(t, at(src, 1, f.region), in)
				}})
			}
		}
	}
	// No fault: each step's success rule (a CONTINUE step's is the
	// operation's READY).
	for _, id := range []string{"claim.OK", "write.OK", "publish.OK"} {
		runs = append(runs, run{id, "no fault", func(t *testing.T) witness.Observed {
			f := newFsw(t)
			return f.put(t, f.row(0), nil)
		}})
	}
	for _, id := range []string{"open.whole", "read.whole"} {
		runs = append(runs, run{id, "no fault", func(t *testing.T) witness.Observed {
			f := newFsw(t)
			src := f.row(0)
			require.Equal(t, driver.Ready, f.put(t, src, nil).Result.Status)
			return f.get(t, at(src, 1, f.region), nil)
		}})
	}
	// Planted states.
	plant := func(rule, how string, stage func(t *testing.T, f *fsw, key string)) {
		runs = append(runs, run{rule, how, func(t *testing.T) witness.Observed {
			f := newFsw(t)
			src := f.row(0)
			stage(t, f, src.Key)
			return f.get(t, at(src, 1, f.region), nil)
		}})
	}
	plant("open.ENOENT", "no object", func(t *testing.T, f *fsw, key string) {})
	plant("open.short", "an object of half the row's length", func(t *testing.T, f *fsw, key string) {
		half := driver.Row{Key: key, Spans: []driver.Span{f.region.Slot(0)}}
		half.Spans[0].Length /= 2
		require.Equal(t, driver.Ready, f.put(t, half, nil).Result.Status)
	})
	plant("read.MISMATCH", "an object whose payload was damaged after its trailer", func(t *testing.T, f *fsw, key string) {
		require.Equal(t, driver.Ready, f.put(t, driver.Row{Key: key, Spans: []driver.Span{f.region.Slot(0)}}, nil).Result.Status)
		damage(t, f.root, 10)
	})
	plant("read.CORRUPT", "an object of the row's size whose trailer is damaged", func(t *testing.T, f *fsw, key string) {
		require.Equal(t, driver.Ready, f.put(t, driver.Row{Key: key, Spans: []driver.Span{f.region.Slot(0)}}, nil).Result.Status)
		damage(t, f.root, -5)
	})

	// States planted at the object's or the marker's path (objectPath
	// finds it from a put of the key, then removes the object).
	plantPut := func(rule, how string, stage func(t *testing.T, file string)) {
		runs = append(runs, run{rule, how, func(t *testing.T) witness.Observed {
			f := newFsw(t)
			src := f.row(0)
			stage(t, objectPath(t, f, src))
			return f.put(t, src, nil)
		}})
	}
	plantGet := func(rule, how string, stage func(t *testing.T, file string)) {
		runs = append(runs, run{rule, how, func(t *testing.T) witness.Observed {
			f := newFsw(t)
			src := f.row(0)
			stage(t, objectPath(t, f, src))
			return f.get(t, at(src, 1, f.region), nil)
		}})
	}
	liveMarker := func(t *testing.T, file string) { require.NoError(t, os.WriteFile(file+".pending", nil, 0o600)) }
	dirAt := func(t *testing.T, file string) { require.NoError(t, os.Mkdir(file, 0o700)) }
	linkAt := func(suffix string) func(t *testing.T, file string) {
		return func(t *testing.T, file string) { require.NoError(t, os.Symlink(filepath.Dir(file), file+suffix)) }
	}
	plantPut("claim.EEXIST", "a live marker under the key", liveMarker)
	plantPut("claim.ELOOP", "a symbolic link at the marker's path", linkAt(".pending"))
	plantPut("publish.EISDIR", "a directory at the object's path", dirAt)
	plantGet("open.PENDING", "no object, a live marker", liveMarker)
	plantGet("open.EISDIR", "a directory at the object's path", dirAt)
	plantGet("open.ELOOP", "a symbolic link at the object's path", linkAt(""))
	plantGet("open.CORRUPT", "a file of another size whose tail is no trailer", func(t *testing.T, file string) {
		require.NoError(t, os.WriteFile(file, bytes.Repeat([]byte{7}, 1000), 0o600))
	})

	var ids []string
	for _, r := range runs {
		ids = append(ids, r.rule)
	}
	require.NoError(t, witness.Covered(specs, stem, ids, fsUnreached))
	for _, r := range runs {
		rule, err := witness.Find(specs, stem, r.rule)
		require.NoError(t, err)
		t.Run(stem+"/"+r.rule+"/"+r.how, func(t *testing.T) {
			rule.Announce(t)
			o := r.obs(t)
			t.Logf("%v", o.Result)
			if err := rule.Check(o); err != nil {
				t.Error(err)
			}
		})
	}
}

// damage flips the byte at off (negative: from the end) of the one object
// file under root.
func damage(t *testing.T, root string, off int64) {
	t.Helper()
	var file string
	require.NoError(t, filepath.WalkDir(root, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() && !strings.Contains(e.Name(), ".") {
			file = p
		}
		return err
	}))
	require.NotEmpty(t, file)
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0xFF
	require.NoError(t, os.WriteFile(file, b, 0o600))
}

// objectPath is the path of row's object under f's root: found from a
// put of the row, whose object it then removes.
func objectPath(t *testing.T, f *fsw, row driver.Row) string {
	t.Helper()
	require.Equal(t, driver.Ready, f.put(t, row, nil).Result.Status)
	var file string
	require.NoError(t, filepath.WalkDir(f.root, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.Type().IsRegular() && !strings.Contains(e.Name(), ".") {
			file = p
		}
		return err
	}))
	require.NotEmpty(t, file)
	require.NoError(t, os.Remove(file))
	return file
}

// fsUnreached are the rules of spec/fs-posix.yaml no witness here
// reaches, and why.
var fsUnreached = map[string]string{
	"release.OK":        "a cleanup: its answer never reaches a row's result",
	"release.otherwise": "a cleanup: its answer never reaches a row's result",
}

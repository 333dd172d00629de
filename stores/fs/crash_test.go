package fs_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/fs"
)

// crashModel replays Options.Trace as a file server that loses, at a
// crash, every write not fsynced and every rename, removal or mkdir whose
// directory was not fsynced after it; a file survives only if every
// directory above it does.
type crashModel struct {
	root   string
	events []fs.Event
	bytes  map[int][]byte // event index of an EventWrite -> the file's bytes then
}

type inode struct {
	bytes  []byte
	synced bool
}

func (m *crashModel) record(e fs.Event) {
	if e.Op == fs.EventWrite {
		b, err := os.ReadFile(filepath.Join(m.root, e.Path))
		if err != nil {
			panic(err) // the driver said it wrote the file whole
		}
		m.bytes[len(m.events)] = b
	}
	m.events = append(m.events, e)
}

// crash returns the files a crash after the first k events leaves: path
// -> bytes; a file whose bytes were never fsynced keeps only the first half
// of them (torn).
func (m *crashModel) crash(k int) map[string][]byte {
	live, durable := map[string]*inode{}, map[string]*inode{}
	liveDirs, durableDirs := map[string]bool{}, map[string]bool{}
	for i, e := range m.events[:k] {
		switch e.Op {
		case fs.EventMkdir:
			liveDirs[e.Path] = true
		case fs.EventWrite:
			live[e.Path] = &inode{bytes: m.bytes[i]}
		case fs.EventSync:
			live[e.Path].synced = true
		case fs.EventRename:
			live[e.To] = live[e.Path]
			delete(live, e.Path)
		case fs.EventRemove:
			delete(live, e.Path)
		case fs.EventSyncDir:
			for p := range durable {
				if filepath.Dir(p) == e.Path {
					delete(durable, p)
				}
			}
			for p, n := range live {
				if filepath.Dir(p) == e.Path {
					durable[p] = n
				}
			}
			for p := range liveDirs {
				if filepath.Dir(p) == e.Path {
					durableDirs[p] = true
				}
			}
		}
	}
	out := map[string][]byte{}
	for p, n := range durable {
		lost := false
		for dir := filepath.Dir(p); dir != "."; dir = filepath.Dir(dir) {
			lost = lost || !durableDirs[dir]
		}
		if lost {
			continue
		}
		if n.synced {
			out[p] = n.bytes
		} else {
			out[p] = n.bytes[:len(n.bytes)/2]
		}
	}
	return out
}

// TestACrashLeavesAReadyRowWholeOrAbsent puts, into a fresh root (so the
// key's directories are made too), two versions of a row
// (another length, other bytes) under one key, tracing the calls, and then
// models a crash of the file server after every prefix of the trace: a
// read through a fresh driver over what the crash left is READY only with
// one version's whole bytes, never torn, and after the whole trace (both
// puts answered READY) it is READY with the second version. Leaving out
// the file's fsync (the object survives torn: a FAULT), the directory's
// (the rename is lost: a MISS) or a new directory's parent's (the
// directory is lost: a MISS) fails the last.
func TestACrashLeavesAReadyRowWholeOrAbsent(t *testing.T) {
	m := &crashModel{root: t.TempDir(), bytes: map[int][]byte{}}
	d, err := fs.Open(fs.Options{Root: m.root, Trace: m.record})
	require.NoError(t, err)
	r, err := hostmem.Map("slots", driver.Layout{SlotBytes: 4096, Slots: 2})
	require.NoError(t, err)
	reg, err := d.Register(r.Region)
	require.NoError(t, err)
	key, err := driver.Key("crash", []byte("row"))
	require.NoError(t, err)
	versions := [][]byte{bytes.Repeat([]byte{0xA1}, 3000), bytes.Repeat([]byte{0xB2}, 4096)}
	for _, v := range versions {
		span := r.Slot(0)
		span.Length = int64(len(v))
		copy(span.Bytes(), v)
		op, err := d.Put(context.Background(), []driver.Row{{Key: key, Spans: []driver.Span{span}}})
		require.NoError(t, err)
		res, done := op.Poll()
		require.True(t, done)
		require.Equal(t, driver.Ready, res[0].Status, "%v", res[0])
	}
	require.True(t, d.Drain(context.Background()))
	require.NoError(t, d.Unregister(reg))
	require.NoError(t, d.Close())
	require.NoError(t, r.Close())

	for k := 0; k <= len(m.events); k++ {
		after := "nothing"
		if k > 0 {
			after = fmt.Sprintf("%s %s", m.events[k-1].Op, m.events[k-1].Path)
		}
		t.Run(fmt.Sprintf("crash-after-%d-events", k), func(t *testing.T) {
			res, got := readAfterCrash(t, m.crash(k), key)
			if res.Status == driver.Ready {
				assert.True(t, bytes.Equal(got, versions[0]) || bytes.Equal(got, versions[1]),
					"a crash after %s left a READY row that is neither version whole (%d bytes)", after, len(got))
			}
			if k == len(m.events) {
				assert.Equal(t, driver.Ready, res.Status, "both puts answered READY, yet a crash after %s loses the row: %v", after, res)
				assert.Equal(t, versions[1], got, "a crash after the last put answered READY")
			}
		})
	}
}

// readAfterCrash writes files under a fresh root and reads key's row (up
// to 4096 bytes) through a fresh driver over it.
func readAfterCrash(t *testing.T, files map[string][]byte, key string) (driver.Result, []byte) {
	root := t.TempDir()
	for p, b := range files {
		require.NoError(t, os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), b, 0o600))
	}
	d, err := fs.Open(fs.Options{Root: root, SweepBudget: -1})
	require.NoError(t, err)
	r, err := hostmem.Map("slots", driver.Layout{SlotBytes: 4096, Slots: 1})
	require.NoError(t, err)
	reg, err := d.Register(r.Region)
	require.NoError(t, err)
	defer func() {
		require.True(t, d.Drain(context.Background()))
		require.NoError(t, d.Unregister(reg))
		require.NoError(t, d.Close())
		require.NoError(t, r.Close())
	}()
	for _, n := range []int64{3000, 4096} { // the row is read at each version's length
		span := r.Slot(0)
		span.Length = n
		op, err := d.Get(context.Background(), []driver.Row{{Key: key, Spans: []driver.Span{span}}}, driver.Hint{})
		require.NoError(t, err)
		res, done := op.Poll()
		require.True(t, done)
		if res[0].Status == driver.Ready || n == 4096 {
			return res[0], append([]byte(nil), span.Bytes()...)
		}
	}
	panic("unreachable")
}

package memory_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	memorygen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
	"github.com/kvblob/kvblob/stores/trailer"
)

func rowKeys(t *testing.T, cur, prev byte) *trailer.Integrity {
	t.Helper()
	var p []byte
	if prev != 0 {
		p = bytes.Repeat([]byte{prev}, 32)
	}
	in, err := trailer.NewIntegrity(bytes.Repeat([]byte{cur}, 32), p)
	require.NoError(t, err)
	return in
}

// get reads key into slot 1 of f, whose bytes are set first, and returns
// the result and whether the slot changed.
func (f *fixture) getInto(t *testing.T, key string) (driver.Result, bool) {
	t.Helper()
	f.fill(1, 0xEE)
	before := bytes.Clone(f.r.Slot(1).Bytes())
	op, err := f.d.Get(context.Background(), []driver.Row{f.row(key, 1)}, driver.Hint{})
	require.NoError(t, err)
	return wait(t, op)[0], !bytes.Equal(before, f.r.Slot(1).Bytes())
}

func TestIntegrityRefusesRowsItCannotVerify(t *testing.T) {
	store := memory.NewStore(0)
	payload := bytes.Repeat([]byte{9}, slot)
	cases := []struct {
		name string
		obj  []byte
	}{
		{"a valid unkeyed trailer another writer computed", trailer.Encode("k", payload)},
		{"a row tagged under another key", rowKeys(t, 0xB0, 0).Encode("k", payload)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, memory.Options{Store: store, Integrity: rowKeys(t, 0xA0, 0)})
			store.SetObject("k", c.obj)
			res, written := f.getInto(t, "k")
			assert.Equal(t, driver.Fault, res.Status, "%v", res)
			assert.Equal(t, int64(memorygen.Corrupt), res.Code)
			assert.Contains(t, res.Text, "row integrity not verified")
			assert.False(t, written, "a refused row must not reach the slot")

			plain := newFixture(t, memory.Options{Store: store})
			res, _ = plain.getInto(t, "k")
			assert.Equal(t, driver.Ready, res.Status, "without integrity the trailer alone is checked: %v", res)
		})
	}
}

func TestIntegrityRotation(t *testing.T) {
	store := memory.NewStore(0)
	old := newFixture(t, memory.Options{Store: store, Integrity: rowKeys(t, 0xA0, 0)})
	old.fill(0, 3)
	op, err := old.d.Put(context.Background(), []driver.Row{old.row("k", 0)})
	require.NoError(t, err)
	require.Equal(t, driver.Ready, wait(t, op)[0].Status)
	raw, _ := store.Object("k")
	_, err = trailer.Check(raw, "k")
	require.NoError(t, err)
	require.Len(t, raw, slot+trailer.TagSize+trailer.Size, "a keyed writer writes the tag")

	rotated := newFixture(t, memory.Options{Store: store, Integrity: rowKeys(t, 0xB0, 0xA0)})
	res, _ := rotated.getInto(t, "k")
	require.Equal(t, driver.Ready, res.Status, "the previous key verifies: %v", res)
	assert.Equal(t, old.r.Slot(0).Bytes(), rotated.r.Slot(1).Bytes())

	after := newFixture(t, memory.Options{Store: store, Integrity: rowKeys(t, 0xB0, 0)})
	res, written := after.getInto(t, "k")
	assert.Equal(t, driver.Fault, res.Status, "once the previous key is dropped its rows are refused")
	assert.False(t, written)
}

// TestARowOfTheFormatBeforeReadsReady: a row written before the keyed
// format moved on (stores/trailer/testdata/format2-keyed.obj: an
// HMAC-SHA256 tag under a key of 32 bytes 0xA1, written by the trailer
// package of that format) reads READY under its key, alone and as the
// previous key of a rotation, and is a FAULT under another key alone
// (tried: a reader that refuses format 2 fails the READY rows).
func TestARowOfTheFormatBeforeReadsReady(t *testing.T) {
	const key, n = "tenantA/v1/0a0b", 5000
	old, err := os.ReadFile("../trailer/testdata/format2-keyed.obj")
	require.NoError(t, err)
	want := make([]byte, n)
	for i := range want {
		want[i] = byte(i*7 + i>>8)
	}
	for _, c := range []struct {
		name      string
		cur, prev byte
		status    driver.Status
	}{
		{"under its key", 0xA1, 0, driver.Ready},
		{"as the previous key", 0xB0, 0xA1, driver.Ready},
		{"under another key alone", 0xB0, 0, driver.Fault},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := hostmem.Map("old", driver.Layout{SlotBytes: n, Slots: 1})
			require.NoError(t, err)
			d := memory.New(memory.Options{Integrity: rowKeys(t, c.cur, c.prev)})
			reg, err := d.Register(r.Region)
			require.NoError(t, err)
			t.Cleanup(func() {
				if d.Drain(conformance.Within(5 * time.Second)) {
					_ = d.Unregister(reg)
					_ = r.Close()
				}
			})
			d.Store().SetObject(key, old)
			op, err := d.Get(context.Background(), []driver.Row{{Key: key, Spans: []driver.Span{r.Slot(0)}}}, driver.Hint{})
			require.NoError(t, err)
			res := wait(t, op)[0]
			require.Equal(t, c.status, res.Status, "%v", res)
			if c.status == driver.Ready {
				assert.Equal(t, want, r.Slot(0).Bytes())
			}
		})
	}
}

package fs_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	fsgen "github.com/kvblob/kvblob/generated/fs"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/fs"
)

// fx is a kit driver with a registered region of 64 KiB slots.
type fx struct {
	*storekit.Fx
	kit *Driver
}

func newFx(t *testing.T) *fx {
	t.Helper()
	d := Open(t, tree.Value())
	return &fx{Fx: storekit.NewFx(t, d, 5*time.Second), kit: d}
}

func key(t *testing.T, name string) string {
	k, err := driver.Key("fs-test", []byte(t.Name()+"/"+name))
	require.NoError(t, err)
	return k
}

// TestAFullFilesystemDeclinesAndLeavesNothingBehind fills the kit's tmpfs
// for real: the put is DECLINED, neither the object, its temporary file nor
// its marker is left, and once space is freed the key takes a put.
func TestAFullFilesystemDeclinesAndLeavesNothingBehind(t *testing.T) {
	if !tree.Value().Tmpfs {
		t.Skip(NoMount)
	}
	f := newFx(t)
	k := key(t, "a")
	filler, err := storekit.FillFS(f.kit.Root())
	require.NoError(t, err)
	res := f.Put(f.Row(k, 0, 1))
	assert.Equal(t, driver.Declined, res[0].Status, "%v", res[0])
	left, err := Listing(f.kit.Root())
	require.NoError(t, err)
	for _, p := range left {
		if fi, err := os.Stat(filepath.Join(f.kit.Root(), p)); err == nil && !fi.IsDir() && !strings.HasPrefix(p, "filler-") {
			t.Errorf("a declined put left %s behind", p)
		}
	}
	dst := f.Row(k, 1, storekit.Dest)
	assert.Equal(t, driver.Miss, f.Get(dst)[0].Status)
	storekit.Untouched(t, dst)

	require.NoError(t, os.Remove(filler))
	assert.Equal(t, driver.Ready, f.Put(f.Row(k, 0, 1))[0].Status)
	assert.Equal(t, driver.Ready, f.Get(dst)[0].Status)
	assert.Equal(t, f.Region.Slot(0).Bytes(), dst.Spans[0].Bytes())
}

// TestADeadWritersMarkerExpires: a marker nobody releases keeps the key
// NOT_READY until its TTL passes by the driver's clock; then a get is a
// MISS and a put takes the key over, leaving no marker behind.
func TestADeadWritersMarkerExpires(t *testing.T) {
	f := newFx(t)
	k := key(t, "a")
	require.NoError(t, f.kit.PlantMarker(k))
	dst := f.Row(k, 1, storekit.Dest)
	assert.Equal(t, driver.NotReady, f.Get(dst)[0].Status)
	assert.Equal(t, driver.NotReady, f.Put(f.Row(k, 0, 1))[0].Status)

	f.kit.Clock.Advance(TTL - time.Second)
	assert.Equal(t, driver.NotReady, f.Put(f.Row(k, 0, 1))[0].Status, "a marker is live until its TTL passed")

	f.kit.Clock.Advance(2 * time.Second)
	dst = f.Row(k, 1, storekit.Dest)
	assert.Equal(t, driver.Miss, f.Get(dst)[0].Status, "an expired marker with no object is a MISS")
	storekit.Untouched(t, dst)
	assert.Equal(t, driver.Ready, f.Put(f.Row(k, 0, 1))[0].Status)
	assert.Equal(t, driver.Ready, f.Get(dst)[0].Status)
	assert.Equal(t, f.Region.Slot(0).Bytes(), dst.Spans[0].Bytes())

	file, marker, err := f.kit.Paths(k)
	require.NoError(t, err)
	_, err = os.Lstat(marker)
	assert.True(t, errors.Is(err, os.ErrNotExist), "the writer's marker is released: %v", err)
	siblings, err := os.ReadDir(filepath.Dir(file))
	require.NoError(t, err)
	require.Len(t, siblings, 1, "only the object is left: %v", siblings)
}

// TestATornObjectIsAFaultAndTheDestinationIsUntouched truncates a
// published object in several ways: each get is a FAULT (CORRUPT), and the
// destination keeps its bytes.
func TestATornObjectIsAFaultAndTheDestinationIsUntouched(t *testing.T) {
	f := newFx(t)
	k := key(t, "a")
	require.Equal(t, driver.Ready, f.Put(f.Row(k, 0, 1))[0].Status)
	file, _, err := f.kit.Paths(k)
	require.NoError(t, err)
	size := int64(len(f.Region.Slot(0).Bytes())) + 36
	for _, n := range []int64{size - 1, size / 2, 35, 0} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			require.NoError(t, os.Truncate(file, n))
			dst := f.Row(k, 1, storekit.Dest)
			res := f.Get(dst)[0]
			assert.Equal(t, driver.Fault, res.Status, "%v", res)
			assert.Equal(t, int64(fsgen.Corrupt), res.Code, "%v", res)
			storekit.Untouched(t, dst)
		})
	}
}

// TestAnIOErrorIsAFault injects EIO into each call of a put and into
// each of a get's: every one is a FAULT with code EIO, none of the put's
// leaves a file behind, and the get's open, which reads no payload,
// leaves its destination untouched.
func TestAnIOErrorIsAFault(t *testing.T) {
	f := newFx(t)
	for _, call := range []string{"claim", "write", "publish"} {
		k := key(t, call)
		f.kit.Seam.Raise(call, k, &os.PathError{Op: call, Path: k, Err: syscall.EIO})
		res := f.Put(f.Row(k, 0, 1))[0]
		assert.Equal(t, driver.Fault, res.Status, "%s: %v", call, res)
		assert.Equal(t, int64(fsgen.Eio), res.Code, "%s: %v", call, res)
		file, _, err := f.kit.Paths(k)
		require.NoError(t, err)
		siblings, _ := filepath.Glob(file + "*")
		assert.Empty(t, siblings, "%s: a failed put left files", call)
	}
	for _, call := range []string{"open", "read"} {
		k := key(t, call)
		require.Equal(t, driver.Ready, f.Put(f.Row(k, 0, 1))[0].Status)
		f.kit.Seam.Raise(call, k, &os.PathError{Op: call, Path: k, Err: syscall.EIO})
		dst := f.Row(k, 1, storekit.Dest)
		res := f.Get(dst)[0]
		assert.Equal(t, driver.Fault, res.Status, "%s: %v", call, res)
		assert.Equal(t, int64(fsgen.Eio), res.Code, "%s: %v", call, res)
		if call == "open" {
			storekit.Untouched(t, dst)
		}
	}
}

// TestAnUnreadableObjectIsAFault drops the object's read permission; root
// reads it anyway, so this runs only without root.
func TestAnUnreadableObjectIsAFault(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a file whatever its mode")
	}
	f := newFx(t)
	k := key(t, "a")
	require.Equal(t, driver.Ready, f.Put(f.Row(k, 0, 1))[0].Status)
	file, _, _ := f.kit.Paths(k)
	require.NoError(t, os.Chmod(file, 0))
	dst := f.Row(k, 1, storekit.Dest)
	res := f.Get(dst)[0]
	assert.Equal(t, driver.Fault, res.Status)
	assert.Equal(t, int64(fsgen.Eacces), res.Code)
	storekit.Untouched(t, dst)
}

// TestAFIFOAtTheObjectDoesNotBlockAGet: open(2) of a FIFO with no writer
// blocks unless O_NONBLOCK; the get answers CORRUPT instead.
func TestAFIFOAtTheObjectDoesNotBlockAGet(t *testing.T) {
	f := newFx(t)
	k := key(t, "a")
	file, _, _ := f.kit.Paths(k)
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, syscall.Mkfifo(file, 0o644))
	dst := f.Row(k, 1, storekit.Dest)
	got := make(chan driver.Result, 1)
	go func() { got <- f.Get(dst)[0] }()
	select {
	case res := <-got:
		assert.Equal(t, driver.Fault, res.Status)
		assert.Equal(t, int64(fsgen.Corrupt), res.Code, "%v", res)
		storekit.Untouched(t, dst)
	case <-time.After(conformance.DefaultDeadline):
		w, err := os.OpenFile(file, os.O_WRONLY, 0) // unblock the get
		require.NoError(t, err)
		_ = w.Close()
		<-got
		t.Fatal("a get blocked on a FIFO at the object's path")
	}
}

// TestKeysStayUnderTheRoot: a prefix segment "." or ".." is refused before
// anything is recorded, and long names, whose hex is cut into directories,
// never collide with a shorter name that is their prefix.
func TestKeysStayUnderTheRoot(t *testing.T) {
	f := newFx(t)
	for _, bad := range []string{"../v1/00", "a/../../v1/00", "a/./b/v1/00", "./v1/00"} {
		_, err := f.Driver.Put(context.Background(), []driver.Row{f.Row(bad, 0, 1)})
		var re *driver.RejectedError
		require.True(t, errors.As(err, &re), "%q: %v", bad, err)
		assert.Equal(t, driver.RuleKeyFormat, re.Rule)
		_, err = f.Driver.Get(context.Background(), []driver.Row{f.Row(bad, 1, storekit.Dest)}, driver.Hint{})
		require.True(t, errors.As(err, &re), "%q: %v", bad, err)
	}
	// Names of 300, 200 and 100 bytes, each a prefix of the next, whose
	// keys share their fan-out directory: the 600-character hex name is
	// cut into h[:200]+/h[200:400]+/h[400:], which must not meet the
	// 200-byte name's file h[:200]+/h[200:400] or the 100-byte name's h[:200].
	long := bytes.Repeat([]byte{0xab}, 300)
	keyOf := func(n int) string {
		k, err := driver.Key("fs-test", long[:n])
		require.NoError(t, err)
		return k
	}
	fanout := func(k string) string {
		file, _, err := f.kit.Paths(k)
		require.NoError(t, err)
		rel, _ := filepath.Rel(f.kit.Root(), file)
		return strings.Split(rel, "/")[2]
	}
	// Count in bytes 100..103, then 200..203, until each longer name's key
	// shares the shorter one's fan-out directory (about 256 tries each).
	for _, at := range []int{100, 200} {
		for i := uint32(0); fanout(keyOf(at+100)) != fanout(keyOf(100)); i++ {
			require.Less(t, i, uint32(1<<20), "no names share a fan-out directory")
			long[at], long[at+1], long[at+2], long[at+3] = byte(i), byte(i>>8), byte(i>>16), byte(i>>24)
		}
	}
	keys := []string{keyOf(300), keyOf(200), keyOf(100)}
	for i, k := range keys {
		require.Equal(t, driver.Ready, f.Put(f.Row(k, i, byte(i+1)))[0].Status, "key %d", i)
	}
	for i, k := range keys {
		dst := f.Row(k, 4+i, storekit.Dest)
		require.Equal(t, driver.Ready, f.Get(dst)[0].Status, "key %d", i)
		assert.Equal(t, f.Region.Slot(i).Bytes(), dst.Spans[0].Bytes(), "key %d", i)
		file, _, _ := f.kit.Paths(k)
		rel, err := filepath.Rel(f.kit.Root(), file)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(rel, "fs-test/v1/"), rel)
		for _, c := range strings.Split(rel, "/") {
			assert.LessOrEqual(t, len(c), 255, rel)
		}
	}
}

// TestAPutOverAnObjectStoresTheNewBytes: a second put of a key writes it
// again, so READY is for the bytes just put, even of another length.
func TestAPutOverAnObjectStoresTheNewBytes(t *testing.T) {
	f := newFx(t)
	k := key(t, "a")
	short := driver.Row{Key: k, Spans: []driver.Span{{Region: f.Region.Region, Offset: 0, Length: 1000}}}
	f.Row(k, 0, 1)
	require.Equal(t, driver.Ready, f.Put(short)[0].Status)
	require.Equal(t, driver.Ready, f.Put(f.Row(k, 2, 9))[0].Status)
	dst := f.Row(k, 1, storekit.Dest)
	require.Equal(t, driver.Ready, f.Get(dst)[0].Status)
	assert.Equal(t, f.Region.Slot(2).Bytes(), dst.Spans[0].Bytes())
}

// TestOpenRefusesWhatItCannotUse names the missing root and a root that is
// a file.
func TestOpenRefusesWhatItCannotUse(t *testing.T) {
	_, err := fs.Open(fs.Options{})
	assert.ErrorContains(t, err, "no root")
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	_, err = fs.Open(fs.Options{Root: file})
	assert.ErrorContains(t, err, "is not a directory")
	_, err = fs.Open(fs.Options{Root: filepath.Join(file, "missing")})
	assert.Error(t, err)
}

// TestBackendRoundTripBetweenTwoHosts publishes through one driver and
// fetches through another over the same directory, as two hosts mounting
// one share would, with four workers, byte for byte.
func TestBackendRoundTripBetweenTwoHosts(t *testing.T) {
	root := t.TempDir()
	if tree.Value().Tmpfs {
		root = tree.Value().Dir
	}
	const rows = 64
	type host struct {
		be   *backend.Backend
		l    *hostmem.Lender
		hold *hostmem.Hold
	}
	open := func() host {
		l, err := hostmem.NewLender("slots", driver.Layout{SlotBytes: 32 << 10, Slots: rows})
		require.NoError(t, err)
		hold, err := l.Hold()
		require.NoError(t, err)
		d, err := fs.Open(fs.Options{Root: root})
		require.NoError(t, err)
		bind, err := backend.Bind(t.Context(), hold.Regions(), d, hold)
		require.NoError(t, err)
		be, err := backend.New(bind, backend.Config{Workers: 4, RowsPerBatch: 8, Prefix: "fs-roundtrip/" + strings.ReplaceAll(t.Name(), "/", "-")})
		require.NoError(t, err)
		return host{be, l, hold}
	}
	pub, sub := open(), open()
	view := func(l *hostmem.Lender) backend.View {
		r := l.Regions()[0]
		v := make(backend.View, rows)
		for i := range v {
			v[i] = backend.ViewRow{Name: []byte(fmt.Sprint("block-", i)), Spans: []driver.Span{r.Slot(i)}}
		}
		return v
	}
	src, dst := view(pub.l), view(sub.l)
	for i, r := range src {
		b := r.Spans[0].Bytes()
		for j := range b {
			b[j] = byte(i*7 + j)
		}
	}
	outcome := func(a *backend.Attempt, err error) backend.Outcome {
		require.NoError(t, err)
		o, err := a.Wait(conformance.Within(conformance.DefaultDeadline))
		require.NoError(t, err)
		return o
	}
	assert.Equal(t, rows, outcome(pub.be.Publish(t.Context(), src)).InOrder)
	assert.Equal(t, rows, outcome(sub.be.Fetch(t.Context(), dst)).InOrder)
	for i := range src {
		require.True(t, bytes.Equal(src[i].Spans[0].Bytes(), dst[i].Spans[0].Bytes()), "row %d", i)
	}
	for _, h := range []host{pub, sub} {
		require.NoError(t, h.be.Shutdown(conformance.Within(conformance.DefaultDeadline)))
		require.True(t, h.hold.Released())
		require.NoError(t, h.l.Close())
	}
}

// TestACancelledContextStartsNoRow: rows a call has not started when its
// context is done are CANCELLED, and nothing of them reaches the disk or
// the destination.
func TestACancelledContextStartsNoRow(t *testing.T) {
	f := newFx(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	k := key(t, "a")
	op, err := f.Driver.Put(ctx, []driver.Row{f.Row(k, 0, 1)})
	require.NoError(t, err)
	res, _ := op.Poll()
	assert.Equal(t, driver.Cancelled, res[0].Status)
	left, err := Listing(f.kit.Root())
	require.NoError(t, err)
	assert.Empty(t, left)

	require.Equal(t, driver.Ready, f.Put(f.Row(k, 0, 1))[0].Status)
	dst := f.Row(k, 1, storekit.Dest)
	op, err = f.Driver.Get(ctx, []driver.Row{dst}, driver.Hint{})
	require.NoError(t, err)
	res, _ = op.Poll()
	assert.Equal(t, driver.Cancelled, res[0].Status)
	storekit.Untouched(t, dst)
}

// plantedMarker opens a driver with opt over a root of its own, and plants
// another writer's marker for key "a" dated at.
func plantedMarker(t *testing.T, opt fs.Options, at time.Time) (f *storekit.Fx, k, marker string) {
	t.Helper()
	root, err := os.MkdirTemp(tree.Value().Dir, "marker-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	opt.Root = root
	d, err := fs.Open(opt)
	require.NoError(t, err)
	f = storekit.NewFx(t, d, 5*time.Second)
	k = key(t, "a")
	_, marker, err = d.Paths(k)
	require.NoError(t, err)
	require.NoError(t, Plant(marker, nil))
	require.NoError(t, os.Chtimes(marker, at, at))
	return f, k, marker
}

// TestAMarkerLivesExactlyItsTTL: a marker keeps its key NOT_READY until
// the configured MarkerTTL has passed by the driver's clock, and not a
// nanosecond longer, however short the TTL; a TTL left at 0 is 60 s. A
// driver that took a short TTL as unset (and waited 60 s), or that let a
// marker die early, fails here.
func TestAMarkerLivesExactlyItsTTL(t *testing.T) {
	for _, tc := range []struct {
		set, lives time.Duration
	}{
		{time.Nanosecond, time.Nanosecond},
		{2 * time.Nanosecond, 2 * time.Nanosecond},
		{time.Second, time.Second},
		{0, 60 * time.Second},
	} {
		t.Run(tc.set.String(), func(t *testing.T) {
			clock := NewClock()
			f, k, _ := plantedMarker(t, fs.Options{MarkerTTL: tc.set, Now: clock.Now}, clock.Now())

			if tc.lives > time.Nanosecond {
				clock.Advance(tc.lives - time.Nanosecond)
			}
			assert.Equal(t, driver.NotReady, f.Put(f.Row(k, 0, 1))[0].Status, "a marker %v old is live under a TTL of %v", tc.lives-time.Nanosecond, tc.set)
			clock.Advance(time.Nanosecond)
			assert.Equal(t, driver.Ready, f.Put(f.Row(k, 0, 1))[0].Status, "a marker %v old has expired under a TTL of %v", tc.lives, tc.set)
		})
	}
}

// TestAMarkerAheadIsBelievedExactlyTheSkew: a marker dated ahead of the
// driver's clock keeps its key NOT_READY while it is at most MaxClockSkew
// ahead, and is expired at once a nanosecond beyond, however small the
// skew; a skew left at 0 is DefaultMaxClockSkew. A driver that took a
// short skew as unset (and believed a marker 10 s ahead) fails here.
func TestAMarkerAheadIsBelievedExactlyTheSkew(t *testing.T) {
	for _, tc := range []struct {
		set, believed time.Duration
	}{
		{time.Nanosecond, time.Nanosecond},
		{2 * time.Nanosecond, 2 * time.Nanosecond},
		{time.Second, time.Second},
		{0, fs.DefaultMaxClockSkew},
	} {
		t.Run(tc.set.String(), func(t *testing.T) {
			clock := NewClock()
			opt := fs.Options{MaxClockSkew: tc.set, Now: clock.Now}
			f, k, _ := plantedMarker(t, opt, clock.Now().Add(tc.believed))
			assert.Equal(t, driver.NotReady, f.Put(f.Row(k, 0, 1))[0].Status, "a marker %v ahead is live under a skew of %v", tc.believed, tc.set)
			f, k, _ = plantedMarker(t, opt, clock.Now().Add(tc.believed+time.Nanosecond))
			assert.Equal(t, driver.Ready, f.Put(f.Row(k, 0, 1))[0].Status, "a marker %v ahead is not believed under a skew of %v", tc.believed+time.Nanosecond, tc.set)
		})
	}
}

package memory

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/trailer"

	memorygen "github.com/kvblob/kvblob/generated/memory"
	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/driver"
)

func TestClassesWasteAtMostAnEighth(t *testing.T) {
	for _, n := range []int{1, 63, 64, 65, 4096, 4096 + trailer.Size, 1<<20 + trailer.Size, 3<<20 + 1, 64 << 20} {
		c := class(n)
		assert.GreaterOrEqual(t, c, n)
		if n > 4<<10 {
			assert.LessOrEqual(t, float64(c-n), float64(c)/8, "class %d for %d", c, n)
		}
		assert.Equal(t, c, class(c), "a class is its own class")
	}
}

// Every class has its own free list: classIndex numbers the classes in
// order, with no gap and no two alike.
func TestClassIndexNumbersTheClassesInOrder(t *testing.T) {
	next := 0
	for n := 1; n <= 64<<20; {
		c := class(n)
		require.Equal(t, next, classIndex(c), "class %d (of %d bytes)", c, n)
		next++
		n = c + 1
	}
}

func TestAFreedBlockIsReusedAndNoHeapIsTakenOnceWarm(t *testing.T) {
	s := NewStore(0)
	var first, next *byte
	// Bounded: a store call that keeps the store's lock (a broken line)
	// fails here in seconds, not at the binary's timeout.
	bound.Within(t, 30*time.Second, "planting, deleting and planting again", func() {
		s.SetObject("a", make([]byte, 4096+trailer.Size))
		first = &s.keys.get("a").obj.b[0]
		s.Delete("a")
		s.SetObject("b", make([]byte, 4096+trailer.Size))
		next = &s.keys.get("b").obj.b[0]
	})
	assert.Same(t, first, next, "the freed block serves the next object of its class")
	allocs := testing.AllocsPerRun(100, func() {
		s.mu.Lock()
		b := s.arena.alloc(1 << 20)
		s.arena.release(b)
		s.mu.Unlock()
	})
	assert.Zero(t, allocs, "a warm arena allocates nothing")
}

func TestABlockAReaderHoldsIsNotReusedUntilItLetsGo(t *testing.T) {
	s := NewStore(0)
	s.SetObject("a", []byte("first object"))
	o, code := s.get("a")
	require.Equal(t, 0, int(code))
	s.Delete("a") // replaced while a reader copies out of it
	s.SetObject("b", []byte("other object"))
	assert.Equal(t, "first object", string(o.b), "a held block is not handed out again")
	held := &o.b[0]
	s.done(o)
	s.SetObject("c", []byte("third object"))
	assert.Same(t, held, &s.keys.get("c").obj.b[0], "once let go, the block is reused")
}

func TestAWarmStoreStoresAnObjectWithoutTheHeap(t *testing.T) {
	s := NewStore(0)
	put := func() {
		w, code := s.begin("k", 4096+trailer.Size, true)
		if code != 0 {
			t.Fatalf("begin: %v", code)
		}
		s.mu.Lock()
		code = s.commitLocked("k", w)
		s.mu.Unlock()
		if code != 0 {
			t.Fatalf("commit: %v", code)
		}
	}
	put()
	put() // the first object's struct and block are spare now
	assert.Zero(t, testing.AllocsPerRun(100, put), "a warm store replaces an object without allocating")
	assert.Equal(t, 1, s.Len())
}

// A put of a new key and its delete, once warm, take nothing from the Go
// heap: the entry the delete releases serves the next new key, as the
// object and its block do.
func TestAWarmStorePutsAndDeletesNewKeysWithoutTheHeap(t *testing.T) {
	s := NewStore(0)
	keys := []string{"a", "b", "c"}
	i := 0
	putDelete := func() {
		k := keys[i%len(keys)]
		i++
		w, code := s.begin(k, 4096+trailer.Size, true)
		if code != 0 {
			t.Fatalf("begin: %v", code)
		}
		s.mu.Lock()
		code = s.commitLocked(k, w)
		s.mu.Unlock()
		if code != 0 {
			t.Fatalf("commit: %v", code)
		}
		s.Delete(k)
	}
	putDelete()
	putDelete()
	assert.Zero(t, testing.AllocsPerRun(100, putDelete), "a warm store puts and deletes a new key without allocating")
	assert.Zero(t, s.Len())
	assert.Zero(t, s.keys.len(), "every entry left the table")
	assert.Equal(t, 1, s.entries.Len(), "and is kept for reuse")
}

// An entry a write still refers to is not reused when it leaves the table
// (another writer took its key over and let go): the write commits
// through the key's entry found again, and only then is the old entry
// kept for reuse. An aborted write releases its gone entry the same way.
func TestAnEntryIsReusedOnlyOnceNoWriteRefersToIt(t *testing.T) {
	for _, commit := range []bool{true, false} {
		t.Run(fmt.Sprint("commit=", commit), func(t *testing.T) {
			s := NewStore(0)
			w, code := s.begin("k", 100, true)
			require.Equal(t, memorygen.OK, code)
			old := w.e
			s.BeginExternal("k")() // takes "k" over and lets go: its entry leaves the table
			assert.Nil(t, s.keys.get("k"))
			assert.True(t, old.gone)
			assert.Zero(t, s.entries.Len(), "a write still refers to the entry")
			s.SetObject("other", []byte("x"))
			assert.NotSame(t, old, s.keys.get("other"), "a new key does not get it")
			s.mu.Lock()
			if commit {
				assert.Equal(t, memorygen.OK, s.commitLocked("k", w))
			} else {
				s.abortLocked(w)
			}
			s.mu.Unlock()
			if commit {
				e := s.keys.get("k")
				require.NotNil(t, e, "the write committed under its key")
				assert.Same(t, old, e, "released once its write is done, it is the key's entry found again")
				assert.Equal(t, w.obj, e.obj)
				assert.Zero(t, e.writer)
				assert.False(t, e.gone)
				assert.Zero(t, s.entries.Len())
				assert.Equal(t, 2, s.Len())
			} else {
				assert.Nil(t, s.keys.get("k"))
				assert.Equal(t, entry{}, *old, "emptied")
				require.Equal(t, 1, s.entries.Len(), "released once its write is done")
				assert.Same(t, old, s.entries.Get(), "and kept for reuse")
				assert.Equal(t, 1, s.Len())
			}
		})
	}
}

// A get of many rows looks them up a chunk at a time: every object of a
// chunk stays held (its block not reused) until the next chunk is looked
// up or the get lets go, and then every one goes back.
func TestChunkedReadsHoldEachBlockUntilTheyLetGo(t *testing.T) {
	s := NewStore(0)
	rows := make([]driver.Row, readChunk+3)
	for i := range rows {
		rows[i].Key = fmt.Sprint("k", i)
		if i != 1 {
			s.SetObject(rows[i].Key, []byte(fmt.Sprint("object ", i)))
		}
	}
	var rd reads
	o0, code := s.at(&rd, rows, 0)
	require.Equal(t, memorygen.OK, code)
	_, code = s.at(&rd, rows, 1)
	assert.Equal(t, memorygen.NotFound, code, "an absent row answers its code")
	last, _ := s.at(&rd, rows, readChunk-1)
	held := []*byte{&o0.b[0], &last.b[0]}
	s.Delete(rows[0].Key) // replaced while the get still holds the chunk
	s.Delete(rows[readChunk-1].Key)
	s.SetObject("x", []byte("other object"))
	s.SetObject("y", []byte("other object"))
	assert.Equal(t, "object 0", string(o0.b), "a held block is not handed out again")
	assert.Equal(t, fmt.Sprint("object ", readChunk-1), string(last.b))

	next, code := s.at(&rd, rows, readChunk) // the next chunk: the first is let go
	require.Equal(t, memorygen.OK, code)
	assert.Equal(t, fmt.Sprint("object ", readChunk), string(next.b))
	s.SetObject("z1", []byte("third object"))
	s.SetObject("z2", []byte("third object"))
	reused := []*byte{&s.keys.get("z1").obj.b[0], &s.keys.get("z2").obj.b[0]}
	assert.ElementsMatch(t, held, reused, "once let go, both blocks are reused")

	s.letGo(&rd)
	for _, k := range []string{rows[readChunk].Key, rows[readChunk+1].Key, rows[readChunk+2].Key} {
		assert.Zero(t, s.keys.get(k).obj.refs, "%s is let go", k)
	}
}

// A get through the driver lets go of every object it read, chunk after
// chunk and at the end: none stays held, so each block can go back.
func TestAGetOfManyRowsLetsGoOfEveryObject(t *testing.T) {
	const n, size = 2*readChunk + 5, 64
	region := &driver.Region{Name: "t", Kind: driver.Host, Layout: driver.Layout{SlotBytes: size, Slots: 2 * n}, Mem: make([]byte, 2*n*size)}
	d := New(Options{})
	reg, err := d.Register(region)
	require.NoError(t, err)
	src, dst := make([]driver.Row, n), make([]driver.Row, n)
	for i := range src {
		key := fmt.Sprint("k", i)
		src[i] = driver.Row{Key: key, Spans: []driver.Span{region.Slot(i)}}
		dst[i] = driver.Row{Key: key, Spans: []driver.Span{region.Slot(n + i)}}
		copy(region.Slot(i).Bytes(), key)
	}
	put, err := d.Put(context.Background(), src)
	require.NoError(t, err)
	res, done := put.Poll()
	require.True(t, done)
	for _, r := range res {
		require.Equal(t, driver.Ready, r.Status)
	}
	get, err := d.Get(context.Background(), dst, driver.Hint{})
	require.NoError(t, err)
	res, done = get.Poll()
	require.True(t, done)
	for i, r := range res {
		require.Equal(t, driver.Ready, r.Status, "row %d", i)
		assert.Equal(t, region.Slot(i).Bytes(), region.Slot(n+i).Bytes(), "row %d", i)
	}
	d.store.mu.Lock()
	for _, r := range src {
		assert.Zero(t, d.store.keys.get(r.Key).obj.refs, "%s is still held after the get", r.Key)
	}
	d.store.mu.Unlock()
	require.True(t, d.Drain(context.Background()))
	require.NoError(t, d.Unregister(reg))
	require.NoError(t, d.Close())
}

// A put reserves a chunk of rows at a time; the reservations of rows that
// never started (the put was cancelled in their chunk) go back: their
// keys are free again (neither PENDING nor stored) and their blocks serve
// the next objects.
func TestReservationsOfRowsThatNeverStartedGoBack(t *testing.T) {
	s := NewStore(0)
	region := &driver.Region{Name: "t", Kind: driver.Host, Layout: driver.Layout{SlotBytes: 64, Slots: 3}, Mem: make([]byte, 3*64)}
	rows := make([]driver.Row, 3)
	for i := range rows {
		rows[i] = driver.Row{Key: fmt.Sprint("k", i), Spans: []driver.Span{region.Slot(i)}}
	}
	var p puts
	w, code := s.reserved(&p, rows, 0)
	require.Equal(t, memorygen.OK, code)
	require.Equal(t, 3, p.n, "the chunk holds every row")
	freed := []*byte{&p.w[1].obj.b[0], &p.w[2].obj.b[0]}
	for _, r := range rows[1:] {
		_, code := s.get(r.Key)
		assert.Equal(t, memorygen.Pending, code, "%s is reserved with its chunk", r.Key)
	}
	s.unreserve(&p) // rows 1 and 2 never started
	for _, r := range rows[1:] {
		_, code := s.get(r.Key)
		assert.Equal(t, memorygen.NotFound, code, "%s is no longer reserved", r.Key)
		assert.Nil(t, s.keys.get(r.Key), "%s left no entry behind", r.Key)
	}
	s.SetObject("x", make([]byte, 64))
	s.SetObject("y", make([]byte, 64))
	assert.ElementsMatch(t, freed, []*byte{&s.keys.get("x").obj.b[0], &s.keys.get("y").obj.b[0]}, "their blocks went back")

	_, code = s.get(rows[0].Key)
	assert.Equal(t, memorygen.Pending, code, "the row taken keeps its reservation")
	s.mu.Lock()
	require.Equal(t, memorygen.OK, s.commitLocked(rows[0].Key, w))
	s.mu.Unlock()
	o, code := s.get(rows[0].Key)
	require.Equal(t, memorygen.OK, code)
	s.done(o)
	assert.Equal(t, 3, s.Len())
}

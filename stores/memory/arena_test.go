package memory

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/stores/trailer"
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
	s.SetObject("a", make([]byte, 4096+trailer.Size))
	first := &s.objects["a"].b[0]
	s.Delete("a")
	s.SetObject("b", make([]byte, 4096+trailer.Size))
	assert.Same(t, first, &s.objects["b"].b[0], "the freed block serves the next object of its class")
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
	assert.Same(t, held, &s.objects["c"].b[0], "once let go, the block is reused")
}

func TestAWarmStoreStoresAnObjectWithoutTheHeap(t *testing.T) {
	s := NewStore(0)
	put := func() {
		id, o, code := s.begin("k", 4096+trailer.Size, true)
		if code != 0 {
			t.Fatalf("begin: %v", code)
		}
		s.mu.Lock()
		code = s.commitLocked("k", id, o)
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

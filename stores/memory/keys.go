package memory

import "hash/maphash"

// keyTable is the store's map from key to entry: open addressing with
// linear probing on a hash of the key computed once per call, and
// backward-shift deletion.
//
// A put of a new key is a lookup that misses and an insert; here they are
// one probe (find, then insert at the slot find stopped at), where a Go
// map probes twice. And a Go map's delete leaves a tombstone in a full
// group, which later probes step over until the map grows: a store whose
// keys come and go (a publish of new blocks, a delete of old ones) keeps
// probing past them. Backward-shift deletion leaves none: a key's slot is
// always on the unbroken run from its home slot, so a miss stops at the
// first empty slot. The table is at most half full, so runs are short. It
// never shrinks, as a Go map does not. Its caller holds the store's lock.
type keyTable struct {
	seed   maphash.Seed
	slots  []keySlot // a power of two of them; empty: e == nil
	n      int       // slots in use
	warmed uint64    // see warm
}

type keySlot struct {
	h   uint64 // hash of key
	key string
	e   *entry
}

// keyPos is where find stopped: key's slot, or the empty slot where insert
// puts it. It stays valid until the table next changes.
type keyPos struct {
	h uint64
	i int
}

// minKeySlots is the table's first size.
const minKeySlots = 64

func newKeyTable() keyTable {
	return keyTable{seed: maphash.MakeSeed(), slots: make([]keySlot, minKeySlots)}
}

// hash returns key's hash, for findHashed. It reads nothing of the table
// but its seed, fixed at its making: a caller may hash its keys before it
// takes the store's lock, and the hash stays valid as the table grows.
func (t *keyTable) hash(key string) uint64 { return maphash.String(t.seed, key) }

// find returns key's entry (nil: none) and where it is or would go.
func (t *keyTable) find(key string) (*entry, keyPos) { return t.findHashed(key, t.hash(key)) }

// findHashed is find of key whose hash is h.
func (t *keyTable) findHashed(key string, h uint64) (*entry, keyPos) {
	m := len(t.slots) - 1
	i := int(h) & m
	for {
		s := &t.slots[i]
		if s.e == nil || s.h == h && s.key == key {
			return s.e, keyPos{h, i}
		}
		i = (i + 1) & m
	}
}

// warm reads the home slot of each of the keys hashed hs, one after
// another, so that the misses of a chunk's lookups overlap, where each
// lookup's own would wait behind the work of the lookup before it. warmed
// keeps what it read, lest the compiler drop the reads as unused.
func (t *keyTable) warm(hs []uint64) {
	m := len(t.slots) - 1
	var x uint64
	for _, h := range hs {
		x += t.slots[int(h)&m].h
	}
	t.warmed = x
}

// get returns key's entry, nil when it has none.
func (t *keyTable) get(key string) *entry {
	e, _ := t.find(key)
	return e
}

// insert puts e under key at p, which find returned for key (with no
// entry) and no change to the table since, and keeps key's hash in e.
func (t *keyTable) insert(p keyPos, key string, e *entry) {
	e.h = p.h
	t.slots[p.i] = keySlot{h: p.h, key: key, e: e}
	t.n++
	if 2*t.n > len(t.slots) {
		t.grow()
	}
}

// grow doubles the slots and places every key again.
func (t *keyTable) grow() {
	old := t.slots
	t.slots = make([]keySlot, 2*len(old))
	m := len(t.slots) - 1
	for _, s := range old {
		if s.e == nil {
			continue
		}
		i := int(s.h) & m
		for t.slots[i].e != nil {
			i = (i + 1) & m
		}
		t.slots[i] = s
	}
}

// remove takes e, which is in the table, out of it. It finds e's slot
// from the hash its insert kept in it (entry.h), by e itself: no key is
// hashed or compared again.
func (t *keyTable) remove(e *entry) {
	m := len(t.slots) - 1
	i := int(e.h) & m
	for t.slots[i].e != e {
		i = (i + 1) & m
	}
	// Shift back every slot of the run after i that may move: one whose
	// home is not between the hole and itself. The hole ends up at the
	// run's end, or before a slot sitting in its home.
	for j := (i + 1) & m; t.slots[j].e != nil; j = (j + 1) & m {
		home := int(t.slots[j].h) & m
		if (j-home)&m < (j-i)&m {
			continue // home in (i, j]: moving it before its home would lose it
		}
		t.slots[i] = t.slots[j]
		i = j
	}
	t.slots[i] = keySlot{}
	t.n--
}

// len returns the number of keys.
func (t *keyTable) len() int { return t.n }

package memory

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// checkKeyTable fails t unless tab holds exactly the keys of want, each
// found with its entry, and every key sits on the unbroken run from its
// home slot (what backward-shift deletion keeps, and find relies on).
func checkKeyTable(t *testing.T, tab *keyTable, want map[string]*entry) {
	t.Helper()
	require.Equal(t, len(want), tab.len())
	used := 0
	m := len(tab.slots) - 1
	for j, s := range tab.slots {
		if s.e == nil {
			continue
		}
		used++
		require.Equal(t, s.h, s.e.h, "%q's entry keeps its hash", s.key)
		for i := int(s.h) & m; i != j; i = (i + 1) & m {
			require.NotNil(t, tab.slots[i].e, "an empty slot between %q's home and its slot", s.key)
		}
	}
	require.Equal(t, len(want), used, "slots in use")
	for k, e := range want {
		require.Same(t, e, tab.get(k), "%q", k)
	}
}

// collidingKeys returns n keys whose home slot in tab (at its current
// size) is home.
func collidingKeys(tab *keyTable, home, n int) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprint("k", i)
		_, p := tab.find(k)
		if int(p.h)&(len(tab.slots)-1) == home {
			keys = append(keys, k)
		}
	}
	return keys
}

// Each case inserts keys and removes some, in order, from a table whose
// keys all share one home slot (so every key after the first is displaced,
// and a run from the last slot wraps around to slot 0), and then finds
// exactly the keys left, each where find reaches it.
func TestKeyTableRemovesWithoutBreakingRuns(t *testing.T) {
	cases := []struct {
		name   string
		home   int // minKeySlots-1: the run wraps
		insert int
		remove []int // positions in insertion order
	}{
		{"nothing removed", 3, 5, nil},
		{"the first of a run", 3, 5, []int{0}},
		{"the middle of a run", 3, 5, []int{2}},
		{"the last of a run", 3, 5, []int{4}},
		{"every other", 3, 6, []int{0, 2, 4}},
		{"all, first to last", 3, 4, []int{0, 1, 2, 3}},
		{"all, last to first", 3, 4, []int{3, 2, 1, 0}},
		{"wrapping: the first", minKeySlots - 1, 5, []int{0}},
		{"wrapping: the one at slot 0", minKeySlots - 1, 5, []int{1}},
		{"wrapping: all but the last", minKeySlots - 1, 5, []int{0, 1, 2, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tab := newKeyTable()
			keys := collidingKeys(&tab, c.home, c.insert)
			want := map[string]*entry{}
			for _, k := range keys {
				e, p := tab.find(k)
				require.Nil(t, e)
				want[k] = &entry{}
				tab.insert(p, k, want[k])
			}
			checkKeyTable(t, &tab, want)
			for _, i := range c.remove {
				tab.remove(want[keys[i]])
				delete(want, keys[i])
				checkKeyTable(t, &tab, want)
				assert.Nil(t, tab.get(keys[i]), "%q was removed", keys[i])
			}
		})
	}
}

// Keys that come and go leave nothing behind: through many rounds of
// inserts and deletes (a Go map as the model), the table finds exactly
// the keys in, stays at most half full, and, holding as many keys at each
// round's peak, does not grow past the size that first held them.
func TestKeyTableChurn(t *testing.T) {
	cases := []struct {
		name  string
		live  int // keys inserted per round
		keep  int // of them, left in for the next round
		round int
	}{
		{"small, all removed", 10, 0, 200},
		{"grows through several sizes", 1000, 0, 20},
		{"some kept from round to round", 300, 100, 50},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			tab := newKeyTable()
			want := map[string]*entry{}
			size := 0
			for r := range c.round {
				for i := range c.live {
					k := fmt.Sprint("kvblob/v1/", r, "-", i)
					e, p := tab.find(k)
					require.Nil(t, e, "%q is new", k)
					want[k] = &entry{}
					tab.insert(p, k, want[k])
				}
				checkKeyTable(t, &tab, want)
				require.LessOrEqual(t, 2*tab.len(), len(tab.slots), "at most half full")
				if r == 1 {
					size = len(tab.slots)
				} else if r > 1 {
					require.Equal(t, size, len(tab.slots), "round %d grew the table", r)
				}
				// Remove all but keep of the keys, in random order.
				var ks []string
				for k := range want {
					ks = append(ks, k)
				}
				rng.Shuffle(len(ks), func(i, j int) { ks[i], ks[j] = ks[j], ks[i] })
				for _, k := range ks[:len(ks)-min(len(ks), c.keep)] {
					tab.remove(want[k])
					delete(want, k)
				}
				checkKeyTable(t, &tab, want)
			}
		})
	}
}

package sweep

import (
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tree is a namespace made up as it is read: each directory of depth d
// below limit holds files files, then (while d < deep) one directory "d".
// It counts what Walk asked of it.
type tree struct {
	files, deep int
	handed      int // entries handed out by Read
	open, most  int // directories open now (the root's included), and the most
	asked       int // the most entries one Read was asked for
	closes      int
	failOpenAt  int // Open of a directory at this depth fails (0: none)
	errs        []error
}

// names are the files' names: made once, so that the tree allocates
// nothing as it is read.
var names = func() []string {
	n := make([]string, 64)
	for i := range n {
		n[i] = fmt.Sprint(i)
	}
	return n
}()

type node struct {
	t     *tree
	depth int
	next  int // the next entry's index
}

func (n *node) Read(ents []Entry) (int, error) {
	n.t.asked = max(n.t.asked, len(ents))
	k := 0
	for ; k < len(ents); k++ {
		i := n.next
		switch {
		case i < n.t.files:
			ents[k] = Entry{Name: names[i%len(names)], Next: int64(i + 1)}
		case i == n.t.files && n.depth < n.t.deep:
			ents[k] = Entry{Name: "d", Dir: true, Next: int64(i + 1)}
		default:
			n.t.handed += k
			return k, nil
		}
		n.next++
	}
	n.t.handed += k
	return k, nil
}

func (n *node) Resume(next int64) error { n.next = int(next); return nil }

func (n *node) Open(name string) (*node, error) {
	if n.depth+1 == n.t.failOpenAt {
		n.t.errs = append(n.t.errs, errors.New("open refused"))
		return nil, n.t.errs[len(n.t.errs)-1]
	}
	n.t.open++
	n.t.most = max(n.t.most, n.t.open)
	return &node{t: n.t, depth: n.depth + 1}, nil
}

func (n *node) Close() error { n.t.open--; n.t.closes++; return nil }

// TestAWalksWorkIsBoundedByItsBudgetWhateverTheShape: over a directory of
// a million names, a chain of directories 100,000 deep, and both, Walk
// takes no more entries than its budget, asks for no more than a batch
// (nor than the budget left) at a time, holds no more than Depth
// directories open, closes every one it opened, and allocates the same
// whatever the shape (tried: reading the budget left unbounded by Batch,
// and entering directories past Depth, both fail here).
func TestAWalksWorkIsBoundedByItsBudgetWhateverTheShape(t *testing.T) {
	l := Limits{Depth: 8, Batch: 16}
	for _, shape := range []struct {
		name        string
		files, deep int
	}{{"wide", 1_000_000, 0}, {"deep", 0, 100_000}, {"wide and deep", 1_000_000, 100_000}, {"a file a level", 1, 100_000}} {
		for _, budget := range []int{0, 1, 16, 17, 1000, 65536} {
			t.Run(fmt.Sprintf("%s/%d", shape.name, budget), func(t *testing.T) {
				tr := &tree{files: shape.files, deep: shape.deep, open: 1, most: 1}
				visited := 0
				l := l
				l.Budget = budget
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				st, err := Walk(&node{t: tr}, l, nil, func(*node, []string, Entry) error { visited++; return nil })
				runtime.ReadMemStats(&after)
				require.NoError(t, err)
				assert.LessOrEqual(t, tr.handed, budget, "entries handed out")
				assert.Equal(t, tr.handed, st.Looked)
				assert.LessOrEqual(t, visited, st.Looked)
				assert.LessOrEqual(t, tr.asked, l.Batch, "one Read asked for more than a batch")
				assert.LessOrEqual(t, tr.most, l.Depth, "directories open at once")
				assert.Equal(t, tr.most, max(st.Deepest, 1))
				assert.Equal(t, 1, tr.open, "a directory Walk opened is left open")
				// The stack, a batch a level and the closure: a few KiB
				// however large the tree.
				assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<10), "bytes allocated")
				if shape.files < 1000 && shape.deep > 0 && budget >= 1000 {
					assert.Positive(t, st.Pruned, "the chain goes deeper than Depth: a directory is counted, not entered")
				}
			})
		}
	}
}

// TestAWalkWithBudgetEnoughVisitsEveryFileOnce: a tree within Depth is
// walked whole: every file visited once, with the path of its directory.
func TestAWalkWithBudgetEnoughVisitsEveryFileOnce(t *testing.T) {
	tr := &tree{files: 3, deep: 5, open: 1}
	seen := map[string]int{}
	st, err := Walk(&node{t: tr}, Limits{Budget: 1000, Depth: 8, Batch: 2}, nil, func(n *node, path []string, e Entry) error {
		assert.Len(t, path, n.depth, "the path names each directory down to the file's")
		seen[fmt.Sprint(n.depth, "/", e.Name)]++
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, 6*3+5, st.Looked, "every file and directory")
	assert.Equal(t, 6, st.Deepest)
	assert.Zero(t, st.Pruned)
	total := 0
	for _, c := range seen {
		total += c
	}
	assert.Equal(t, 18, total)
	assert.Equal(t, 5, tr.closes, "each directory opened is closed once")
}

// TestWalksFromACursorCoverTheTreeAndStartOver: walks of a few entries
// each, every one from where the last stopped, visit every file of a tree
// larger than their budget exactly once before any is visited again, and
// the walk that reaches the end leaves the cursor at the start (tried:
// dropping the cursor's positions visits the first files again and again;
// resuming a directory at its start visits them twice).
func TestWalksFromACursorCoverTheTreeAndStartOver(t *testing.T) {
	for _, budget := range []int{1, 2, 5, 7} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			tr := &tree{files: 10, deep: 4, open: 1}
			seen := map[string]int{}
			var cur Cursor
			walks := 0
			for {
				walks++
				require.Less(t, walks, 1000, "the walks never reached the tree's end")
				st, err := Walk(&node{t: tr}, Limits{Budget: budget, Depth: 8, Batch: 3}, &cur, func(n *node, path []string, e Entry) error {
					seen[fmt.Sprint(len(path), "/", e.Name)]++
					return nil
				})
				require.NoError(t, err)
				require.LessOrEqual(t, st.Looked, budget)
				require.Equal(t, 1, tr.open)
				if cur.AtStart() {
					break
				}
			}
			assert.Len(t, seen, 50, "every file of five directories")
			for f, c := range seen {
				assert.Equal(t, 1, c, "%s visited more than once in one pass", f)
			}
		})
	}
}

// TestAWalkGoesOnPastErrorsAndAnswersTheFirst: a directory that will not
// open, and visits that fail, do not stop the walk; Walk answers the
// first error.
func TestAWalkGoesOnPastErrorsAndAnswersTheFirst(t *testing.T) {
	tr := &tree{files: 2, deep: 3, open: 1, failOpenAt: 2}
	visited := 0
	st, err := Walk(&node{t: tr}, Limits{Budget: 100}, nil, func(n *node, _ []string, e Entry) error {
		visited++
		tr.errs = append(tr.errs, fmt.Errorf("visit %d failed", visited))
		return tr.errs[len(tr.errs)-1]
	})
	require.Len(t, tr.errs, 5, "four visits and an open")
	assert.Equal(t, tr.errs[0], err, "the first error")
	assert.Equal(t, 4, visited, "the root's and the first directory's files")
	assert.Equal(t, 6, st.Looked)
	assert.Equal(t, 1, tr.open)
}

// TestTheLimitsHoldAtOneAndTakeTheirDefaultsBelow: a Depth of 1 is the
// root alone (every directory in it counted, not entered) and a Batch of
// 1 reads one entry at a time, where 0 or less takes each default. The
// other tests set Depth 8 and Batch 2 or more, so a default applied to 1
// as well passed them (tried: l.Depth <= 0 as <= 1, and l.Batch <= 0 as
// <= 1, each fails here).
func TestTheLimitsHoldAtOneAndTakeTheirDefaultsBelow(t *testing.T) {
	for _, c := range []struct {
		name          string
		depth, batch  int
		most, asked   int // directories open at most, entries one Read asked for at most
		looked, prune int
	}{
		{"one", 1, 1, 1, 1, 100 + 1, 1},
		{"zero: the defaults", 0, 0, DefaultDepth, DefaultBatch, 100*DefaultDepth + DefaultDepth, 1},
		{"below zero: the defaults", -1, -1, DefaultDepth, DefaultBatch, 100*DefaultDepth + DefaultDepth, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &tree{files: 100, deep: 2 * DefaultDepth, open: 1, most: 1}
			st, err := Walk(&node{t: tr}, Limits{Budget: 1 << 20, Depth: c.depth, Batch: c.batch}, nil, func(*node, []string, Entry) error { return nil })
			require.NoError(t, err)
			assert.Equal(t, c.most, tr.most, "directories open at most")
			assert.Equal(t, c.most, st.Deepest)
			assert.Equal(t, c.asked, tr.asked, "entries one Read asked for")
			assert.Equal(t, c.looked, st.Looked)
			assert.Equal(t, c.prune, st.Pruned)
			assert.Equal(t, 1, tr.open)
		})
	}
}

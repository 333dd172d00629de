// Package sweep walks a store's namespace (a directory tree, an object
// store's listing by delimiter) for what dead writers left, with its work
// bounded by its budget whatever the namespace's shape: a neighbour who can
// write the medium can make a directory of millions of names, or a chain
// of directories thousands deep, and a sweep that read a whole directory
// before it counted an entry, or held a descriptor and a path per level,
// spent memory, descriptors and time in proportion to that shape, not to
// its budget.
//
// Walk's bounds:
//   - entries: every entry a Dir hands out counts against Limits.Budget,
//     directories and files alike, and Walk asks for no more than the
//     budget left, Limits.Batch at a time;
//   - memory: Limits.Depth levels, each a Batch of entries; no path is
//     built (visit gets the names of the directories above, a slice of
//     the walk's own stack);
//   - descriptors: at most Limits.Depth directories open at once, the
//     root's included; a directory deeper than that is counted, not
//     entered (Stats.Pruned);
//   - time: each entry costs at most one Read's share and one Open, and
//     going back down to a Cursor at most Depth-1 Opens and Depth Resumes;
//     a Dir's Read must do work bounded by the entries it is asked for (a
//     fixed-size buffer, a page of a listing).
//
// A walk stops where its budget ran out and leaves a Cursor there (the
// names of the directories it was in and where it was in each: at most
// Depth of them), and the next walk given the cursor continues from it,
// so repeated walks of a tree larger than the budget cover all of it, and
// start over once one reaches its end.
package sweep

// Entry is one name in a directory.
type Entry struct {
	Name string
	Dir  bool  // a directory Walk may enter
	Next int64 // where the directory's reading continues after this entry (Dir.Resume)
}

// Dir is an open directory of a store's namespace; D is the store's own
// type, which visit gets back.
type Dir[D any] interface {
	// Read fills ents with the directory's next entries (at most
	// len(ents), never "." or ".."), answering how many: 0 at its end. Its
	// work must be bounded by len(ents) plus a fixed amount.
	Read(ents []Entry) (int, error)
	// Resume makes the next Read continue after the entry whose Next is
	// next (a position an earlier Read of the directory, or of another
	// opening of it, handed out).
	Resume(next int64) error
	// Open opens the subdirectory name, following no link.
	Open(name string) (D, error)
	// Close releases the directory.
	Close() error
}

// Limits bound a Walk.
type Limits struct {
	// Budget is how many entries Walk looks at (0 or less: none).
	Budget int
	// Depth is how many directories are open at once, the root's
	// included (0: DefaultDepth).
	Depth int
	// Batch is how many entries one Read asks for (0: DefaultBatch).
	Batch int
}

// DefaultDepth is Limits.Depth's default: deeper than a store's layout
// goes (the fs store's is the prefix's segments, v1, a fan-out directory
// and at most five more for a name under driver.MaxKeyBytes), and few
// enough descriptors for any process.
const DefaultDepth = 32

// DefaultBatch is Limits.Batch's default.
const DefaultBatch = 64

// Stats is what a Walk did.
type Stats struct {
	Looked  int // entries looked at (at most Limits.Budget)
	Deepest int // the most directories open at once, the root's included
	Pruned  int // directories not entered: at Limits.Depth
}

// Cursor is where a walk stopped: for each directory it was in, from the
// root down, the name of the directory (none for the root) and where its
// reading continues. The zero Cursor is the tree's start. A Cursor holds
// at most Limits.Depth names.
type Cursor struct{ marks []mark }

type mark struct {
	name string
	next int64
	seek bool // false: the directory's start
}

// AtStart reports whether c is the tree's start.
func (c *Cursor) AtStart() bool { return len(c.marks) == 0 }

type frame[D any] struct {
	dir  D
	name string  // the directory's name in its parent ("" for the root)
	ents []Entry // the batch read; i of them looked at
	i    int
	// next is where the directory's reading continues after the entries
	// looked at (seek false: its start).
	next int64
	seek bool
}

// Walk looks at up to l.Budget entries under root, depth first, from cur
// (nil or the zero Cursor: the start), calling visit for each entry that
// is not a directory with the directory it is in, the names of the
// directories from root down to that one (valid only during the call),
// and the entry. It enters a directory only while fewer than l.Depth are
// open, and closes every directory it opened (not root). It leaves in cur
// where it stopped: the zero Cursor when it reached the tree's end. It goes
// on past errors (of Read, Resume, Open, Close and visit) and answers the
// first.
func Walk[D Dir[D]](root D, l Limits, cur *Cursor, visit func(dir D, path []string, e Entry) error) (Stats, error) {
	if l.Depth <= 0 {
		l.Depth = DefaultDepth
	}
	if l.Batch <= 0 {
		l.Batch = DefaultBatch
	}
	if cur == nil {
		cur = &Cursor{}
	}
	var st Stats
	if l.Budget <= 0 {
		return st, nil
	}
	var first error
	fail := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	budget := l.Budget
	stack := make([]frame[D], 1, l.Depth)
	path := make([]string, 0, l.Depth)
	batches := make([][]Entry, l.Depth) // one per level, made when first used
	stack[0] = frame[D]{dir: root}
	// Go back down to where the last walk stopped: at most Depth-1 opens,
	// outside the budget (a budget smaller than the depth would otherwise
	// never get past them).
	for i, m := range cur.marks {
		top := &stack[len(stack)-1]
		if i > 0 {
			if len(stack) == l.Depth {
				break
			}
			sub, err := top.dir.Open(m.name)
			if err != nil { // gone or replaced since: its parent goes on past it
				fail(err)
				break
			}
			stack = append(stack, frame[D]{dir: sub, name: m.name})
			path = append(path, m.name)
			top = &stack[len(stack)-1]
		}
		if m.seek {
			if err := top.dir.Resume(m.next); err != nil {
				fail(err)
				break
			}
			top.next, top.seek = m.next, true
		}
	}
	st.Deepest = len(stack)
	for len(stack) > 0 {
		top := &stack[len(stack)-1]
		level := len(stack) - 1
		if top.i == len(top.ents) {
			if budget <= 0 {
				break
			}
			if batches[level] == nil {
				batches[level] = make([]Entry, l.Batch)
			}
			n, err := top.dir.Read(batches[level][:min(l.Batch, budget)])
			fail(err)
			if n == 0 || err != nil {
				pop(&stack, &path, fail)
				continue
			}
			top.ents, top.i = batches[level][:n], 0
		}
		e := top.ents[top.i]
		top.i++
		top.next, top.seek = e.Next, true
		budget--
		st.Looked++
		if !e.Dir {
			fail(visit(top.dir, path, e))
			continue
		}
		if len(stack) == l.Depth {
			st.Pruned++
			continue
		}
		sub, err := top.dir.Open(e.Name)
		if err != nil {
			fail(err)
			continue
		}
		stack = append(stack, frame[D]{dir: sub, name: e.Name})
		path = append(path, e.Name)
		st.Deepest = max(st.Deepest, len(stack))
	}
	// Where it stopped: each open directory's name and position. A batch
	// read but not looked at is read again by the next walk.
	cur.marks = cur.marks[:0]
	for _, f := range stack {
		cur.marks = append(cur.marks, mark{name: f.name, next: f.next, seek: f.seek})
	}
	for len(stack) > 0 {
		pop(&stack, &path, fail)
	}
	return st, first
}

// pop closes the top directory (not the root, the caller's) and leaves it.
func pop[D Dir[D]](stack *[]frame[D], path *[]string, fail func(error)) {
	s := *stack
	if len(s) > 1 {
		fail(s[len(s)-1].dir.Close())
		*path = (*path)[:len(*path)-1]
	}
	var zero frame[D]
	s[len(s)-1] = zero
	*stack = s[:len(s)-1]
}

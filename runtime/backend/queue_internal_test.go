package backend

import "testing"

// TestQueueIsFIFOAndKeepsItsArrayOnceWarm: batches come out in the order
// they went in, across the compaction that keeps a never-empty queue from
// growing; an emptied queue keeps its array (no allocation per
// submission) unless it grew past maxIdleQueue.
func TestQueueIsFIFOAndKeepsItsArrayOnceWarm(t *testing.T) {
	bs := make([]*batch, 3*maxIdleQueue)
	for i := range bs {
		bs[i] = &batch{first: i}
	}
	var q queue
	next, in := 0, 16
	q.push(bs[:in])
	// Push one, pop one, over and over: never empty, so only compaction
	// keeps the array from growing with every push.
	for in < len(bs) {
		q.push(bs[in : in+1])
		in++
		if got := q.pop(); got.first != next {
			t.Fatalf("popped batch %d, want %d", got.first, next)
		}
		next++
		if cap(q.items) > 64 {
			t.Fatalf("%d queued in an array of %d: the taken front was never reclaimed", q.len(), cap(q.items))
		}
	}
	q.push(bs[:2*maxIdleQueue]) // a long view: the array grows past maxIdleQueue
	in += 2 * maxIdleQueue
	for q.len() > 0 {
		want := next
		if next >= len(bs) {
			want = next - len(bs)
		}
		if got := q.pop(); got.first != want {
			t.Fatalf("popped batch %d, want %d", got.first, want)
		}
		next++
	}
	if next != in {
		t.Fatalf("popped %d of %d", next, in)
	}
	if q.items != nil {
		t.Fatalf("an emptied queue with room for %d batches kept its array", cap(q.items))
	}

	q.push(bs[:4])
	for q.len() > 0 {
		q.pop()
	}
	if cap(q.items) < 4 {
		t.Fatalf("a small emptied queue let its array go (cap %d)", cap(q.items))
	}
	allocs := testing.AllocsPerRun(100, func() {
		q.push(bs[:4])
		for q.len() > 0 {
			q.pop()
		}
	})
	if allocs != 0 {
		t.Fatalf("a warm queue allocated %v times per fill and drain", allocs)
	}
	for _, b := range q.items[:cap(q.items)] {
		if b != nil {
			t.Fatal("a taken batch is still referenced by the queue's array")
		}
	}
}

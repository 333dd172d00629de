package driverkit

import "testing"

func TestStackGivesTheLastPutFirstThenNew(t *testing.T) {
	var k Stack[int]
	a, b := new(int), new(int)
	k.Put(a)
	k.Put(b)
	if k.Len() != 2 {
		t.Fatalf("Len = %d, want 2", k.Len())
	}
	for i, want := range []*int{b, a} {
		if got := k.Get(); got != want {
			t.Fatalf("Get %d returned %p, want %p (the one put last first)", i, got, want)
		}
	}
	if v := k.Get(); v == a || v == b || v == nil || *v != 0 {
		t.Fatalf("Get of an empty stack returned %p (%v), want a new zero value", v, v)
	}
	if k.Len() != 0 {
		t.Fatalf("Len = %d, want 0", k.Len())
	}
}

func TestStackForgetsWhatItGave(t *testing.T) {
	var k Stack[int]
	k.Put(new(int))
	k.Get()
	if k.s[:1][0] != nil {
		t.Fatal("the stack's array still points at a value it gave out")
	}
}

func TestResize(t *testing.T) {
	b := make([]int, 2, 8)
	b[0] = 7
	for _, c := range []struct {
		n       int
		sameArr bool
	}{{0, true}, {5, true}, {8, true}, {9, false}} {
		got := Resize(b, c.n)
		if len(got) != c.n {
			t.Errorf("Resize(len 2 cap 8, %d) has length %d", c.n, len(got))
		}
		if same := c.n > 0 && &got[0] == &b[:1][0]; c.n > 0 && same != c.sameArr {
			t.Errorf("Resize(len 2 cap 8, %d) reused the array: %v, want %v", c.n, same, c.sameArr)
		}
	}
	if Resize(b, 5)[0] != 7 {
		t.Error("Resize cleared an element it reused")
	}
}

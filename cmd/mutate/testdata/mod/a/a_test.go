package a

import "testing"

// Only Clamp's lower bound is tested here; b's tests test the upper.
func TestClampLow(t *testing.T) {
	if got := Clamp(-1, 0, 10); got != 0 {
		t.Fatalf("Clamp(-1, 0, 10) = %d", got)
	}
}

func TestSum(t *testing.T) {
	if got := Sum(4); got != 6 {
		t.Fatalf("Sum(4) = %d", got)
	}
}

package b

import "testing"

func TestTop(t *testing.T) {
	if got := Top(11); got != 10 {
		t.Fatalf("Top(11) = %d", got)
	}
}

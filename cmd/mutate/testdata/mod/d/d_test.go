package d

import (
	"testing"
	"time"
)

// TestSlow takes 4 s on a mutant that makes Slow true: slower than the
// tool's test's -timeout, well within its CI -timeout.
func TestSlow(t *testing.T) {
	if Slow() {
		time.Sleep(4 * time.Second)
	}
}

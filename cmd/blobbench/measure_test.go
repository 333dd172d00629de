package main

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNumGCCountsCollections: numGC counts the collections completed so
// far, so a phase's count (numGC after it less numGC before) is the
// collections during it: one forced in between counts.
func TestNumGCCountsCollections(t *testing.T) {
	before := numGC()
	runtime.GC()
	assert.Greater(t, numGC(), before)
}

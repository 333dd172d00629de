package main

import (
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNumGCCountsCollections: numGC counts the collections completed so
// far, so a phase's count (numGC after it less numGC before) is the
// collections during it: one forced in between counts.
func TestNumGCCountsCollections(t *testing.T) {
	before := numGC()
	runtime.GC()
	assert.Greater(t, numGC(), before)
}

// TestMeasureStopsTheStoresItStarted: measure stops every store it
// started before it returns, not only at the run's end: the fs store's
// directory is gone from -fs-dir once a measurement of it returned.
func TestMeasureStopsTheStoresItStarted(t *testing.T) {
	parent := t.TempDir()
	fsDirFlag = parent
	defer func() { fsDirFlag = "" }()
	defer cleanupAll() // what measure left, should this test fail
	p := plan{reps: 1, viewBytes: 64 << 10, bytesPerCall: 64 << 10, rowsPerCall: 1, rowSizes: []int64{64 << 10}, workers: []int{1},
		latencyFetches: 1, latencyBudget: time.Millisecond, latencyRows: 1, rowOpsRows: 1, rowOpsViews: 1, scalingOps: 1, stores: []string{"fs"}}
	rep, err := measure(p, io.Discard)
	require.NoError(t, err)
	require.Len(t, rep.Bandwidth, 1, "the fs store was measured")
	left, err := os.ReadDir(parent)
	require.NoError(t, err)
	assert.Empty(t, left, "measure returned with the fs store's directory still in -fs-dir")
}

package scalebench_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/internal/scalebench"
	"github.com/kvblob/kvblob/runtime/backend"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestWorkloadsRunAndClose runs each workload past its ring or view size,
// so that it settles attempts it submitted itself, and closes cleanly. It
// asserts that the work was done, never a speed.
func TestWorkloadsRunAndClose(t *testing.T) {
	r, err := scalebench.New(16, backend.Config{Workers: 2, RowsPerBatch: 1})
	require.NoError(t, err)
	el, err := r.Outstanding(40)
	require.NoError(t, err)
	assert.Positive(t, el)
	el, rows, err := r.Views(40)
	require.NoError(t, err)
	assert.Positive(t, el)
	assert.Equal(t, 48, rows, "whole views of 16 rows until at least 40")
	require.NoError(t, r.Close())
}

func TestHandoffEnds(t *testing.T) {
	assert.Positive(t, scalebench.Handoff(100), "its goroutine ends (goleak checks)")
}

// BenchmarkHandoff reports the two goroutine hand-offs alone; compare with
// runtime/backend's BenchmarkBatchesPerView/batches=1 in the same run.
func BenchmarkHandoff(b *testing.B) {
	el := scalebench.Handoff(b.N)
	b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/round-trip")
}

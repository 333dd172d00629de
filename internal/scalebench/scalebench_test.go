package scalebench_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/internal/scalebench"
	"github.com/kvblob/kvblob/runtime/backend"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestWorkloadsRunAndClose runs each workload past its ring or view size,
// so that it settles attempts it submitted itself, and closes cleanly. It
// asserts that the work was done (every batch it says it ran settled),
// never a speed. (Tried: Outstanding's loop as i >= ops fails it.)
func TestWorkloadsRunAndClose(t *testing.T) {
	r, err := scalebench.New(16, backend.Config{Workers: 2, RowsPerBatch: 1})
	require.NoError(t, err)
	before := r.Stats().BatchesSettled
	el, err := r.Outstanding(40)
	require.NoError(t, err)
	assert.Positive(t, el)
	assert.Equal(t, 16+40, r.Stats().BatchesSettled-before, "the ring's 16 one-row fetches, then 40 settled and replaced, each its own batch")
	el, rows, err := r.Views(40)
	require.NoError(t, err)
	assert.Positive(t, el)
	assert.Equal(t, 48, rows, "whole views of 16 rows until at least 40")
	assert.Equal(t, 16+40+48, r.Stats().BatchesSettled-before, "each view settled before Views returned")
	require.NoError(t, r.Close())
}

// TestAWorkloadOverAShutDownRigFails: a workload whose fetch the backend
// refuses returns that refusal, with no time and no rows, instead of
// waiting on an attempt it never got.
func TestAWorkloadOverAShutDownRigFails(t *testing.T) {
	r, err := scalebench.New(4, backend.Config{Workers: 1, RowsPerBatch: 1})
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	require.NoError(t, r.Shutdown(context.Background()))
	el, rows, err := r.Views(8)
	assert.Error(t, err, "Views over a shut-down backend")
	assert.Zero(t, el)
	assert.Zero(t, rows)
	el, err = r.Outstanding(8)
	assert.Error(t, err, "Outstanding over a shut-down backend")
	assert.Zero(t, el)
}

func TestHandoffEnds(t *testing.T) {
	// A hundred round trips take microseconds; a broken hand-off that
	// parks for ever fails here, naming it, not at the binary's -timeout.
	el := bound.Value(t, 30*time.Second, "Handoff(100)", func() time.Duration { return scalebench.Handoff(100) })
	assert.Positive(t, el, "its goroutine ends (goleak checks)")
}

// BenchmarkHandoff reports the two goroutine hand-offs alone; compare with
// runtime/backend's BenchmarkBatchesPerView/batches=1 in the same run.
func BenchmarkHandoff(b *testing.B) {
	el := scalebench.Handoff(b.N)
	b.ReportMetric(float64(el.Nanoseconds())/float64(b.N), "ns/round-trip")
}

// TestTheSizesAreTheOnesTheDocsName: the outstanding-attempt counts and
// view sizes blobbench times are the ones its package doc lists and the
// README's range spans, so a reader of either knows which sizes a
// blobbench.json holds.
func TestTheSizesAreTheOnesTheDocsName(t *testing.T) {
	// 4096 as "4,096", as the docs write a number.
	num := func(n int) string {
		s := strconv.Itoa(n)
		if len(s) > 3 {
			s = s[:len(s)-3] + "," + s[len(s)-3:]
		}
		return s
	}
	list := func(ns []int) string {
		var s []string
		for _, n := range ns {
			s = append(s, num(n))
		}
		return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
	}
	// says asserts that the file at path, its comment markers and line
	// breaks made single spaces, holds want.
	says := func(path, want string) {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		text := strings.Join(strings.Fields(strings.ReplaceAll(string(b), "//", " ")), " ")
		assert.True(t, strings.Contains(text, want), "%s does not say %q", path, want)
	}
	a, v := scalebench.Attempts, scalebench.BatchesPerView
	says("../../cmd/blobbench/main.go", fmt.Sprintf("with %s one-row fetches outstanding, and over views of %s one-row batches", list(a), list(v)))
	says("../../README.md", fmt.Sprintf("(%s to %s attempts outstanding, %s to %s batches per view", num(a[0]), num(a[len(a)-1]), num(v[0]), num(v[len(v)-1])))
}

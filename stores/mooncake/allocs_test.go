package mooncake_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/kvblob/kvblob/internal/bound"
	"github.com/kvblob/kvblob/runtime/driver"
)

// TestCallsAllocateWhatTheyReturn pins what a put and a get through the
// driver over the fake take from the Go heap once warm: the operation (its
// results apart when it has more than one row), the lifecycle's call and
// one answer per SDK call (a put makes three: start, scatter, end; a get
// one), whatever the row count. blobbench's loaded phase makes thousands
// of these next to its timed fetches, and their garbage brought
// collections into it.
func TestCallsAllocateWhatTheyReturn(t *testing.T) {
	for _, n := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d rows", n), func(t *testing.T) {
			f := newFx(t)
			var src, dst []driver.Row
			for i := 0; i < n; i++ {
				key := fmt.Sprintf("k%d", i)
				src, dst = append(src, f.row(key, i)), append(dst, f.row(key, n+i))
			}
			var res []driver.Result
			var err error
			put := func() {
				for _, r := range src {
					f.m.Delete(r.Key)
				}
				var op driver.Operation
				if op, err = f.d.Put(context.Background(), src); err == nil {
					res, _ = op.Poll()
				}
			}
			get := func() {
				var op driver.Operation
				if op, err = f.d.Get(context.Background(), dst, driver.Hint{}); err == nil {
					res, _ = op.Poll()
				}
			}
			ready := func(call string) {
				t.Helper()
				if assert.NoError(t, err) {
					for i, r := range res {
						assert.Equal(t, driver.Ready, r.Status, "%s row %d: %s", call, i, r.Text)
					}
				}
			}
			// warm: the driver's and the fake's working space, their maps;
			// bounded, since a lock a broken line never releases would block
			// here for good
			bound.Within(t, 10*time.Second, "a warm put and get", func() { put(); get() })
			results := 0.0
			if n > 1 {
				results = 1
			}
			assert.LessOrEqual(t, testing.AllocsPerRun(100, put), 5+results, "put: the op, the call, three answers")
			ready("put")
			assert.LessOrEqual(t, testing.AllocsPerRun(100, get), 3+results, "get: the op, the call, one answer")
			ready("get")
		})
	}
}

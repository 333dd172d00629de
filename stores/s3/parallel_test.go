package s3

import (
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"

	s3gen "github.com/kvblob/kvblob/generated/s3"
)

// TestInParallelKeepsAtMostLimitPartsInFlight: a large row's parts go
// limit at a time (Options.PartsInFlight), never more: with every part
// held, exactly min(n, limit) are in flight once every goroutine is
// blocked (synctest's Wait counts exactly, no sleep), and each part that
// returns lets exactly one more start; a failure among the last is the
// answer. (Tried: `for range min(n, limit)` as `for range n` fails "in
// flight at once".)
func TestInParallelKeepsAtMostLimitPartsInFlight(t *testing.T) {
	for _, c := range []struct {
		name     string
		n, limit int
	}{
		{"more parts than the limit", 9, 4},
		{"one at a time", 3, 1},
		{"fewer parts than the limit", 2, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				type answer struct {
					code s3gen.Code
					err  error
				}
				done := make(chan answer, 1)
				release := make([]chan s3gen.Code, c.n) // buffered: a failed check releases every part and returns
				for i := range release {
					release[i] = make(chan s3gen.Code, 1)
				}
				next := 0
				fail := func(format string, args ...any) {
					t.Errorf(format, args...)
					for ; next < c.n; next++ {
						release[next] <- s3gen.OK
					}
					<-done
				}
				var started [64]atomic.Bool
				var inFlight atomic.Int32
				go func() {
					code, err := inParallel(c.n, c.limit, func(i int) (s3gen.Code, error) {
						started[i].Store(true)
						inFlight.Add(1)
						defer inFlight.Add(-1)
						if code := <-release[i]; code != s3gen.OK {
							return code, errors.New("part failed")
						}
						return s3gen.OK, nil
					})
					done <- answer{code, err}
				}()
				count := func() (n int, which []int) {
					for i := range c.n {
						if started[i].Load() {
							n++
							which = append(which, i)
						}
					}
					return
				}
				synctest.Wait()
				want := min(c.n, c.limit)
				if got := int(inFlight.Load()); got != want {
					fail("%d parts in flight at once, want %d", got, want)
					return
				}
				// Each part that returns lets one more start, never more.
				for i := 0; i < c.n-want; i++ {
					release[next] <- s3gen.OK
					next++
					synctest.Wait()
					if n, which := count(); n != want+i+1 || int(inFlight.Load()) != want {
						fail("after %d parts returned: %d started (%v), %d in flight; want %d started, %d in flight", i+1, n, which, inFlight.Load(), want+i+1, want)
						return
					}
				}
				// The rest return; the first of them fails.
				for ; next < c.n; next++ {
					code := s3gen.OK
					if next == c.n-want {
						code = s3gen.Code(-7)
					}
					release[next] <- code
				}
				a := <-done
				if a.code != s3gen.Code(-7) || a.err == nil {
					t.Fatalf("inParallel answered %v, %v; want the failure's code -7 and its error", a.code, a.err)
				}
			})
		})
	}
}

// TestInParallelStartsNoPartAfterAFailure: once a part failed, no part
// starts; the parts in flight finish and the failure is the answer.
// (Tried: the workers' stop taken as false fails it.)
func TestInParallelStartsNoPartAfterAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n, limit = 6, 2
		release := make([]chan s3gen.Code, n)
		for i := range release {
			release[i] = make(chan s3gen.Code)
		}
		var started [n]atomic.Bool
		done := make(chan s3gen.Code, 1)
		go func() {
			code, _ := inParallel(n, limit, func(i int) (s3gen.Code, error) {
				started[i].Store(true)
				if code := <-release[i]; code != s3gen.OK {
					return code, errors.New("part failed")
				}
				return s3gen.OK, nil
			})
			done <- code
		}()
		synctest.Wait()
		release[0] <- s3gen.Code(-7) // part 0 fails while part 1 is in flight
		synctest.Wait()
		for i := 2; i < n; i++ {
			if started[i].Load() {
				t.Errorf("part %d started after part 0 failed", i)
			}
		}
		release[1] <- s3gen.OK
		if code := <-done; code != s3gen.Code(-7) {
			t.Errorf("inParallel answered %v, want the failure's code -7", code)
		}
	})
}

package backend

import "context"

// UnregisterTries is unregisterTries, for the external tests of the bound.
const UnregisterTries = unregisterTries

// HoldCtxEndCancel makes every attempt submitted from now on, when its ctx
// ends, wait until release is closed before it cancels itself: the window
// in which a worker may take a batch whose ctx has ended is held open.
// restore puts context.AfterFunc back; no test may run beside it.
func HoldCtxEndCancel(release <-chan struct{}) (restore func()) {
	afterFunc = func(ctx context.Context, f func()) func() bool {
		return context.AfterFunc(ctx, func() { <-release; f() })
	}
	return func() { afterFunc = context.AfterFunc }
}

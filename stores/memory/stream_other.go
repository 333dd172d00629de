//go:build !amd64

package memory

// canStream: no non-temporal copy here; stream copies as copy does.
const canStream = false

func streamLines(dst, src *byte, n int) { panic("memory: streamLines without non-temporal stores") }

// prefetchLines: no prefetch here; prefetch asks for nothing.
func prefetchLines(p *byte, n int) {}

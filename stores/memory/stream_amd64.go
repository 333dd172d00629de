package memory

// canStream: amd64 has non-temporal stores (SSE2's MOVNTDQ, in every
// amd64 processor).
const canStream = true

// streamLines copies n bytes, a multiple of 64, from src to dst, 16-byte
// aligned, with non-temporal stores, and fences them (SFENCE) so they are
// ordered before any store that follows, as every other store is: the
// lock release that publishes the object then publishes its bytes too.
//
//go:noescape
func streamLines(dst, src *byte, n int)

// prefetchLines asks for the n bytes from p into the cache (PREFETCHT0),
// without waiting for them: a hint, which reads nothing the program sees.
//
//go:noescape
func prefetchLines(p *byte, n int)

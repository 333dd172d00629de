//go:build !linux

package fakesdk

const reserveBytes = 0

// reserve declines: the master grows a heap slice.
func reserve(*Master, int64) []byte { return nil }

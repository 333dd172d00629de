//go:build never

package e

// Never is left out of every build CI makes.
func Never(v int) bool { return v > 0 }

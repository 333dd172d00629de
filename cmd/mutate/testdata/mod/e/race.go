//go:build race

package e

// Race is built with -race, as CI's tests build it.
func Race(v int) bool { return v < 0 }

//go:build !race

package e

// NoRace is built without -race only: CI's tests never compile it.
func NoRace(v int) bool { return v > 0 }

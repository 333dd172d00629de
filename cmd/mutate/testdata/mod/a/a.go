// Package a is what the mutate tool's test mutates.
package a

// Clamp returns v limited to [lo, hi].
func Clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// Sum returns 0+1+...+(n-1).
func Sum(n int) int {
	s := 0
	i := 0
	for i < n {
		s += i
		i++
	}
	return s
}

// Unused is called by no test.
func Unused(v int) int {
	if v > 0 {
		return 1
	}
	return 0
}

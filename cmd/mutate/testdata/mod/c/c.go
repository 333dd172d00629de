// Package c's tests fail unmutated.
package c

// One returns 2.
func One() int { return 2 }

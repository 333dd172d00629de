// Package d is what the mutate tool's test of a slow mutant mutates.
package d

// Slow reports whether TestSlow waits: never, unmutated.
func Slow() bool { return 1 > 2 }

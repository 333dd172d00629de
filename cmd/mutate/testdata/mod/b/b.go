// Package b imports a.
package b

import "example.com/mod/a"

// Top clamps v to [0, 10].
func Top(v int) int { return a.Clamp(v, 0, 10) }

package main

import (
	"fmt"
	"io"
)

func runGate(args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "drivergen gate: not built yet (issue 8)")
	return 0
}

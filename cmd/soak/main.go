// Command soak runs kvblob's randomized fault soak (package soak) for a
// bounded time and prints attempts run, faults injected by kind and
// invariant violations. It exits 1 on any violation.
//
//	go run ./cmd/soak [-duration 60s] [-seed N] [-attempts N] [-store mooncake|memory]...
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kvblob/kvblob/internal/soak"
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

type stores []string

func (s *stores) String() string     { return fmt.Sprint(*s) }
func (s *stores) Set(v string) error { *s = append(*s, v); return nil }

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	duration := fs.Duration("duration", 60*time.Second, "how long to soak")
	seed := fs.Int64("seed", time.Now().UnixNano(), "fault plan seed (printed; pass it again to replay the plan)")
	attempts := fs.Int("attempts", 0, "stop after this many attempts (0: run for -duration)")
	var st stores
	fs.Var(&st, "store", "store to soak: mooncake or memory (repeatable; default both)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if *duration <= 0 || *attempts < 0 {
		fmt.Fprintln(stderr, "soak: -duration must be positive and -attempts not negative")
		return 2
	}
	for _, s := range st {
		if s != "mooncake" && s != "memory" {
			fmt.Fprintf(stderr, "soak: unknown store %q; want mooncake or memory\n", s)
			return 2
		}
	}
	fmt.Fprintf(stderr, "soak: seed %d for %v\n", *seed, *duration)
	rep := soak.Run(soak.Config{Seed: *seed, Duration: *duration, Attempts: *attempts, Stores: st, Progress: stderr})
	fmt.Fprint(stdout, rep.String())
	return exitCode(rep)
}

// exitCode is 1 when the soak found any invariant violation, else 0.
func exitCode(rep soak.Report) int {
	if len(rep.Violations) > 0 {
		return 1
	}
	return 0
}

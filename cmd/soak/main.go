// Command soak runs kvblob's randomized fault soak for a bounded time and
// prints attempts run, faults injected by kind and invariant violations.
// It exits 1 on any violation.
//
//	go run ./cmd/soak [-duration 60s] [-seed N] [-attempts N] [-store mooncake|memory]...
//
// The soak runs the backend against stores that answer badly on purpose,
// and checks after every step that nothing is lost and no memory is freed
// early.
//
// A run is a sequence of epochs. Each epoch builds a backend over a guarded
// region and a chaotic driver (the fake Mooncake 0.3.13 SDK or the memory
// store), submits publishes and fetches of rows whose content is a function
// of their name, cancels some, and ends in a Shutdown with a random budget.
// Faults come from a seeded generator: random codes on every call, delays,
// raises, wrong answer counts, TRANSFER_FAIL on gets with the transfer still
// writing, puts stuck past the discard timeout, lost access evidence.
//
// Invariants, checked after every step:
//   - no region is unregistered and no hold released while an operation on
//     it may still touch it;
//   - every READY row reads back byte for byte (a fetched slot holds its
//     name's content; a published object holds it);
//   - no byte outside a span changes (guarded memory);
//   - Shutdown returns within its budget;
//   - a slot is reused only after its attempt quiesced (a transfer still
//     running after TRANSFER_FAIL would otherwise corrupt a later row).
//
// The fault plan is reproducible by seed; goroutine scheduling is not, so a
// violation names the seed and the step to start from.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"
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
	rep := Run(Config{Seed: *seed, Duration: *duration, Attempts: *attempts, Stores: st, Progress: stderr})
	fmt.Fprint(stdout, rep.String())
	return exitCode(rep)
}

// exitCode is 1 when the soak found any invariant violation, else 0.
func exitCode(rep Report) int {
	if len(rep.Violations) > 0 {
		return 1
	}
	return 0
}

package main

import (
	"fmt"
	"io"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"time"
)

// Config configures a run.
type Config struct {
	Seed int64
	// Duration bounds the run; Attempts, when positive, stops it sooner.
	Duration time.Duration
	Attempts int
	// Until, when set, keeps the run going past Attempts (within Duration)
	// until it reports true of the report so far, asked after each epoch:
	// a test that asserts what the run covered (a fault of each kind, a
	// READY row of an attempt that never quiesced) runs until it saw it,
	// however the scheduler interleaved the goroutines that draw from the
	// shared dice, instead of hoping a fixed count of attempts got there.
	Until func(Report) bool
	// Stores to soak, in turn: "mooncake", "memory" (default both).
	Stores []string
	// Progress receives a line about once a second (nil: none).
	Progress io.Writer
}

// Report is what a run did and found.
type Report struct {
	Seed        int64
	Attempts    int
	Epochs      int
	RowsReady   int
	RowsChecked int
	// RowsCheckedUnquiesced are the READY rows of attempts that never
	// quiesced, checked at the end of their epoch.
	RowsCheckedUnquiesced int
	// RowsGone are published READY rows whose object the store no longer
	// held when checked (evicted or expired): not checkable, not wrong.
	RowsGone        int
	Shutdowns       int
	ShutdownsPinned int
	SlotsPinned     int
	Faults          map[string]int
	Violations      []string
	Elapsed         time.Duration
}

// String prints the report as make soak shows it.
func (r Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak: seed %d, %v\n", r.Seed, r.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(&b, "  attempts run:        %d (in %d epochs)\n", r.Attempts, r.Epochs)
	fmt.Fprintf(&b, "  rows READY checked:  %d of %d READY, %d of them at the end (attempts that never quiesced)\n", r.RowsChecked+r.RowsCheckedUnquiesced, r.RowsReady, r.RowsCheckedUnquiesced)
	fmt.Fprintf(&b, "  published READY rows gone when checked (evicted, expired): %d\n", r.RowsGone)
	fmt.Fprintf(&b, "  shutdowns:           %d (%d pinned by unprovable calls)\n", r.Shutdowns, r.ShutdownsPinned)
	fmt.Fprintf(&b, "  slots kept pinned:   %d\n", r.SlotsPinned)
	fmt.Fprintf(&b, "  faults injected by kind:\n")
	kinds := make([]string, 0, len(r.Faults))
	for k := range r.Faults {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		fmt.Fprintf(&b, "    %-22s %d\n", k, r.Faults[k])
	}
	fmt.Fprintf(&b, "  invariant violations: %d\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "    %s\n", v)
	}
	return b.String()
}

// tally counts faults and violations from many goroutines.
type tally struct {
	mu         sync.Mutex
	faults     map[string]int
	violations []string
}

func (t *tally) fault(kind string) {
	t.mu.Lock()
	t.faults[kind]++
	t.mu.Unlock()
}

// snapshot is rep with the faults and violations tallied so far.
func (t *tally) snapshot(rep Report) Report {
	t.mu.Lock()
	defer t.mu.Unlock()
	rep.Faults = make(map[string]int, len(t.faults))
	for k, n := range t.faults {
		rep.Faults[k] = n
	}
	rep.Violations = append([]string(nil), t.violations...)
	return rep
}

func (t *tally) violation(format string, args ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.violations) < 100 {
		t.violations = append(t.violations, fmt.Sprintf(format, args...))
	}
}

// Run soaks until cfg.Duration passes or cfg.Attempts attempts ran.
func Run(cfg Config) Report {
	if len(cfg.Stores) == 0 {
		cfg.Stores = []string{"mooncake", "memory"}
	}
	start := time.Now()
	deadline := start.Add(cfg.Duration)
	rng := rand.New(rand.NewSource(cfg.Seed))
	t := &tally{faults: map[string]int{}}
	rep := Report{Seed: cfg.Seed}
	lastProgress := start
	for e := 0; ; e++ {
		if time.Now().After(deadline) || (cfg.Attempts > 0 && rep.Attempts >= cfg.Attempts && (cfg.Until == nil || cfg.Until(t.snapshot(rep)))) {
			break
		}
		store := cfg.Stores[e%len(cfg.Stores)]
		left := 0
		if cfg.Attempts > 0 {
			left = cfg.Attempts - rep.Attempts
		}
		ep, err := newEpoch(store, rand.New(rand.NewSource(rng.Int63())), t)
		if err != nil {
			t.violation("epoch %d (%s): could not start: %v", e, store, err)
			break
		}
		ep.run(deadline, left, &rep)
		rep.Epochs++
		if cfg.Progress != nil && time.Since(lastProgress) > time.Second {
			lastProgress = time.Now()
			t.mu.Lock()
			fmt.Fprintf(cfg.Progress, "soak: %v: %d attempts, %d epochs, %d violations\n",
				time.Since(start).Round(time.Second), rep.Attempts, rep.Epochs, len(t.violations))
			t.mu.Unlock()
		}
	}
	rep.Elapsed = time.Since(start)
	rep.Faults = t.faults
	rep.Violations = t.violations
	return rep
}

package main

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of /proc/stat's CPU times: USER_HZ, 100 on every
// architecture Linux runs Go on.
const userHZ = 100

// cpuClock reads, at one moment, how much CPU time the machine has spent
// busy since boot and how much of it was this process's (its own, and its
// children's once waited for: the servers it started and stopped). Over a
// run, busy less own is what other processes took: a run's figures are
// only as good as the machine was quiet, and the load average at the start
// does not say what came later.
type cpuClock struct {
	busy, own time.Duration
	ok        bool // false where /proc/stat is missing or unreadable
}

func readCPUClock() cpuClock {
	var c cpuClock
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		c.busy, c.ok = machineBusy(string(b))
	}
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			c.own += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return c
}

// machineBusy is the busy CPU time in /proc/stat's aggregate "cpu" line:
// user, nice, system, irq and softirq. Not idle nor iowait (no CPU ran a
// task), nor steal (the hypervisor ran another machine's), nor guest and
// guest_nice, which user and nice already hold.
func machineBusy(stat string) (time.Duration, bool) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, false
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} { // user nice system (idle iowait) irq softirq
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, true
}

// othersSince is the CPU time other processes took between start and now,
// and this process's own; ok is false where the machine's is unknown.
func othersSince(start cpuClock) (others, own time.Duration, ok bool) {
	return start.until(readCPUClock())
}

// until is othersSince between the readings c and then.
func (c cpuClock) until(then cpuClock) (others, own time.Duration, ok bool) {
	own = then.own - c.own
	if !c.ok || !then.ok {
		return 0, own, false
	}
	// The two clocks tick apart (/proc/stat in whole ticks): a quiet run
	// can read a few ticks under its own time.
	return max(0, then.busy-c.busy-own), own, true
}

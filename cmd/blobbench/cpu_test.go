package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMachineBusyCountsOnlyTimeATaskRan: the machine's busy time is user,
// nice, system, irq and softirq of /proc/stat's aggregate line, in
// USER_HZ ticks; idle, iowait and steal are not, and anything but that
// line is refused rather than read as zero. (Tried: adding idle fails the
// first case; dropping softirq fails it too.)
func TestMachineBusyCountsOnlyTimeATaskRan(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
		ok         bool
	}{
		{"aggregate", "cpu  100 20 30 1000 50 5 6 7 0 0\ncpu0 1 1 1 1 1 1 1 1 0 0\n", 1610 * time.Millisecond, true},
		{"no steal or guest columns (old kernels)", "cpu 1 2 3 4 5 6 7\n", 190 * time.Millisecond, true},
		{"a CPU's line, not the aggregate", "cpu0 1 2 3 4 5 6 7 8\n", 0, false},
		{"too few columns", "cpu 1 2 3\n", 0, false},
		{"not a number", "cpu 1 x 3 4 5 6 7 8\n", 0, false},
		{"empty", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := machineBusy(tc.stat)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestTheTableSaysWhatOthersTook: the table's first line gives the run's
// CPU time and other processes', or says the latter is unknown.
func TestTheTableSaysWhatOthersTook(t *testing.T) {
	o := 12.34
	assert.Equal(t, "the run took 100.0 s of CPU and other processes 12.3 s meanwhile", othersLine(planJSON{OwnCPUSeconds: 100, OthersCPUSeconds: &o}))
	assert.Equal(t, "the run took 100.0 s of CPU (others' unknown: no /proc/stat)", othersLine(planJSON{OwnCPUSeconds: 100}))
}

// TestOthersAreTheMachinesBusyTimeLessTheRuns: between two readings,
// other processes took the machine's busy time less the run's own (never
// below zero: the clocks tick apart), and nothing is claimed where either
// reading lacks the machine's. (Tried: not subtracting the run's own time
// fails the first case.)
func TestOthersAreTheMachinesBusyTimeLessTheRuns(t *testing.T) {
	at := func(busy, own time.Duration, ok bool) cpuClock { return cpuClock{busy: busy, own: own, ok: ok} }
	for _, tc := range []struct {
		name        string
		from, to    cpuClock
		others, own time.Duration
		ok          bool
	}{
		{"others ran", at(10*time.Second, time.Second, true), at(40*time.Second, 21*time.Second, true), 10 * time.Second, 20 * time.Second, true},
		{"a quiet run reads a tick under its own", at(10*time.Second, time.Second, true), at(30*time.Second, 21*time.Second+5*time.Millisecond, true), 0, 20*time.Second + 5*time.Millisecond, true},
		{"no /proc/stat", at(0, time.Second, false), at(0, 3*time.Second, false), 0, 2 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			others, own, ok := tc.from.until(tc.to)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.others, others)
			assert.Equal(t, tc.own, own)
		})
	}
	// A real reading: this process has run, and the machine has been busy.
	if c := readCPUClock(); c.ok {
		assert.Positive(t, c.own)
		assert.Positive(t, c.busy)
	}
}

func TestBusyCoresAreTheMachinesBusyTimeOverTheStepsWallTime(t *testing.T) {
	at := func(busy time.Duration) cpuClock { return cpuClock{busy: busy, ok: true} }
	var b busyTally
	_, ok := b.cores("off")
	assert.False(t, ok, "nothing counted")
	b.add(at(time.Second), at(time.Second+30*time.Millisecond), 20*time.Millisecond, false)
	b.add(at(0), at(10*time.Millisecond), 20*time.Millisecond, false)
	_, ok = b.cores("off")
	assert.False(t, ok, "no fetch counted")
	b.add(at(0), at(50*time.Millisecond), 25*time.Millisecond, true)
	b.add(cpuClock{}, at(time.Hour), time.Millisecond, true) // a reading without /proc/stat: not counted
	c, ok := b.cores("keyed")
	require.True(t, ok)
	assert.Equal(t, wayCores{Way: "keyed", Publish: 1, Fetch: 2, PublishSeconds: 0.04, FetchSeconds: 0.025}, c, "40 ms busy in 40 ms of publishes, 50 in 25 of fetches")
}

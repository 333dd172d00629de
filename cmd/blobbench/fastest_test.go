package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestFastestTakesEachTimesShortestRoundApart: fastest takes each time
// (put, get, session, checked) from whichever round had it shortest, each
// apart: the fixtures put each one's shortest in another round than the
// first (and than each other's), so a fastest that kept the first round's
// value for any of them, or skipped a round, differs here from the right
// answer (TestARepTakesEachSidesFastestRound's gets are fastest in the
// first round, and its session and checked times are all zero). (Tried:
// keeping the first round's get, and looping over t[2:], each fail.)
func TestFastestTakesEachTimesShortestRoundApart(t *testing.T) {
	ms := func(d int) time.Duration { return time.Duration(d) * time.Millisecond }
	rounds := []plainTimes{
		{put: ms(30), get: ms(25), session: ms(9), checked: ms(40)},
		{put: ms(10), get: ms(15), session: ms(7), checked: ms(50)},
		{put: ms(20), get: ms(5), session: ms(8), checked: ms(35)},
	}
	assert.Equal(t, plainTimes{put: ms(10), get: ms(5), session: ms(7), checked: ms(35)}, fastest(rounds))
	assert.Equal(t, rounds[1], fastest(rounds[1:2]), "one round is its own figure")
	assert.Equal(t, plainTimes{}, fastest(nil), "no rounds: the zero times")
}

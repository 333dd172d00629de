package s3_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kvblob/kvblob/stores/s3"
)

// TestRangeTotalIsTheLengthAContentRangeNames: a ranged GET's object
// length is the number after the slash of "bytes first-last/total", and a
// Content-Range that names none (an unknown "*" length, a negative or
// unparsable one, no slash, another unit) gives no length, so the get
// faults naming the header rather than reading against a made-up length.
func TestRangeTotalIsTheLengthAContentRangeNames(t *testing.T) {
	for _, tc := range []struct {
		cr   string
		want int64
		ok   bool
	}{
		{"bytes 0-9/100", 100, true},
		{"bytes 0-0/1", 1, true},
		{"bytes */0", 0, true},
		{"bytes 0-9/*", 0, false},
		{"bytes 0-9/-5", 0, false},
		{"bytes 0-9/1x", 0, false},
		{"bytes 0-9", 0, false},
		{"items 0-9/100", 0, false},
		{"", 0, false},
	} {
		n, ok := s3.RangeTotal(tc.cr)
		assert.Equal(t, tc.ok, ok, "%q: named a length", tc.cr)
		if tc.ok {
			assert.Equal(t, tc.want, n, "%q: the length", tc.cr)
		}
	}
}

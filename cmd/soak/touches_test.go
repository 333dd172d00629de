package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kvblob/kvblob/runtime/driver"
)

// accessOp is an operation whose access has ended or not, as a test says.
type accessOp struct {
	driver.Operation
	ended bool
}

func (o accessOp) AccessEnded() bool { return o.ended }

// TestTouchesOnlyMemoryThatOverlaps: a slot is held back while an
// operation whose access has not ended names memory that overlaps it,
// and only then: a span that ends where the slot starts, or starts where
// it ends, shares no byte with it, and neither does a span of another
// region or one of an operation whose access ended.
func TestTouchesOnlyMemoryThatOverlaps(t *testing.T) {
	r, other := &driver.Region{}, &driver.Region{}
	slot := driver.Span{Region: r, Offset: 100, Length: 100}
	for _, c := range []struct {
		name  string
		span  driver.Span
		ended bool
		want  bool
	}{
		{"ends where the slot starts", driver.Span{Region: r, Offset: 0, Length: 100}, false, false},
		{"starts where the slot ends", driver.Span{Region: r, Offset: 200, Length: 50}, false, false},
		{"its last byte the slot's first", driver.Span{Region: r, Offset: 0, Length: 101}, false, true},
		{"its first byte the slot's last", driver.Span{Region: r, Offset: 199, Length: 10}, false, true},
		{"inside the slot", driver.Span{Region: r, Offset: 120, Length: 10}, false, true},
		{"another region", driver.Span{Region: other, Offset: 100, Length: 100}, false, false},
		{"an operation whose access ended", driver.Span{Region: r, Offset: 100, Length: 100}, true, false},
	} {
		ch := &checker{ops: []driver.Operation{accessOp{ended: c.ended}}, spans: [][]driver.Span{{c.span}}}
		assert.Equal(t, c.want, ch.touches(slot), c.name)
	}
}

package conformance

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/kvblob/kvblob/internal/suitelog"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
)

// Geometry of the backend round trip.
const (
	tripRows     = 16
	tripRowBytes = 256 << 10
)

// roundTripCheckName names the backend round trip.
const roundTripCheckName = "backend_round_trip"

// roundTripCheck publishes tripRows rows of tripRowBytes through the
// backend over the store's driver and fetches them back into other slots,
// as a serving runtime would, and compares them byte for byte. It logs
// what it moved and how long that took (suitelog.RoundTrip): the gate
// prints it next to the conformance table, to show what kvblob is for.
func roundTripCheck() Check {
	return Check{Name: roundTripCheckName, Group: Data, Run: func(h *Harness, _ Scenarios) {
		t := h.T
		lender, err := hostmem.NewLender("round-trip", driver.Layout{SlotBytes: tripRowBytes, Slots: 2 * tripRows})
		if err != nil {
			t.Fatal(err)
		}
		hold, err := lender.Hold()
		if err != nil {
			t.Fatal(err)
		}
		bind, err := backend.Bind(hold.Regions(), h.D, hold)
		if err != nil {
			t.Fatal(err)
		}
		be, err := backend.New(bind, nil, backend.Config{Workers: 2, RowsPerBatch: 4, Prefix: "round-trip"})
		if err != nil {
			t.Fatal(err)
		}
		slots := hold.Regions()[0]
		src, dst := make(backend.View, tripRows), make(backend.View, tripRows)
		for i := range src {
			name := []byte(fmt.Sprintf("block-%02d", i))
			src[i] = backend.ViewRow{Name: name, Spans: []driver.Span{slots.Slot(i)}}
			dst[i] = backend.ViewRow{Name: name, Spans: []driver.Span{slots.Slot(tripRows + i)}}
			Fill(slots.Slot(i), byte(i))
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.Deadline)
		defer cancel()
		wait := func(a *backend.Attempt, err error) backend.Outcome {
			if err != nil {
				t.Fatal(err)
			}
			o, err := a.Wait(ctx)
			if err != nil {
				t.Fatalf("test timed out: the attempt had no outcome within %v", h.Deadline)
			}
			for !a.Quiesced() {
				if ctx.Err() != nil {
					t.Fatalf("test timed out: the attempt did not quiesce within %v", h.Deadline)
				}
				time.Sleep(50 * time.Microsecond) // a runtime's poll
			}
			return o
		}
		start := time.Now()
		pub := wait(be.Publish(src))
		got := wait(be.Fetch(dst, driver.Hint{}))
		took := time.Since(start)
		if pub.Prefix != tripRows || got.Prefix != tripRows {
			t.Errorf("round trip delivered %d published, %d fetched of %d rows: %s %s", pub.Prefix, got.Prefix, tripRows, pub.Fault, got.Fault)
		}
		for i := range src {
			if !bytes.Equal(src[i].Spans[0].Bytes(), dst[i].Spans[0].Bytes()) {
				t.Errorf("row %d came back different", i)
			}
		}
		if err := be.Shutdown(ctx); err != nil {
			t.Fatalf("%v", err)
		}
		_ = lender.Close()
		note(t, suitelog.RoundTrip, fmt.Sprintf("%d x %d KiB in %v", tripRows, tripRowBytes>>10, took.Round(100*time.Microsecond)))
	}}
}

package conformance

import (
	"bytes"
	"context"
	"fmt"
	"time"

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
// what it moved and how long that took (FactRoundTrip): the gate
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
		ctx, cancel := context.WithTimeout(context.Background(), h.Deadline)
		defer cancel()
		bind, err := backend.Bind(ctx, hold.Regions(), h.D, hold)
		if err != nil {
			t.Fatal(err)
		}
		be, err := backend.New(bind, backend.Config{Workers: 2, RowsPerBatch: 4, Prefix: "round-trip"})
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
		wait := func(a *backend.Attempt, err error) backend.Outcome {
			if err != nil {
				t.Fatal(err)
			}
			if err := a.WaitQuiesced(ctx); err != nil {
				t.Fatalf("test timed out: the attempt did not quiesce within %v: %v", h.Deadline, err)
			}
			o, _ := a.Poll()
			return o
		}
		start := time.Now()
		pub := wait(be.Publish(ctx, src))
		got := wait(be.Fetch(ctx, dst))
		took := time.Since(start)
		if pub.InOrder != tripRows || got.InOrder != tripRows {
			t.Errorf("round trip delivered %d published, %d fetched of %d rows: %v; %v", pub.InOrder, got.InOrder, tripRows, pub.Err, got.Err)
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
		note(t, FactRoundTrip, fmt.Sprintf("%d x %d KiB in %v", tripRows, tripRowBytes>>10, took.Round(100*time.Microsecond)))
	}}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
)

// Geometry of the gate's demonstration round trip.
const (
	demoRows     = 16
	demoRowBytes = 256 << 10
)

// roundTripCheck publishes demoRows rows of demoRowBytes through the backend
// over the store's driver and fetches them back into other slots, as a
// serving runtime would; it sets *summary to what it moved and how long it
// took. It shows what kvblob is for next to the conformance table.
func roundTripCheck(summary *string) conformance.Check {
	return conformance.Check{Name: "backend_round_trip", Run: func(h *conformance.Harness, _ conformance.Scenarios) {
		t := h.T
		lender, err := hostmem.NewLender("demo", driver.Layout{SlotBytes: demoRowBytes, Slots: 2 * demoRows})
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
		be, err := backend.New(bind, backend.Config{Workers: 2, RowsPerBatch: 4, Prefix: "gate-demo"})
		if err != nil {
			t.Fatal(err)
		}
		slots := hold.Regions()[0]
		src, dst := make(backend.View, demoRows), make(backend.View, demoRows)
		for i := range src {
			name := []byte(fmt.Sprintf("block-%02d", i))
			src[i] = backend.ViewRow{Name: name, Spans: []driver.Span{slots.Slot(i)}}
			dst[i] = backend.ViewRow{Name: name, Spans: []driver.Span{slots.Slot(demoRows + i)}}
			conformance.Fill(slots.Slot(i), byte(i))
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
		got := wait(be.Fetch(ctx, dst, driver.Hint{}))
		took := time.Since(start)
		if pub.InOrder != demoRows || got.InOrder != demoRows {
			t.Errorf("round trip delivered %d published, %d fetched of %d rows: %v; %v", pub.InOrder, got.InOrder, demoRows, pub.Err, got.Err)
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
		*summary = fmt.Sprintf("%d x %d KiB in %v", demoRows, demoRowBytes>>10, took.Round(100*time.Microsecond))
	}}
}

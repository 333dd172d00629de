package backend_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
)

// Example embeds the backend as a serving runtime does: lend host slots,
// bind them to a driver, publish a view of KV rows, fetch it back into
// other slots, and shut down. The README's "Embedding the backend" shows
// this function's body; TestREADMEShowsTheExample keeps the two in sync.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	// A lender owns host slots off the Go heap and lends them under a hold;
	// it refuses to free them while the hold is out.
	lender, err := hostmem.NewLender("kv", driver.Layout{SlotBytes: 4 << 10, Slots: 8})
	if err != nil {
		log.Fatal(err)
	}
	hold, err := lender.Hold()
	if err != nil {
		log.Fatal(err)
	}

	// Bind registers the held regions with the driver. The driver stays
	// yours: the backend never closes it.
	drv := memory.New(memory.Options{})
	bind, err := backend.Bind(ctx, hold.Regions(), drv, hold)
	if err != nil {
		log.Fatal(err) // errors.Is(err, backend.ErrHoldKept): keep the lender's memory
	}

	// No wake function: every attempt has channels to select on (Done,
	// Quiesced) and calls that wait within a ctx (Wait, WaitQuiesced).
	be, err := backend.New(bind, backend.Config{Workers: 2, Prefix: "model-a"})
	if err != nil {
		log.Fatal(err)
	}

	// A View is rows in order: each row's name (its key is
	// Prefix/v1/hex(name)) and the spans of registered memory holding it,
	// here one whole slot per row. A fetch's rows must not share a byte.
	slots := hold.Regions()[0]
	view := func(firstSlot int) backend.View {
		v := make(backend.View, 4)
		for i := range v {
			v[i] = backend.ViewRow{Name: []byte{byte(i)}, Spans: []driver.Span{slots.Slot(firstSlot + i)}}
		}
		return v
	}
	copy(slots.Slot(0).Bytes(), "block zero")

	// Publish and Fetch validate and queue; they never call the driver.
	// ctx reaches every driver call of the attempt, and its end cancels
	// the rows not started. Wait returns once the outcome is final; until
	// then Poll returns an empty Outcome and false.
	pub, err := be.Publish(ctx, view(0))
	if err != nil {
		log.Fatal(err)
	}
	o, err := pub.Wait(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if o.Err != nil { // errors.As(o.Err, &f) with f a *driver.FaultError gives the store's code
		log.Printf("published %d rows in order: %v", o.InOrder, o.Err)
	}
	// Slots may be written, fetched into again or given back only once
	// their attempt quiesced: a store may still touch them after the
	// outcome is final. ErrPinned says it never will.
	if err := pub.WaitQuiesced(ctx); err != nil {
		log.Fatal("slots still in use; never reuse them: ", err)
	}
	fmt.Println("published:", o.InOrder, "of", len(o.Results))

	fetch, err := be.Fetch(ctx, view(4))
	if err != nil {
		log.Fatal(err)
	}
	select { // or select on Done and Quiesced beside your other channels
	case <-fetch.Quiesced(): // quiesced implies done
	case <-ctx.Done():
		log.Fatal("slots still in use; never reuse them: ", ctx.Err())
	}
	o, _ = fetch.Poll()
	fmt.Println("fetched:", o.InOrder, "same bytes:", bytes.Equal(slots.Slot(0).Bytes(), slots.Slot(4).Bytes()))

	// Shutdown drains and unregisters in the background, then releases the
	// hold. An error says what is left: a store may still touch the memory,
	// so keep the lender (never Close it) and the driver.
	if err := be.Shutdown(ctx); err != nil {
		var se *backend.ShutdownError
		if errors.As(err, &se) {
			log.Printf("%d attempts pinned, %d spans a store may still touch", se.Pinned, len(se.Kept))
		}
		log.Printf("keeping the lender's memory: %v", err)
		return
	}
	// Shutdown never closes the driver; after it returned nil, you may.
	if err := drv.Close(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("hold released:", hold.Released(), "lender closed:", lender.Close() == nil)
	// Output:
	// published: 4 of 4
	// fetched: 4 same bytes: true
	// hold released: true lender closed: true
}

// TestREADMEShowsTheExample keeps the README's "Embedding the backend"
// block equal to Example's body, so the README shows code that compiles
// and runs.
func TestREADMEShowsTheExample(t *testing.T) {
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(src), "func Example() {\n")
	body, _, ok2 := strings.Cut(after, "\t// Output:")
	if !ok || !ok2 {
		t.Fatal("example_test.go has no Example with an Output comment")
	}
	var want strings.Builder
	for _, line := range strings.SplitAfter(body, "\n") {
		want.WriteString(strings.TrimPrefix(line, "\t"))
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Embedding the backend\n")
	_, block, ok2 := strings.Cut(section, "```go\n")
	got, _, ok3 := strings.Cut(block, "```\n")
	if !ok || !ok2 || !ok3 {
		t.Fatal(`README.md has no "## Embedding the backend" section with a go block`)
	}
	if got != want.String() {
		t.Errorf("README.md's embedding block differs from Example's body; copy the body (one tab less) into the README\n--- README\n%s\n--- Example\n%s", got, want.String())
	}
}

package backend_test

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
)

// Example embeds the backend: lend host slots, bind them to a driver, publish
// a view of KV rows and fetch it back into other slots.
func Example() {
	// A lender owns off-heap host slots and lends them under a hold.
	lender, _ := hostmem.NewLender("kv", driver.Layout{SlotBytes: 256 << 10, Slots: 8})
	hold, _ := lender.Hold()

	// Bind registers the slots with the driver; the backend drives it.
	bind, err := backend.Bind(hold.Regions(), memory.New(memory.Options{}), hold)
	if err != nil {
		panic(err)
	}
	be, _ := backend.New(bind, func() { /* wake the runtime's loop */ }, backend.Config{Workers: 2, Prefix: "model-a"})

	slots := hold.Regions()[0]
	view := func(first int) backend.View {
		v := backend.View{}
		for i := 0; i < 4; i++ {
			v = append(v, backend.ViewRow{Name: []byte{byte(i)}, Spans: []driver.Span{slots.Slot(first + i)}})
		}
		return v
	}
	copy(slots.Slot(0).Bytes(), "block zero")

	wait := func(a *backend.Attempt, err error) backend.Outcome {
		if err != nil {
			panic(err)
		}
		for !a.Quiesced() { // a runtime polls when woken; quiesced means the slots are free again
			time.Sleep(time.Millisecond)
		}
		o, _ := a.Poll()
		return o
	}
	fmt.Println("published:", wait(be.Publish(view(0))).Prefix)
	fmt.Println("fetched:", wait(be.Fetch(view(4), driver.Hint{})).Prefix)
	fmt.Println("same bytes:", bytes.Equal(slots.Slot(0).Bytes(), slots.Slot(4).Bytes()))

	// Shutdown unregisters in the background and releases the hold.
	fmt.Println("shut down:", be.Shutdown(context.Background()) == nil, hold.Released())
	_ = lender.Close()
	// Output:
	// published: 4
	// fetched: 4
	// same bytes: true
	// shut down: true true
}

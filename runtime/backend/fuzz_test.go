package backend_test

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
)

// FuzzSubmission feeds views built from arbitrary bytes to Publish and
// Fetch: each must be refused with an InvalidSubmissionError or accepted and
// finished, and an accepted view must have been valid.
func FuzzSubmission(f *testing.F) {
	f.Add([]byte{1, 'a', 0, 0, 0, 0, 0, 16, 0, 0}, false)
	f.Add([]byte{0}, true)
	f.Add([]byte{2, 'a', 'b', 0, 0, 0, 0, 0, 0, 1, 0, 1, 'a', 255, 255, 0, 0, 0, 8, 0, 0}, true)
	lender, err := hostmem.NewLender("fuzz", driver.Layout{SlotBytes: 64, Slots: 4})
	if err != nil {
		f.Fatal(err)
	}
	hold, _ := lender.Hold()
	bind, err := backend.Bind(context.Background(), hold.Regions(), memory.New(memory.Options{}), hold)
	if err != nil {
		f.Fatal(err)
	}
	be, err := backend.New(bind, backend.Config{RowsPerBatch: 2})
	if err != nil {
		f.Fatal(err)
	}
	region := hold.Regions()[0]
	foreign := &driver.Region{Name: "foreign", Kind: driver.Host, Layout: driver.Layout{SlotBytes: 64, Slots: 1}, Mem: make([]byte, 64)}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := be.Shutdown(ctx); err == nil {
			_ = lender.Close()
		}
	})
	f.Fuzz(func(t *testing.T, data []byte, fetch bool) {
		var v backend.View
		for len(data) > 0 && len(v) < 8 {
			n := int(data[0] % 4)
			data = data[1:]
			if len(data) < n+5 {
				break
			}
			name := append([]byte(nil), data[:n]...)
			data = data[n:]
			off := int64(int16(binary.BigEndian.Uint16(data[0:2])))
			length := int64(int16(binary.BigEndian.Uint16(data[2:4])))
			r := region
			if data[4] == 0xff {
				r = foreign
			}
			data = data[5:]
			v = append(v, backend.ViewRow{Name: name, Spans: []driver.Span{{Region: r, Offset: off, Length: length}}})
		}
		var a *backend.Attempt
		var err error
		if fetch {
			a, err = be.Fetch(context.Background(), v)
		} else {
			a, err = be.Publish(context.Background(), v)
		}
		var inv *backend.InvalidSubmissionError
		if err != nil {
			if !errors.As(err, &inv) || inv.Reason == "" {
				t.Fatalf("refusal is not a clear InvalidSubmissionError: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for i, row := range v {
			if len(row.Name) == 0 || seen[string(row.Name)] || row.Spans[0].Validate() != nil || row.Spans[0].Region != region {
				t.Fatalf("row %d of an accepted view is invalid: %+v", i, row)
			}
			seen[string(row.Name)] = true
			for j := 0; j < i && fetch; j++ {
				x, y := v[j].Spans[0], row.Spans[0]
				if x.Offset < y.Offset+y.Length && y.Offset < x.Offset+x.Length {
					t.Fatalf("an accepted fetch has rows %d and %d overlapping: %+v, %+v", j, i, x, y)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := a.WaitQuiesced(ctx); err != nil {
			t.Fatalf("an accepted attempt did not quiesce: %v", err)
		}
	})
}

package s3_test

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/s3"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
)

// partBarrier is a transport that counts a large row's parts in flight:
// the requests a row's parts go out in side by side (an UploadPart, a PUT
// naming a partNumber; a ranged GET after the first, which carries
// If-Match), from the moment the driver hands one to the transport until
// its answer is back. Each part waits at the barrier until the parts
// waiting there are as many as the limit (or as the parts still to come,
// for the last), then they go on together: so a driver within its limit
// has exactly limit parts in flight at each trip, and one past it has
// more; one that sends its parts one after another never fills the
// barrier, which then trips at its bound and says so.
type partBarrier struct {
	next  http.RoundTripper
	limit int

	mu       sync.Mutex
	trip     chan struct{} // closed when the waiting parts go on
	waiting  int           // parts at the barrier now
	left     int           // parts of the call not yet arrived
	inFlight int
	most     int      // the most parts ever in flight at once
	errs     []string // groups that never filled
}

// expect starts a call of n parts.
func (b *partBarrier) expect(n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.left, b.waiting, b.most, b.errs = n, 0, 0, nil
	b.trip = make(chan struct{})
}

// isPart reports whether req is one of a large row's parallel parts.
func isPart(req *http.Request) bool {
	q := req.URL.Query()
	return req.Method == http.MethodPut && q.Has("partNumber") ||
		req.Method == http.MethodGet && req.Header.Get("Range") != "" && req.Header.Get("If-Match") != ""
}

// fillBound bounds the wait for a group to fill: only a driver that sends
// fewer parts at once than its limit ever reaches it.
const fillBound = 30 * time.Second

func (b *partBarrier) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isPart(req) {
		return b.next.RoundTrip(req)
	}
	b.mu.Lock()
	b.inFlight++
	b.most = max(b.most, b.inFlight)
	b.left--
	b.waiting++
	trip := b.trip
	if b.waiting >= min(b.limit, b.waiting+b.left) {
		close(b.trip)
		b.trip, b.waiting = make(chan struct{}), 0
	}
	b.mu.Unlock()
	select {
	case <-trip:
	case <-time.After(fillBound):
		b.mu.Lock()
		if b.trip == trip { // nobody tripped it meanwhile
			b.errs = append(b.errs, fmt.Sprintf("%d parts in flight at once for %v, want %d (the limit)", b.waiting, fillBound, min(b.limit, b.waiting+b.left)))
			close(b.trip)
			b.trip, b.waiting = make(chan struct{}), 0
		}
		b.mu.Unlock()
	}
	defer func() {
		b.mu.Lock()
		b.inFlight--
		b.mu.Unlock()
	}()
	return b.next.RoundTrip(req)
}

// TestALargeRowNeverHasMoreThanPartsInFlightParts: a row put by multipart
// upload, and read back by ranged GETs, has exactly Options.PartsInFlight
// of its part requests in flight at once, never more, at the default and
// at limits set, one included, counted at the driver's HTTP transport
// (partBarrier); the row is READY both ways with its bytes. inParallel's
// own test (TestInParallelKeepsAtMostLimitPartsInFlight) holds the helper;
// this one holds that the driver hands it its option, for the upload and
// for the read. Fails with uploadParts' limit given as the number of
// parts (tried: "put of a 6-part row: at most 6 parts in flight at once,
// want exactly 1"), and with getRanges' so ("get of a 5-part row: at most
// 5 ...").
func TestALargeRowNeverHasMoreThanPartsInFlightParts(t *testing.T) {
	e := gw.Need(t)
	const full = 5                      // the row's full parts; a short one follows
	slot := full*s3.MinPartBytes + 4096 // so 6 parts, the last the 4 KiB and the tail
	parts := full + 1                   // the upload's
	for _, c := range []struct {
		name       string
		set, limit int
	}{
		{"default", 0, s3.DefaultPartsInFlight},
		{"one", 1, 1},
		{"three", 3, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := e.Transport()
			t.Cleanup(tr.CloseIdleConnections)
			b := &partBarrier{next: tr, limit: c.limit}
			kit := s3kit.OpenWith(t, e, func(o *s3.Options) {
				o.HTTPClient = &http.Client{Transport: b}
				o.MultipartBytes = s3.MinPartBytes
				o.PartBytes = s3.MinPartBytes
				o.PartsInFlight = c.set
				// Several 5 MiB parts side by side through TLS and the
				// race detector on a busy machine: this test counts
				// them, it does not time them.
				o.Timeout = time.Minute
			})
			f := storekit.NewFxSized(t, kit, 5*time.Second, driver.Layout{SlotBytes: int64(slot), Slots: 2})
			k := key(t, "large")
			for _, step := range []struct {
				what  string
				parts int
				call  func() []driver.Result
			}{
				{"put", parts, func() []driver.Result { return f.Put(f.Row(k, 0, 0x3C)) }},
				// The first ranged GET goes alone: it names the object's
				// length and ETag; the others go side by side.
				{"get", parts - 1, func() []driver.Result { return f.Get(f.Row(k, 1, storekit.Dest)) }},
			} {
				b.expect(step.parts)
				res := step.call()
				if res[0].Status != driver.Ready {
					t.Fatalf("%s of the large row: %v", step.what, res[0])
				}
				b.mu.Lock()
				most, errs := b.most, b.errs
				b.mu.Unlock()
				if most != c.limit || len(errs) > 0 {
					t.Errorf("%s of a %d-part row: at most %d parts in flight at once, want exactly %d (Options.PartsInFlight %d) %v", step.what, step.parts, most, c.limit, c.set, errs)
				}
			}
			if !bytes.Equal(f.Region.Slot(1).Bytes(), f.Region.Slot(0).Bytes()) {
				t.Error("the get did not read back the row's bytes")
			}
		})
	}
}

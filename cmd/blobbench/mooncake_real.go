//go:build mooncake

package main

import (
	"fmt"
	"io"
	"time"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/cgosdk"
	"github.com/kvblob/kvblob/stores/mooncake/mooncakekit/realkit"
	"github.com/kvblob/kvblob/stores/trailer"
)

// Built with -tags mooncake, blobbench also measures the driver over the
// real SDK, against a mooncake_master it starts on loopback, beside the
// SDK's own batch_put_from and batch_get_into of the same bytes through the
// same client (the ratios line's publish_vs_raw_sdk and fetch_vs_raw_sdk),
// and the same puts made the driver's way through the same client: session
// start, scatter, end (publish_vs_raw_session). Like every store that
// takes a row key, it is measured with the unkeyed object trailer and
// with the key on beside integrity off, each driver over a client of its
// own (publish_unkeyed_vs_off, publish_keyed_vs_off, ...).
func init() {
	extraStores = append(extraStores, struct {
		name string
		open func(log io.Writer) (store, error)
	}{"mooncake-real", openRealMooncake})
}

// realSegmentBytes is the pool's one segment, mounted by a storage
// client of the bench's own: room for the views of a rep's three ways and
// the raw baseline's objects, under the master's 90 % eviction mark, so
// nothing a rep reads is evicted.
//
// Every rig's client mounts no segment, so every row a rig moves crosses
// the transfer engine's TCP on loopback, as a serving host's rows do to and
// from its peers' segments, and every way of the store is measured in the
// same regime. A client reads and writes an object on its own segment by
// memcpy instead (the SDK enables it on a TCP-only host: "MC_STORE_MEMCPY
// not set, auto-detected: TCP-only environment, memcpy enabled"); when
// each way's client mounted a segment of its own, the master put each
// way's rows partly on its own segment and partly on another's, and the
// ratios moved with where the rows landed: integrity off measured against
// itself on a second client kept 0.71-0.96 of itself fetching (three runs,
// 2026-12-05 18:30).
const realSegmentBytes = 4 << 30

func openRealMooncake(log io.Writer) (store, error) {
	pool, err := realkit.Start()
	if err != nil {
		return store{}, err
	}
	fmt.Fprintf(log, "blobbench: mooncake-real: %s, master %s\n", cgosdk.SDKVersion, pool.Addr())
	cfg := pool.Config.Mooncake
	cfg.GlobalSegmentSize = realSegmentBytes
	storage, err := cgosdk.Open(cfg)
	if err != nil {
		_ = pool.Close()
		return store{}, fmt.Errorf("mooncake-real: the storage client: %w", err)
	}
	cfg.GlobalSegmentSize = 0
	client := func(d driver.Driver) *cgosdk.Client {
		return d.(*mooncake.Driver).SDK().(*cgosdk.Client)
	}
	// The views are cut as a Mooncake store file's defaults cut them (its
	// spec's config), so the figures are those of the batching users get.
	batch := mooncake.DefaultConfig().Backend
	// open makes a driver over a new real client of the pool's master:
	// integrity off, the unkeyed trailer or the row key on, as opts say.
	open := func(opts mooncake.Options) (driver.Driver, error) {
		sdk, err := cgosdk.Open(cfg)
		if err != nil {
			return nil, err
		}
		d, err := mooncake.NewWith(sdk, opts)
		if err != nil {
			_ = sdk.Close()
			return nil, err
		}
		return d, nil
	}
	return store{name: "mooncake-real", rowsPerCall: batch.RowsPerBatch, bytesPerCall: batch.BytesPerBatch,
		make:    func() (driver.Driver, error) { return open(mooncake.Options{}) },
		unkeyed: func() (driver.Driver, error) { return open(mooncake.Options{Trailer: true}) },
		keyed: func(in *trailer.Integrity) (driver.Driver, error) {
			return open(mooncake.Options{Integrity: in})
		},
		forget:         func(d driver.Driver, keys []string) { _, _ = client(d).BatchRemove(keys) },
		stop:           func() { _ = storage.Close(); _ = pool.Close() },
		plainName:      "raw_sdk",
		plainFromSlots: true,
		sessionName:    "raw_session",
		plain: func(d driver.Driver, w plainWork) (plainTimes, error) {
			t, err := rawMooncake(client(d), w)
			if err == nil {
				fmt.Fprintf(log, "blobbench: mooncake-real raw SDK, %d keys per call, %d/%d in flight: batch_put_from %v, the same puts as session start+scatter+end %v (%.2fx), batch_get_into %v\n",
					w.perCall, w.putConc, w.getConc, t.put.Round(time.Microsecond), t.session.Round(time.Microsecond), float64(t.session)/float64(t.put), t.get.Round(time.Microsecond))
			}
			return t, err
		}}, nil
}

// rawMooncake does w's work through c, the rig driver's client, with the
// SDK's own calls: batch_put_from of each row from its src slot, then the
// same puts made the driver's way (session start, scatter, end, under
// other keys), then batch_get_into of those into the dst slots. Every call
// takes w.perCall keys, as the backend cut the driver's, with w.putConc
// calls in flight putting and w.getConc getting, as the driver's were.
//
// The rows move from and into the rig's slots, which the driver
// registered on c: the driver's own bytes (objects of the same size as
// its, trailer off) through memory the driver's calls warmed. Buffers
// registered afresh for each rep once made the session path pay a cost
// the driver paid only in its first rep: a scatter from a newly
// registered 64 MiB buffer took 130-330 ms where the same scatter from a
// buffer used before took 25 ms (1 MiB rows, 4 per call, on the real SDK;
// batch_put_from does not pay it), which printed the session path at
// 12x batch_put_from at 1 MiB and publish_vs_raw_session at 3-5.
func rawMooncake(c *cgosdk.Client, w plainWork) (t plainTimes, err error) {
	n := w.rowBytes
	// slot is row i's window of mem, as the SDK takes it.
	slot := func(mem []byte, i int) mooncake.Buffer { return mooncake.BufferOf(mem[int64(i)*n : int64(i+1)*n]) }
	// A chunk is the first key's index and perCall keys from it.
	type chunk struct {
		first int
		keys  []string
	}
	chunksOf := func(keys []string) (chunks []chunk) {
		for i := 0; i < len(keys); i += w.perCall {
			chunks = append(chunks, chunk{i, keys[i:min(len(keys), i+w.perCall)]})
		}
		return chunks
	}
	// run makes call for every chunk of keys, from conc goroutines.
	run := func(keys []string, conc int, call func(ch chunk) error) (time.Duration, error) {
		chunks := chunksOf(keys)
		return eachKey(len(chunks), conc, func(_, i int) error { return call(chunks[i]) })
	}
	check := func(name string, got []int64, err error, want int64) error {
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		for i, v := range got {
			if v != want {
				return fmt.Errorf("%s: key %d of %d answered %d, want %d", name, i, len(got), v, want)
			}
		}
		return nil
	}
	t.put, err = run(w.keys, w.putConc, func(ch chunk) error {
		bufs := make([]mooncake.Buffer, len(ch.keys))
		for i := range bufs {
			bufs[i] = slot(w.src, ch.first+i)
		}
		got, err := c.BatchPutFrom(ch.keys, bufs)
		return check("batch_put_from", got, err, 0)
	})
	if err != nil {
		return plainTimes{}, err
	}
	// The session path's puts find the segment as the raw puts left it:
	// their objects are removed first (batch_remove with force: a read
	// lease does not keep them), and a removal any key refuses is an
	// error, not a baseline on other memory.
	got, err := c.BatchRemove(w.keys)
	if err := check("batch_remove before the session puts", got, err, 0); err != nil {
		return plainTimes{}, err
	}
	other := make([]string, len(w.keys))
	for i, k := range w.keys {
		other[i] = k + "/session"
	}
	t.session, err = run(other, w.putConc, func(ch chunk) error {
		ks := ch.keys
		sizes := make([]int64, len(ks))
		bufs := make([][]mooncake.Buffer, len(ks))
		for i := range ks {
			sizes[i], bufs[i] = n, []mooncake.Buffer{slot(w.src, ch.first+i)}
		}
		got, err := c.BatchPutSessionStart(ks, sizes)
		if err := check("batch_put_session_start", got, err, 0); err != nil {
			return err
		}
		got, err = c.BatchPutFromMultiBufferRanges(ks, bufs)
		if err := check("batch_put_from_multi_buffer_ranges", got, err, n); err != nil {
			return err
		}
		got, err = c.BatchPutSessionEnd(ks)
		return check("batch_put_session_end", got, err, 0)
	})
	if err == nil {
		// The gets read the session puts' objects: the same bytes, sizes
		// and segment as the raw puts'.
		t.get, err = run(other, w.getConc, func(ch chunk) error {
			bufs := make([]mooncake.Buffer, len(ch.keys))
			for i := range bufs {
				bufs[i] = slot(w.dst, ch.first+i)
			}
			got, err := c.BatchGetInto(ch.keys, bufs)
			return check("batch_get_into", got, err, n)
		})
	}
	got, rerr := c.BatchRemove(other)
	if rerr := check("batch_remove after the gets", got, rerr, 0); err == nil && rerr != nil {
		return plainTimes{}, rerr
	}
	return t, err
}

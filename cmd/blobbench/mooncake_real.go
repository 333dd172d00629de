//go:build mooncake

package main

import (
	"fmt"
	"io"
	"time"

	"github.com/kvblob/kvblob/internal/mooncakekit/realkit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/mooncake"
	"github.com/kvblob/kvblob/stores/mooncake/cgosdk"
)

// Built with -tags mooncake, blobbench also measures the driver over the
// real SDK, against a mooncake_master it starts on loopback, beside the
// SDK's own batch_put_from and batch_get_into of the same bytes through the
// same client (the ratios line's publish_vs_raw_sdk and fetch_vs_raw_sdk),
// and the same puts made the driver's way through the same client: session
// start, scatter, end (publish_vs_raw_session).
func init() {
	extraStores = append(extraStores, struct {
		name string
		open func(log io.Writer) (store, error)
	}{"mooncake-real", openRealMooncake})
}

// realSegmentBytes is each bench client's segment: room for a rep's view,
// the raw baseline's copy of it and the trailers, under the master's 90 %
// eviction mark, so nothing a rep reads is evicted.
const realSegmentBytes = 2 << 30

func openRealMooncake(log io.Writer) (store, error) {
	pool, err := realkit.Start()
	if err != nil {
		return store{}, err
	}
	fmt.Fprintf(log, "blobbench: mooncake-real: %s, master %s\n", cgosdk.SDKVersion, pool.Addr())
	cfg := pool.Config.Mooncake
	cfg.GlobalSegmentSize = realSegmentBytes
	client := func(d driver.Driver) *cgosdk.Client {
		return d.(*mooncake.Driver).SDK().(*cgosdk.Client)
	}
	return store{name: "mooncake-real",
		make: func() (driver.Driver, error) {
			sdk, err := cgosdk.Open(cfg)
			if err != nil {
				return nil, err
			}
			d, err := mooncake.New(sdk)
			if err != nil {
				_ = sdk.Close()
				return nil, err
			}
			return d, nil
		},
		forget:      func(d driver.Driver, keys []string) { _, _ = client(d).BatchRemove(keys) },
		stop:        func() { _ = pool.Close() },
		plainName:   "raw_sdk",
		sessionName: "raw_session",
		plain: func(d driver.Driver, keys []string, objs [][]byte, _ rowSlots, perCall, putConc, getConc int) (plainTimes, error) {
			t, err := rawMooncake(client(d), keys, objs, perCall, putConc, getConc)
			if err == nil {
				fmt.Fprintf(log, "blobbench: mooncake-real raw SDK: batch_put_from %v, the same puts as session start+scatter+end %v (%.2fx), batch_get_into %v\n",
					t.put.Round(time.Microsecond), t.session.Round(time.Microsecond), float64(t.session)/float64(t.put), t.get.Round(time.Microsecond))
			}
			return t, err
		}}, nil
}

// rawMooncake puts objs[i] under keys[i] with the SDK's batch_put_from from
// putConc goroutines, then reads the same bytes back with batch_get_into
// from getConc, perCall keys per call, through c: the same client, segment and
// transport as the driver's, from registered memory as the SDK requires.
// It also times the same puts made the driver's way (session start,
// scatter, end, under other keys, removed after) from putConc goroutines,
// to tell what kvblob costs from what the SDK's session path costs; the
// gets read those.
func rawMooncake(c *cgosdk.Client, keys []string, objs [][]byte, perCall, putConc, getConc int) (t plainTimes, err error) {
	n := int64(len(objs[0]))
	var regs [][]byte
	defer func() {
		for _, b := range regs {
			_, _ = c.UnregisterBuffer(mooncake.BufferOf(b))
			_ = hostmem.Free(b)
		}
	}()
	alloc := func(size int) ([]byte, error) {
		b, err := hostmem.Alloc(size)
		if err != nil {
			return nil, err
		}
		if code, err := c.RegisterBuffer(mooncake.BufferOf(b)); err != nil || code != 0 {
			_ = hostmem.Free(b)
			return nil, fmt.Errorf("register_buffer answered %d, %v", code, err)
		}
		regs = append(regs, b)
		return b, nil
	}
	src, err := alloc(len(objs) * int(n))
	if err != nil {
		return plainTimes{}, err
	}
	for i, o := range objs {
		copy(src[int64(i)*n:], o)
	}
	// srcOf is key i's object in registered memory.
	srcOf := func(i int) []byte { return src[int64(i)*n : int64(i+1)*n] }
	dsts := make([][]byte, getConc)
	for w := range dsts {
		if dsts[w], err = alloc(perCall * int(n)); err != nil {
			return plainTimes{}, err
		}
		clear(dsts[w]) // touch every page now, not inside the timed gets
	}
	// A chunk is the first key's index and perCall keys from it.
	type chunk struct {
		first int
		keys  []string
	}
	chunksOf := func(keys []string) (chunks []chunk) {
		for i := 0; i < len(keys); i += perCall {
			chunks = append(chunks, chunk{i, keys[i:min(len(keys), i+perCall)]})
		}
		return chunks
	}
	chunks := chunksOf(keys)
	// run makes call for every chunk, from workers goroutines (w is the
	// goroutine's number, for its own buffers).
	run := func(workers int, call func(w int, ch chunk) error) (time.Duration, error) {
		return eachKey(len(chunks), workers, func(w, i int) error { return call(w, chunks[i]) })
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
	t.put, err = run(putConc, func(_ int, ch chunk) error {
		bufs := make([]mooncake.Buffer, len(ch.keys))
		for i := range bufs {
			bufs[i] = mooncake.BufferOf(srcOf(ch.first + i))
		}
		got, err := c.BatchPutFrom(ch.keys, bufs)
		return check("batch_put_from", got, err, 0)
	})
	if err != nil {
		return plainTimes{}, err
	}
	// The session path's puts land where the raw puts just were: their
	// objects are removed first, so the master hands the same segment
	// memory out again, faulted in, as the driver's publish and the raw
	// put each found it. The removal comes before any get: a get grants a
	// lease (the master's default_kv_lease_ttl, 10 s), and until it ends
	// batch_remove answers OBJECT_HAS_LEASE (-706) and the object stays,
	// which is why the session puts once paid the first touch of fresh
	// segment pages (~12x batch_put_from printed at 1 MiB, where a warm
	// probe measured 2.7-3.2x, issue 31). A removal any key refuses is an
	// error, not a cold baseline.
	got, err := c.BatchRemove(keys)
	if err := check("batch_remove before the session puts", got, err, 0); err != nil {
		return plainTimes{}, err
	}
	other := make([]string, len(keys))
	for i, k := range keys {
		other[i] = k + "/session"
	}
	defer func() { _, _ = c.BatchRemove(other) }()
	chunks = chunksOf(other)
	t.session, err = run(putConc, func(_ int, ch chunk) error {
		ks := ch.keys
		sizes := make([]int64, len(ks))
		bufs := make([][]mooncake.Buffer, len(ks))
		for i := range ks {
			sizes[i], bufs[i] = n, []mooncake.Buffer{mooncake.BufferOf(srcOf(ch.first + i))}
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
	if err != nil {
		return plainTimes{}, err
	}
	// The gets read the session puts' objects: the same bytes, sizes and
	// segment as the raw puts'.
	t.get, err = run(getConc, func(w int, ch chunk) error {
		bufs := make([]mooncake.Buffer, len(ch.keys))
		for i := range bufs {
			bufs[i] = mooncake.BufferOf(dsts[w][int64(i)*n : int64(i+1)*n])
		}
		got, err := c.BatchGetInto(ch.keys, bufs)
		return check("batch_get_into", got, err, n)
	})
	return t, err
}

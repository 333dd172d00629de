package memory_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/memory"
)

// Drivers sharing one store (run it with -race) put, get and delete at
// once: each its own new keys, round after round (so the store's key
// table grows, and churns as keys leave it), and all of them the same
// shared keys. Every row of a worker's own keys reads back what it put;
// a shared key's get reads whole what any worker put (they put the same
// bytes) or misses or finds it being written; nothing faults; and once
// every key is deleted the store holds nothing.
func TestDriversSharingAStorePutGetAndDeleteAtOnce(t *testing.T) {
	const workers, rounds, rows, shared = 4, 20, 45, 8 // rows: more than a chunk
	st := memory.NewStore(0)
	sharedBytes := func(i int) []byte { return bytes.Repeat([]byte{byte(i + 1)}, slot) }
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		r, err := hostmem.Map(fmt.Sprint("w", w), driver.Layout{SlotBytes: slot, Slots: 2 * rows})
		require.NoError(t, err)
		t.Cleanup(func() { _ = r.Close() })
		d := memory.New(memory.Options{Store: st})
		reg, err := d.Register(r.Region)
		require.NoError(t, err)
		t.Cleanup(func() { _ = d.Unregister(reg) })
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- work(d, r, w, rounds, rows, shared, sharedBytes)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	for i := range shared {
		st.Delete(fmt.Sprint("shared-", i))
	}
	assert.Zero(t, st.Len(), "every object was deleted")
}

// work is one worker of TestDriversSharingAStorePutGetAndDeleteAtOnce.
func work(d *memory.Driver, r *hostmem.Mapping, w, rounds, rows, shared int, sharedBytes func(int) []byte) error {
	ctx := context.Background()
	call := func(put bool, rs []driver.Row) ([]driver.Result, error) {
		var op driver.Operation
		var err error
		if put {
			op, err = d.Put(ctx, rs)
		} else {
			op, err = d.Get(ctx, rs, driver.Hint{})
		}
		if err != nil {
			return nil, err
		}
		res, done := op.Poll()
		if !done {
			return nil, fmt.Errorf("a blocking driver returned an unfinished operation")
		}
		return res, nil
	}
	for round := range rounds {
		src, dst := make([]driver.Row, rows), make([]driver.Row, rows)
		for i := range rows {
			key := fmt.Sprint("w", w, "-round", round, "-row", i)
			b := r.Slot(i).Bytes()
			for j := range b {
				b[j] = byte(w*31 + round*7 + i + j)
			}
			src[i] = driver.Row{Key: key, Spans: []driver.Span{r.Slot(i)}}
			dst[i] = driver.Row{Key: key, Spans: []driver.Span{r.Slot(rows + i)}}
		}
		// Own keys: each is new, put, read back, deleted.
		res, err := call(true, src)
		if err != nil {
			return err
		}
		for i, x := range res {
			if x.Status != driver.Ready {
				return fmt.Errorf("put %s: %v", src[i].Key, x)
			}
		}
		if res, err = call(false, dst); err != nil {
			return err
		}
		for i, x := range res {
			if x.Status != driver.Ready || !bytes.Equal(r.Slot(i).Bytes(), r.Slot(rows+i).Bytes()) {
				return fmt.Errorf("get %s: %v, or its bytes differ", dst[i].Key, x)
			}
		}
		for _, x := range src {
			d.Store().Delete(x.Key)
		}
		// Shared keys: put by every worker, read and deleted by any.
		i := (w + round) % shared
		key := fmt.Sprint("shared-", i)
		copy(r.Slot(0).Bytes(), sharedBytes(i))
		if res, err = call(true, []driver.Row{{Key: key, Spans: []driver.Span{r.Slot(0)}}}); err != nil {
			return err
		}
		if s := res[0].Status; s != driver.Ready && s != driver.NotReady {
			return fmt.Errorf("put %s: %v", key, res[0])
		}
		if res, err = call(false, []driver.Row{{Key: key, Spans: []driver.Span{r.Slot(rows)}}}); err != nil {
			return err
		}
		switch res[0].Status {
		case driver.Ready:
			if !bytes.Equal(r.Slot(rows).Bytes(), sharedBytes(i)) {
				return fmt.Errorf("get %s: its bytes differ", key)
			}
		case driver.Miss, driver.NotReady:
		default:
			return fmt.Errorf("get %s: %v", key, res[0])
		}
		if round%3 == 0 {
			d.Store().Delete(key)
		}
	}
	return nil
}

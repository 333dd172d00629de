//go:build mooncake

package cgosdk

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/kvblob/kvblob/stores/mooncake"
)

func init() {
	SDKVersion = C.GoString(C.kvb_mc_display_version())
	RPCVersion = C.GoString(C.kvb_mc_rpc_version())
}

// Client is a mooncake.SDK over one real client (Mooncake's RealClient,
// through shim.cpp).
type Client struct {
	mu sync.RWMutex // Close takes it exclusively; calls share it
	h  *C.kvb_mc_client
}

var _ mooncake.SDK = (*Client)(nil)

// errLen bounds the text of a C++ exception the shim hands back.
const errLen = 512

// raised is the error of a call the SDK raised in.
func raised(call string, buf []byte) error {
	return fmt.Errorf("cgosdk: %s raised: %s", call, C.GoString((*C.char)(unsafe.Pointer(&buf[0]))))
}

// Open creates and sets up a client from a store file's mooncake section.
// A client whose setup failed is torn down before Open returns.
func Open(cfg mooncake.ClientConfig) (mooncake.SDK, error) {
	eb := make([]byte, errLen)
	var h *C.kvb_mc_client
	if C.kvb_mc_create(&h, errp(eb), errLen) != 0 {
		return nil, raised("RealClient()", eb)
	}
	cs := func(s string) *C.char { return C.CString(s) }
	host, meta, proto, dev, master := cs(cfg.LocalHostname), cs(cfg.MetadataServer), cs(cfg.Protocol), cs(cfg.Device), cs(cfg.Master)
	defer func() {
		for _, p := range []*C.char{host, meta, proto, dev, master} {
			C.free(unsafe.Pointer(p))
		}
	}()
	var code C.int64_t
	if C.kvb_mc_setup(h, host, meta, C.uint64_t(cfg.GlobalSegmentSize), C.uint64_t(cfg.LocalBufferSize), proto, dev, master, &code, errp(eb), errLen) != 0 {
		C.kvb_mc_destroy(h)
		return nil, raised("setup_real", eb)
	}
	if code != 0 {
		C.kvb_mc_destroy(h)
		return nil, fmt.Errorf("cgosdk: setup_real answered %d (master %s, metadata %s, protocol %s)", int64(code), cfg.Master, cfg.MetadataServer, cfg.Protocol)
	}
	return &Client{h: h}, nil
}

// Version is the SDK build's display version, as the SDK reports it.
func (c *Client) Version() string { return SDKVersion }

var errClosed = errors.New("cgosdk: the client is closed")

// handle returns the client's handle under the shared lock; done releases it.
func (c *Client) handle() (*C.kvb_mc_client, error) {
	c.mu.RLock()
	if c.h == nil {
		c.mu.RUnlock()
		return nil, errClosed
	}
	return c.h, nil
}

func (c *Client) done() { c.mu.RUnlock() }

func (c *Client) RegisterBuffer(b mooncake.Buffer) (int64, error) {
	h, err := c.handle()
	if err != nil {
		return 0, err
	}
	defer c.done()
	eb := make([]byte, errLen)
	var code C.int64_t
	if C.kvb_mc_register_buffer(h, C.uintptr_t(b.Addr), C.uint64_t(b.Len), &code, errp(eb), errLen) != 0 {
		return 0, raised("register_buffer", eb)
	}
	return int64(code), nil
}

func (c *Client) UnregisterBuffer(b mooncake.Buffer) (int64, error) {
	h, err := c.handle()
	if err != nil {
		return 0, err
	}
	defer c.done()
	eb := make([]byte, errLen)
	var code C.int64_t
	if C.kvb_mc_unregister_buffer(h, C.uintptr_t(b.Addr), &code, errp(eb), errLen) != 0 {
		return 0, raised("unregister_buffer", eb)
	}
	return int64(code), nil
}

// keyArgs packs keys into one byte array and their lengths, as the shim
// takes them. Neither holds a Go pointer, so both may be passed to C.
type keyArgs struct {
	bytes []byte
	lens  []C.uint64_t
}

func packKeys(keys []string) keyArgs {
	n := 0
	for _, k := range keys {
		n += len(k)
	}
	ka := keyArgs{bytes: make([]byte, 0, n+1), lens: make([]C.uint64_t, len(keys))}
	for i, k := range keys {
		ka.bytes = append(ka.bytes, k...)
		ka.lens[i] = C.uint64_t(len(k))
	}
	ka.bytes = append(ka.bytes, 0) // never empty, so &bytes[0] is valid
	return ka
}

func (ka keyArgs) ptr() *C.char { return (*C.char)(unsafe.Pointer(&ka.bytes[0])) }

// batch runs one batch call of n keys: call fills out and nout, or answers
// non-zero for a raise. The answers are the SDK's, as many as it gave.
func (c *Client) batch(name string, n int, call func(h *C.kvb_mc_client, out *C.int64_t, nout *C.size_t, eb *C.char) C.int) ([]int64, error) {
	if n == 0 {
		return []int64{}, nil
	}
	h, err := c.handle()
	if err != nil {
		return nil, err
	}
	defer c.done()
	eb := make([]byte, errLen)
	out := make([]C.int64_t, n)
	var nout C.size_t
	if call(h, &out[0], &nout, errp(eb)) != 0 {
		return nil, raised(name, eb)
	}
	res := make([]int64, int(nout))
	for i := range res {
		if i < n {
			res[i] = int64(out[i])
		}
	}
	return res, nil
}

func (c *Client) BatchPutSessionStart(keys []string, sizes []int64) ([]int64, error) {
	if len(sizes) != len(keys) {
		return nil, fmt.Errorf("cgosdk: batch_put_session_start of %d keys with %d sizes", len(keys), len(sizes))
	}
	ka := packKeys(keys)
	sz := make([]C.uint64_t, len(keys))
	for i, s := range sizes {
		sz[i] = C.uint64_t(s)
	}
	return c.batch("batch_put_session_start", len(keys), func(h *C.kvb_mc_client, out *C.int64_t, nout *C.size_t, eb *C.char) C.int {
		return C.kvb_mc_batch_put_session_start(h, ka.ptr(), &ka.lens[0], C.size_t(len(keys)), &sz[0], out, nout, eb, errLen)
	})
}

// BatchPutFromMultiBufferRanges writes each key's buffers, in order, into its
// session's space: buffer j of a key lands at the sum of the lengths of the
// key's buffers before it (explicit destination offsets).
func (c *Client) BatchPutFromMultiBufferRanges(keys []string, buffers [][]mooncake.Buffer) ([]int64, error) {
	if len(buffers) != len(keys) {
		return nil, fmt.Errorf("cgosdk: batch_put_from_multi_buffer_ranges of %d keys with %d buffer lists", len(keys), len(buffers))
	}
	ka := packKeys(keys)
	total := 0
	for _, bs := range buffers {
		total += len(bs)
	}
	counts := make([]C.uint64_t, len(keys))
	addrs := make([]C.uintptr_t, total+1) // +1: never empty
	lens := make([]C.uint64_t, total+1)
	offs := make([]C.uint64_t, total+1)
	j := 0
	for i, bs := range buffers {
		counts[i] = C.uint64_t(len(bs))
		var off int64
		for _, b := range bs {
			addrs[j], lens[j], offs[j] = C.uintptr_t(b.Addr), C.uint64_t(b.Len), C.uint64_t(off)
			off += b.Len
			j++
		}
	}
	return c.batch("batch_put_from_multi_buffer_ranges", len(keys), func(h *C.kvb_mc_client, out *C.int64_t, nout *C.size_t, eb *C.char) C.int {
		return C.kvb_mc_batch_put_from_multi_buffer_ranges(h, ka.ptr(), &ka.lens[0], C.size_t(len(keys)), &counts[0], &addrs[0], &lens[0], &offs[0], out, nout, eb, errLen)
	})
}

func (c *Client) BatchPutSessionEnd(keys []string) ([]int64, error) {
	ka := packKeys(keys)
	return c.batch("batch_put_session_end", len(keys), func(h *C.kvb_mc_client, out *C.int64_t, nout *C.size_t, eb *C.char) C.int {
		return C.kvb_mc_batch_put_session_end(h, ka.ptr(), &ka.lens[0], C.size_t(len(keys)), out, nout, eb, errLen)
	})
}

func (c *Client) BatchPutSessionRevoke(keys []string) ([]int64, error) {
	ka := packKeys(keys)
	return c.batch("batch_put_session_revoke", len(keys), func(h *C.kvb_mc_client, out *C.int64_t, nout *C.size_t, eb *C.char) C.int {
		return C.kvb_mc_batch_put_session_revoke(h, ka.ptr(), &ka.lens[0], C.size_t(len(keys)), out, nout, eb, errLen)
	})
}

func (c *Client) BatchGetInto(keys []string, bufs []mooncake.Buffer) ([]int64, error) {
	return c.batchBuffers("batch_get_into", keys, bufs, func(h *C.kvb_mc_client, ka *C.char, kl *C.uint64_t, n C.size_t, addrs *C.uintptr_t, lens *C.uint64_t, out *C.int64_t, nout *C.size_t, eb *C.char) C.int {
		return C.kvb_mc_batch_get_into(h, ka, kl, n, addrs, lens, out, nout, eb, errLen)
	})
}

// batchBuffers makes a batch call of one buffer per key.
func (c *Client) batchBuffers(name string, keys []string, bufs []mooncake.Buffer, call func(h *C.kvb_mc_client, ka *C.char, kl *C.uint64_t, n C.size_t, addrs *C.uintptr_t, lens *C.uint64_t, out *C.int64_t, nout *C.size_t, eb *C.char) C.int) ([]int64, error) {
	if len(bufs) != len(keys) {
		return nil, fmt.Errorf("cgosdk: %s of %d keys with %d buffers", name, len(keys), len(bufs))
	}
	ka := packKeys(keys)
	addrs := make([]C.uintptr_t, len(keys))
	lens := make([]C.uint64_t, len(keys))
	for i, b := range bufs {
		addrs[i], lens[i] = C.uintptr_t(b.Addr), C.uint64_t(b.Len)
	}
	return c.batch(name, len(keys), func(h *C.kvb_mc_client, out *C.int64_t, nout *C.size_t, eb *C.char) C.int {
		return call(h, ka.ptr(), &ka.lens[0], C.size_t(len(keys)), &addrs[0], &lens[0], out, nout, eb)
	})
}

// BatchPutFrom is the SDK's own one-call put (RealClient::batch_put_from)
// of each key from one registered buffer: 0 or a negative ErrorCode per
// key. It is not part of mooncake.SDK: the driver cannot use it, since it
// answers 0 for a key that exists (or is being written) without writing
// it. blobbench measures the driver's put against it.
func (c *Client) BatchPutFrom(keys []string, bufs []mooncake.Buffer) ([]int64, error) {
	return c.batchBuffers("batch_put_from", keys, bufs, func(h *C.kvb_mc_client, ka *C.char, kl *C.uint64_t, n C.size_t, addrs *C.uintptr_t, lens *C.uint64_t, out *C.int64_t, nout *C.size_t, eb *C.char) C.int {
		return C.kvb_mc_batch_put_from(h, ka, kl, n, addrs, lens, out, nout, eb, errLen)
	})
}

func (c *Client) BatchIsExist(keys []string) ([]int64, error) {
	ka := packKeys(keys)
	return c.batch("batchIsExist", len(keys), func(h *C.kvb_mc_client, out *C.int64_t, nout *C.size_t, eb *C.char) C.int {
		return C.kvb_mc_batch_is_exist(h, ka.ptr(), &ka.lens[0], C.size_t(len(keys)), out, nout, eb, errLen)
	})
}

// BatchRemove removes each key's object, leases or not (batchRemove with
// force): 0 or a negative ErrorCode per key. It is not part of
// mooncake.SDK (the driver never removes); the benchmark forgets what it
// wrote with it.
func (c *Client) BatchRemove(keys []string) ([]int64, error) {
	ka := packKeys(keys)
	return c.batch("batchRemove", len(keys), func(h *C.kvb_mc_client, out *C.int64_t, nout *C.size_t, eb *C.char) C.int {
		return C.kvb_mc_batch_remove(h, ka.ptr(), &ka.lens[0], C.size_t(len(keys)), out, nout, eb, errLen)
	})
}

// Close tears the client down (tearDownAll: its segment is unmounted and
// the master forgets it; ~2 s) and frees it. It waits for calls in
// progress. A second Close answers nil.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.h == nil {
		return nil
	}
	eb := make([]byte, errLen)
	var code C.int64_t
	rc := C.kvb_mc_teardown(c.h, &code, errp(eb), errLen)
	C.kvb_mc_destroy(c.h)
	c.h = nil
	if rc != 0 {
		return raised("tearDownAll", eb)
	}
	if code != 0 {
		return fmt.Errorf("cgosdk: tearDownAll answered %d", int64(code))
	}
	return nil
}

func errp(b []byte) *C.char { return (*C.char)(unsafe.Pointer(&b[0])) }

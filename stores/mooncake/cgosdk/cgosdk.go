//go:build mooncake

package cgosdk

/*
#cgo LDFLAGS: -lmooncake_store -ltransfer_engine -lstdc++
#include <stdlib.h>
#include <store_c.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/kvblob/kvblob/stores/mooncake"
)

// Client is a mooncake.SDK over one real client.
type Client struct{ h C.mooncake_store_t }

var _ mooncake.SDK = (*Client)(nil)

// Open creates and sets up a client from a store file's mooncake section.
func Open(cfg mooncake.MooncakeConfig) (mooncake.SDK, error) {
	h := C.mooncake_store_create()
	if h == nil {
		return nil, errors.New("cgosdk: mooncake_store_create returned NULL")
	}
	cs := func(s string) *C.char { return C.CString(s) }
	host, meta, proto, dev, master := cs(cfg.LocalHostname), cs(cfg.MetadataServer), cs(cfg.Protocol), cs(cfg.Device), cs(cfg.Master)
	defer func() {
		for _, p := range []*C.char{host, meta, proto, dev, master} {
			C.free(unsafe.Pointer(p))
		}
	}()
	rc := C.mooncake_store_setup(h, host, meta, C.uint64_t(cfg.GlobalSegmentSize), C.uint64_t(cfg.LocalBufferSize), proto, dev, master)
	if rc != 0 {
		C.mooncake_store_destroy(h)
		return nil, fmt.Errorf("cgosdk: mooncake_store_setup answered %d (master %s)", int(rc), cfg.Master)
	}
	return &Client{h: h}, nil
}

func (c *Client) Version() string { return SDKVersion }

func (c *Client) RegisterBuffer(b mooncake.Buffer) (int64, error) {
	return int64(C.mooncake_store_register_buffer(c.h, ptr(b.Addr), C.size_t(b.Len))), nil
}

func (c *Client) UnregisterBuffer(b mooncake.Buffer) (int64, error) {
	return int64(C.mooncake_store_unregister_buffer(c.h, ptr(b.Addr))), nil
}

var errNoSession = errors.New("cgosdk: store_c.h at 0.3.13 has no put-session or multi-buffer calls; a C++ shim over the client class is needed")

func (c *Client) BatchPutSessionStart([]string, []int64) ([]int64, error) { return nil, errNoSession }
func (c *Client) BatchPutFromMultiBufferRanges([]string, [][]mooncake.Buffer) ([]int64, error) {
	return nil, errNoSession
}
func (c *Client) BatchPutSessionEnd([]string) ([]int64, error)    { return nil, errNoSession }
func (c *Client) BatchPutSessionRevoke([]string) ([]int64, error) { return nil, errNoSession }

func (c *Client) BatchGetInto(keys []string, bufs []mooncake.Buffer) ([]int64, error) {
	n := len(keys)
	ckeys, free := cStrings(keys)
	defer free()
	cbufs := (*[1 << 28]unsafe.Pointer)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))))[:n:n]
	defer C.free(unsafe.Pointer(&cbufs[0]))
	sizes := make([]C.size_t, n)
	out := make([]C.int64_t, n)
	for i, b := range bufs {
		cbufs[i] = ptr(b.Addr)
		sizes[i] = C.size_t(b.Len)
	}
	if rc := C.mooncake_store_batch_get_into(c.h, ckeys, &cbufs[0], &sizes[0], C.size_t(n), &out[0]); rc != 0 {
		return nil, fmt.Errorf("cgosdk: mooncake_store_batch_get_into answered %d", int(rc))
	}
	res := make([]int64, n)
	for i, v := range out {
		res[i] = int64(v)
	}
	return res, nil
}

func (c *Client) BatchIsExist(keys []string) ([]int64, error) {
	n := len(keys)
	ckeys, free := cStrings(keys)
	defer free()
	out := make([]C.int, n)
	if rc := C.mooncake_store_batch_is_exist(c.h, ckeys, C.size_t(n), &out[0]); rc != 0 {
		return nil, fmt.Errorf("cgosdk: mooncake_store_batch_is_exist answered %d", int(rc))
	}
	res := make([]int64, n)
	for i, v := range out {
		res[i] = int64(v)
	}
	return res, nil
}

func (c *Client) Close() error {
	C.mooncake_store_destroy(c.h)
	return nil
}

// ptr turns a registered address (off-heap memory from runtime/hostmem) into
// the void* the C API takes.
func ptr(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }

// cStrings copies keys into a C array of C strings.
func cStrings(keys []string) (**C.char, func()) {
	n := len(keys)
	arr := (*[1 << 28]*C.char)(C.malloc(C.size_t(n) * C.size_t(unsafe.Sizeof((*C.char)(nil)))))[:n:n]
	for i, k := range keys {
		arr[i] = C.CString(k)
	}
	return &arr[0], func() {
		for _, p := range arr {
			C.free(unsafe.Pointer(p))
		}
		C.free(unsafe.Pointer(&arr[0]))
	}
}

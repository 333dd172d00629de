// Package cgosdk is the Mooncake SDK over the real client, through
// Mooncake's C API (mooncake-store/include/store_c.h), the route Mooncake's
// own Go binding takes. It builds only with the build tag mooncake and needs
// the SDK's headers and libraries installed (CGO_CFLAGS / CGO_LDFLAGS);
// nothing of Mooncake is vendored here.
//
// Files behind the tag: cgosdk.go (the adapter) and real_test.go (real-pool
// tests, which run only with MOONCAKE_REAL=1 and start mooncake_master on
// loopback themselves).
//
// The C API at 0.3.13 has no put sessions and no multi-buffer calls:
// batch_put_session_start, _end, _revoke and
// batch_put_from_multi_buffer_ranges answer an error ("raise") here, so puts
// through this adapter fault. A small C++ shim over the client class is the
// way to those calls; it is not written yet.
//
// store_c.h reports no version either: the version the driver checks is
// SDKVersion, set at link time with
//
//	go build -tags mooncake -ldflags "-X github.com/kvblob/kvblob/stores/mooncake/cgosdk.SDKVersion=0.3.13"
//
// and "unknown" otherwise, which the driver refuses.
package cgosdk

// SDKVersion is the linked SDK's version (see the package doc).
var SDKVersion = "unknown"

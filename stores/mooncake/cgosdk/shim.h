//go:build mooncake

// shim.h: kvblob's C view of Mooncake's RealClient (mooncake-store/include/
// real_client.h), the class the Python SDK wraps. shim.cpp implements it; it
// must be compiled with the -D flags of the SDK's own real_client.cpp (see
// doc.go), since RealClient's layout depends on them.
//
// Conventions. A call returns 0 when the SDK call returned and -1 when it
// raised (a C++ exception); then err holds the exception's text, truncated to
// errlen-1 bytes and NUL-terminated, and no answer was written. Keys are
// passed as one byte array (keys) with each key's length (key_lens); a key
// may hold any bytes. A batch call writes the SDK's per-key answers (a byte
// count, 1/0, 0 or a negative ErrorCode), at most n of them, to out, and
// their number, as the SDK gave it, to *nout: a count other than n is the
// SDK's own answer, for the caller to judge. Addresses are plain integers:
// the memory is the caller's registered host memory, never Go's heap.
#ifndef KVBLOB_MOONCAKE_SHIM_H
#define KVBLOB_MOONCAKE_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kvb_mc_client kvb_mc_client;

// kvb_mc_display_version is the SDK build's display version, e.g.
// "0.3.12.post1 (git: 3b5a59413)" (MOONCAKE_DISPLAY_VERSION, version.h);
// kvb_mc_rpc_version its RPC handshake version, e.g. "2.0.0".
const char *kvb_mc_display_version(void);
const char *kvb_mc_rpc_version(void);

// kvb_mc_create constructs a RealClient (not set up). It does not go through
// RealClient::create(), which would start ResourceTracker: a thread that
// sigwaits SIGINT/SIGTERM/SIGHUP/SIGUSR1 in competition with Go's runtime,
// and an atexit teardown Go's os.Exit never runs.
int kvb_mc_create(kvb_mc_client **out, char *err, size_t errlen);

// kvb_mc_setup is RealClient::setup_real with the Python SDK's defaults for
// the arguments kvblob does not set. *code is its answer.
int kvb_mc_setup(kvb_mc_client *c, const char *local_hostname,
                 const char *metadata_server, uint64_t global_segment_size,
                 uint64_t local_buffer_size, const char *protocol,
                 const char *rdma_devices, const char *master_server_addr,
                 int64_t *code, char *err, size_t errlen);

int kvb_mc_register_buffer(kvb_mc_client *c, uintptr_t addr, uint64_t len,
                           int64_t *code, char *err, size_t errlen);
int kvb_mc_unregister_buffer(kvb_mc_client *c, uintptr_t addr, int64_t *code,
                             char *err, size_t errlen);

int kvb_mc_batch_put_session_start(kvb_mc_client *c, const char *keys,
                                   const uint64_t *key_lens, size_t n,
                                   const uint64_t *sizes, int64_t *out,
                                   size_t *nout, char *err, size_t errlen);

// kvb_mc_batch_put_from_multi_buffer_ranges: key i has counts[i] ranges,
// taken in order from the flat arrays addrs, lens and dst_offsets; range j
// of a key writes lens[j] bytes from addrs[j] at dst_offsets[j] of the
// key's session space.
int kvb_mc_batch_put_from_multi_buffer_ranges(
    kvb_mc_client *c, const char *keys, const uint64_t *key_lens, size_t n,
    const uint64_t *counts, const uintptr_t *addrs, const uint64_t *lens,
    const uint64_t *dst_offsets, int64_t *out, size_t *nout, char *err,
    size_t errlen);

int kvb_mc_batch_put_session_end(kvb_mc_client *c, const char *keys,
                                 const uint64_t *key_lens, size_t n,
                                 int64_t *out, size_t *nout, char *err,
                                 size_t errlen);
int kvb_mc_batch_put_session_revoke(kvb_mc_client *c, const char *keys,
                                    const uint64_t *key_lens, size_t n,
                                    int64_t *out, size_t *nout, char *err,
                                    size_t errlen);

int kvb_mc_batch_get_into(kvb_mc_client *c, const char *keys,
                          const uint64_t *key_lens, size_t n,
                          const uintptr_t *addrs, const uint64_t *lens,
                          int64_t *out, size_t *nout, char *err,
                          size_t errlen);

// kvb_mc_batch_put_from is RealClient::batch_put_from with the default
// ReplicateConfig: the SDK's own one-call put of each key from one
// registered buffer, 0 or a negative ErrorCode per key. The driver does
// not use it (it answers 0 for a key that exists without writing it); the
// benchmark measures the driver against it.
int kvb_mc_batch_put_from(kvb_mc_client *c, const char *keys,
                          const uint64_t *key_lens, size_t n,
                          const uintptr_t *addrs, const uint64_t *lens,
                          int64_t *out, size_t *nout, char *err,
                          size_t errlen);

// kvb_mc_batch_is_exist is RealClient::batchIsExist: 1, 0 or a negative
// ErrorCode per key.
int kvb_mc_batch_is_exist(kvb_mc_client *c, const char *keys,
                          const uint64_t *key_lens, size_t n, int64_t *out,
                          size_t *nout, char *err, size_t errlen);

// kvb_mc_batch_remove is RealClient::batchRemove with force: 0 or a
// negative ErrorCode per key. Only tools use it (the benchmark forgets
// what it wrote); the driver never removes.
int kvb_mc_batch_remove(kvb_mc_client *c, const char *keys,
                        const uint64_t *key_lens, size_t n, int64_t *out,
                        size_t *nout, char *err, size_t errlen);

// kvb_mc_teardown is RealClient::tearDownAll (idempotent).
int kvb_mc_teardown(kvb_mc_client *c, int64_t *code, char *err,
                    size_t errlen);

// kvb_mc_destroy tears the client down if it is not yet, and frees it.
void kvb_mc_destroy(kvb_mc_client *c);

#ifdef __cplusplus
}
#endif

#endif  // KVBLOB_MOONCAKE_SHIM_H

//go:build mooncake

// shim.cpp: the extern "C" functions of shim.h over Mooncake's RealClient.
// Compile it only with the -D flags, -std and include dirs of the SDK build's
// real_client.cpp (compile_commands.json); doc.go lists them.

#if __cplusplus < 202002L
#error "cgosdk: compile with -std=gnu++20 -fcoroutines, as the SDK's real_client.cpp (set CGO_CXXFLAGS; see doc.go)"
#endif
// Defined by every Mooncake build's real_client.cpp; missing means the
// SDK's -D flags were not passed, and RealClient's layout could differ from
// the library's.
#if !defined(YLT_ENABLE_IBV) || !defined(ASIO_SEPARATE_COMPILATION) || \
    !defined(CONFIG_ERDMA)
#error "cgosdk: compile with the -D flags of the SDK's real_client.cpp (set CGO_CPPFLAGS; see doc.go)"
#endif

#include "shim.h"

#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "real_client.h"
#include "version.h"

struct kvb_mc_client {
    std::shared_ptr<mooncake::RealClient> rc;
};

namespace {

void set_err(char *err, size_t errlen, const char *msg) {
    if (err == nullptr || errlen == 0) return;
    std::strncpy(err, msg, errlen - 1);
    err[errlen - 1] = '\0';
}

// guard runs f, turning an exception into -1 and its text.
template <typename F>
int guard(char *err, size_t errlen, F &&f) {
    try {
        f();
        return 0;
    } catch (const std::exception &e) {
        set_err(err, errlen, e.what());
    } catch (...) {
        set_err(err, errlen, "unknown C++ exception");
    }
    return -1;
}

std::vector<std::string> key_vec(const char *keys, const uint64_t *lens,
                                 size_t n) {
    std::vector<std::string> out;
    out.reserve(n);
    size_t off = 0;
    for (size_t i = 0; i < n; ++i) {
        out.emplace_back(keys + off, static_cast<size_t>(lens[i]));
        off += static_cast<size_t>(lens[i]);
    }
    return out;
}

template <typename T>
void answers(const std::vector<T> &got, size_t n, int64_t *out,
             size_t *nout) {
    for (size_t i = 0; i < got.size() && i < n; ++i) {
        out[i] = static_cast<int64_t>(got[i]);
    }
    *nout = got.size();
}

std::string str(const char *s) { return s == nullptr ? std::string() : s; }

}  // namespace

extern "C" {

const char *kvb_mc_display_version(void) {
    return mooncake::MOONCAKE_DISPLAY_VERSION;
}

const char *kvb_mc_rpc_version(void) { return mooncake::MOONCAKE_STORE_VERSION; }

int kvb_mc_create(kvb_mc_client **out, char *err, size_t errlen) {
    *out = nullptr;
    return guard(err, errlen, [&] {
        auto *c = new kvb_mc_client{std::make_shared<mooncake::RealClient>()};
        *out = c;
    });
}

int kvb_mc_setup(kvb_mc_client *c, const char *local_hostname,
                 const char *metadata_server, uint64_t global_segment_size,
                 uint64_t local_buffer_size, const char *protocol,
                 const char *rdma_devices, const char *master_server_addr,
                 int64_t *code, char *err, size_t errlen) {
    return guard(err, errlen, [&] {
        *code = c->rc->setup_real(str(local_hostname), str(metadata_server),
                                  global_segment_size, local_buffer_size,
                                  str(protocol), str(rdma_devices),
                                  str(master_server_addr));
    });
}

int kvb_mc_register_buffer(kvb_mc_client *c, uintptr_t addr, uint64_t len,
                           int64_t *code, char *err, size_t errlen) {
    return guard(err, errlen, [&] {
        *code = c->rc->register_buffer(reinterpret_cast<void *>(addr),
                                       static_cast<size_t>(len));
    });
}

int kvb_mc_unregister_buffer(kvb_mc_client *c, uintptr_t addr, int64_t *code,
                             char *err, size_t errlen) {
    return guard(err, errlen, [&] {
        *code = c->rc->unregister_buffer(reinterpret_cast<void *>(addr));
    });
}

int kvb_mc_batch_put_session_start(kvb_mc_client *c, const char *keys,
                                   const uint64_t *key_lens, size_t n,
                                   const uint64_t *sizes, int64_t *out,
                                   size_t *nout, char *err, size_t errlen) {
    return guard(err, errlen, [&] {
        std::vector<size_t> sz(sizes, sizes + n);
        answers(c->rc->batch_put_session_start(key_vec(keys, key_lens, n), sz),
                n, out, nout);
    });
}

int kvb_mc_batch_put_from_multi_buffer_ranges(
    kvb_mc_client *c, const char *keys, const uint64_t *key_lens, size_t n,
    const uint64_t *counts, const uintptr_t *addrs, const uint64_t *lens,
    const uint64_t *dst_offsets, int64_t *out, size_t *nout, char *err,
    size_t errlen) {
    return guard(err, errlen, [&] {
        std::vector<std::vector<void *>> bufs(n);
        std::vector<std::vector<size_t>> sizes(n), offsets(n);
        size_t j = 0;
        for (size_t i = 0; i < n; ++i) {
            for (uint64_t k = 0; k < counts[i]; ++k, ++j) {
                bufs[i].push_back(reinterpret_cast<void *>(addrs[j]));
                sizes[i].push_back(static_cast<size_t>(lens[j]));
                offsets[i].push_back(static_cast<size_t>(dst_offsets[j]));
            }
        }
        answers(c->rc->batch_put_from_multi_buffer_ranges(
                    key_vec(keys, key_lens, n), bufs, sizes, offsets),
                n, out, nout);
    });
}

int kvb_mc_batch_put_session_end(kvb_mc_client *c, const char *keys,
                                 const uint64_t *key_lens, size_t n,
                                 int64_t *out, size_t *nout, char *err,
                                 size_t errlen) {
    return guard(err, errlen, [&] {
        answers(c->rc->batch_put_session_end(key_vec(keys, key_lens, n)), n,
                out, nout);
    });
}

int kvb_mc_batch_put_session_revoke(kvb_mc_client *c, const char *keys,
                                    const uint64_t *key_lens, size_t n,
                                    int64_t *out, size_t *nout, char *err,
                                    size_t errlen) {
    return guard(err, errlen, [&] {
        answers(c->rc->batch_put_session_revoke(key_vec(keys, key_lens, n)), n,
                out, nout);
    });
}

// buffers turns the C arrays of one buffer per key into RealClient's
// pointer and size vectors.
static void buffers(const uintptr_t *addrs, const uint64_t *lens, size_t n,
                    std::vector<void *> &bufs, std::vector<size_t> &sizes) {
    bufs.resize(n);
    sizes.resize(n);
    for (size_t i = 0; i < n; ++i) {
        bufs[i] = reinterpret_cast<void *>(addrs[i]);
        sizes[i] = static_cast<size_t>(lens[i]);
    }
}

int kvb_mc_batch_get_into(kvb_mc_client *c, const char *keys,
                          const uint64_t *key_lens, size_t n,
                          const uintptr_t *addrs, const uint64_t *lens,
                          int64_t *out, size_t *nout, char *err,
                          size_t errlen) {
    return guard(err, errlen, [&] {
        std::vector<void *> bufs;
        std::vector<size_t> sizes;
        buffers(addrs, lens, n, bufs, sizes);
        answers(c->rc->batch_get_into(key_vec(keys, key_lens, n), bufs, sizes),
                n, out, nout);
    });
}

int kvb_mc_batch_put_from(kvb_mc_client *c, const char *keys,
                          const uint64_t *key_lens, size_t n,
                          const uintptr_t *addrs, const uint64_t *lens,
                          int64_t *out, size_t *nout, char *err,
                          size_t errlen) {
    return guard(err, errlen, [&] {
        std::vector<void *> bufs;
        std::vector<size_t> sizes;
        buffers(addrs, lens, n, bufs, sizes);
        answers(c->rc->batch_put_from(key_vec(keys, key_lens, n), bufs, sizes),
                n, out, nout);
    });
}

int kvb_mc_batch_is_exist(kvb_mc_client *c, const char *keys,
                          const uint64_t *key_lens, size_t n, int64_t *out,
                          size_t *nout, char *err, size_t errlen) {
    return guard(err, errlen, [&] {
        answers(c->rc->batchIsExist(key_vec(keys, key_lens, n)), n, out, nout);
    });
}

int kvb_mc_batch_remove(kvb_mc_client *c, const char *keys,
                        const uint64_t *key_lens, size_t n, int64_t *out,
                        size_t *nout, char *err, size_t errlen) {
    return guard(err, errlen, [&] {
        answers(c->rc->batchRemove(key_vec(keys, key_lens, n), true), n, out,
                nout);
    });
}

int kvb_mc_teardown(kvb_mc_client *c, int64_t *code, char *err,
                    size_t errlen) {
    return guard(err, errlen, [&] { *code = c->rc->tearDownAll(); });
}

void kvb_mc_destroy(kvb_mc_client *c) {
    if (c == nullptr) return;
    try {
        c->rc->tearDownAll();
    } catch (...) {
    }
    try {
        delete c;
    } catch (...) {
    }
}

}  // extern "C"

// Package cgosdk is the Mooncake SDK over the real client: Mooncake's
// RealClient (mooncake-store/include/real_client.h, the class the Python SDK
// wraps), through a small C++ shim, shim.cpp, with the C view shim.h. It
// builds only with the build tag mooncake; nothing of Mooncake is vendored
// here, and nothing here builds Mooncake.
//
// Files behind the tag: shim.h and shim.cpp (extern "C" over RealClient:
// create, setup_real, register_buffer, unregister_buffer,
// batch_put_session_start/_end/_revoke, batch_put_from_multi_buffer_ranges
// with explicit destination offsets, batch_get_into, batchIsExist,
// tearDownAll, the build's version strings, and batch_put_from, the raw put
// the benchmark compares with), cgosdk.go (the mooncake.SDK over the shim)
// and conformance_test.go (the conformance suite over
// internal/mooncakekit/realkit, a real mooncake_master on loopback and what
// a real pool can stage; run only with MOONCAKE_REAL=1, and by 'gate --sdk
// real').
//
// # Version
//
// SDKVersion is the display version the SDK build reports
// (MOONCAKE_DISPLAY_VERSION in the build's generated version.h, the string
// mooncake_master --version prints), e.g. "0.3.12.post1 (git: 3b5a59413)"
// for main at 3b5a594. It is read from the SDK when the package starts; no
// link-time flag sets it. The driver opens only a version
// spec/mooncake-*.yaml names.
//
// # What an installed SDK must provide
//
// An SDK installed with static libraries, the store and the transfer
// engine, from the same tree as the mooncake_master the client talks to:
//
//   - headers: the include dirs real_client.cpp is compiled with, as listed
//     for it in the build's compile_commands.json: <src>/mooncake-store/include,
//     <src>/mooncake-store/include/cachelib_memory_allocator{,/include,/fake_include},
//     <src>/mooncake-transfer-engine/include, <src>/mooncake-common/include,
//     <build>/mooncake-store/include (the generated version.h),
//     yalantinglibs' installed include dir, and /usr/include/jsoncpp;
//   - static libraries from <build>: libmooncake_store.a,
//     libcachelib_memory_allocator.a, libmooncake_local_ssd.a,
//     libtransfer_engine.a, libbase.a, libmooncake_common.a; and the shared
//     libasio.so (mooncake-common), found at run time (LD_LIBRARY_PATH);
//   - the system libraries they use (Debian: libcurl, glog, gflags, jsoncpp,
//     numa, ibverbs, zstd, yaml-cpp, xxhash, liburing).
//
// # Building against it
//
// shim.cpp must be compiled with the flags of the SDK's own real_client.cpp:
// RealClient's layout depends on its -D flags, so a shim compiled without
// them reads the library's objects wrongly. Take them from the
// compile_commands.json entry of mooncake-store/src/real_client.cpp. For a
// default build on Debian bookworm (main at 3b5a594) they are
//
//	-DASIO_DYN_LINK -DASIO_SEPARATE_COMPILATION -DCONFIG_ERDMA
//	-DGFLAGS_IS_A_DLL=0 -DGLOG_CUSTOM_PREFIX_SUPPORT -DGLOG_USE_GLOG_EXPORT
//	-DMOONCAKE_HAVE_NVME_URING_CMD=1 -DUSE_HTTP -DUSE_TCP -DUSE_URING
//	-DWITH_METRICS -DYLT_ENABLE_DL -DYLT_ENABLE_IBV -DNDEBUG
//
// and -std=gnu++20 -fcoroutines. A build with other options (CUDA, etcd,
// another transport) has other flags: copy that build's. shim.cpp refuses
// to compile without -std=gnu++20 or without the flags every build defines.
//
// Nothing is hard-coded here; set, with SRC the SDK's source tree, BUILD its
// build dir and YLT yalantinglibs' install prefix:
//
//	export CGO_ENABLED=1
//	export CGO_CPPFLAGS="<the -D flags above> \
//	  -I$SRC/mooncake-store/include \
//	  -I$SRC/mooncake-store/include/cachelib_memory_allocator \
//	  -I$SRC/mooncake-store/include/cachelib_memory_allocator/include \
//	  -I$SRC/mooncake-store/include/cachelib_memory_allocator/fake_include \
//	  -I$SRC/mooncake-transfer-engine/include -I$SRC/mooncake-common/include \
//	  -I$BUILD/mooncake-store/include -isystem $YLT/include -isystem /usr/include/jsoncpp"
//	export CGO_CXXFLAGS="-std=gnu++20 -fcoroutines -O2 -g"
//	export CGO_LDFLAGS="-L$BUILD/mooncake-store/src \
//	  -L$BUILD/mooncake-store/src/cachelib_memory_allocator \
//	  -L$BUILD/mooncake-store/src/local_ssd -L$BUILD/mooncake-transfer-engine/src \
//	  -L$BUILD/mooncake-transfer-engine/src/common/base \
//	  -L$BUILD/mooncake-common -L$BUILD/mooncake-common/src \
//	  -Wl,--start-group -lmooncake_store -lcachelib_memory_allocator \
//	  -lmooncake_local_ssd -ltransfer_engine -lbase -lmooncake_common -Wl,--end-group \
//	  -lasio -lcurl -lglog -lgflags -ljsoncpp -lnuma -libverbs -lzstd -lyaml-cpp \
//	  -lxxhash -luring -ldl -lpthread -lstdc++ -lm"
//	export LD_LIBRARY_PATH=$BUILD/mooncake-common   # libasio.so
//
// then
//
//	go vet -tags mooncake ./stores/mooncake/cgosdk/
//	PATH=<dir of mooncake_master>:$PATH MOONCAKE_REAL=1 \
//	  go test -tags mooncake -count=1 -v ./stores/mooncake/cgosdk/
//
// The libraries may be copied elsewhere (one -L then); the headers must stay
// those of the build the libraries came from.
//
// # Behaviour worth knowing
//
// A client is constructed directly, not through RealClient::create(): that
// factory starts Mooncake's ResourceTracker, a thread that sigwaits SIGINT,
// SIGTERM, SIGHUP and SIGUSR1 in competition with Go's signal handling and
// tears every client down on them, and blocks those signals in the calling
// thread. Close (tearDownAll) takes about 2 s.
package cgosdk

// SDKVersion is the linked SDK's display version, as the SDK reports it
// (see the package doc); "unknown" in a build without the tag mooncake.
var SDKVersion = "unknown"

// RPCVersion is the linked SDK's RPC handshake version (version.h's
// MOONCAKE_STORE_VERSION, "2.0.0" at 3b5a594); "unknown" without the tag.
var RPCVersion = "unknown"

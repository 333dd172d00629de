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
// stores/mooncake/mooncakekit/realkit, a real mooncake_master on loopback and what
// a real pool can stage; run only with MOONCAKE_REAL=1, and by 'gate --sdk
// real').
//
// # Version
//
// SDKVersion is the display version the SDK build reports
// (MOONCAKE_DISPLAY_VERSION in the build's generated version.h, the string
// mooncake_master --version prints), e.g. "0.3.12.post1 (git: 3b5a59413)"
// for main at 3b5a594. It is read from the SDK when the package starts; no
// link-time flag sets it. The driver opens a build of a release
// spec/mooncake-*.yaml names, and one its spec was not verified on
// (sdk.verified) only with Options.AllowUnverified.
//
// # Building against an SDK build
//
// Mooncake installs neither its headers nor its static libraries, so a
// cgo build reads them from the SDK's CMake build tree. shim.cpp must be
// compiled with the flags of the SDK's own real_client.cpp: RealClient's
// layout depends on its -D flags, so a shim compiled without them reads
// the library's objects wrongly (shim.cpp refuses to compile without
// -std=gnu++20 or without the flags every build defines). 'gate cgoflags'
// (cmd/gate/cgoflags.go, the one list of what is linked) reads them from
// the build's compile_commands.json, finds the libraries the build left
// (static: the store, the transfer engine and their parts; shared:
// libasio, found at run time through LD_LIBRARY_PATH) and the
// mooncake_master, and prints the environment:
//
//	eval "$(go run ./cmd/gate cgoflags <the SDK's build dir>)"
//	go vet -tags mooncake ./stores/mooncake/cgosdk/
//	PATH=$MOONCAKE_MASTER_DIR:$PATH MOONCAKE_REAL=1 \
//	  go test -tags mooncake -count=1 -v ./stores/mooncake/cgosdk/
//
// The system libraries are Debian bookworm's (libcurl, glog, gflags,
// jsoncpp, numa, ibverbs, zstd, yaml-cpp, xxhash, liburing). The headers
// must be those of the build the libraries came from.
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

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeBuild lays out a Mooncake build tree as CMake leaves it: the
// compile_commands.json entry of real_client.cpp (written as command,
// or as arguments), the libraries, the master and version.h. It returns
// the tree and the source tree the entry names.
func fakeBuild(t *testing.T, asArguments bool) (build, src string) {
	t.Helper()
	root := t.TempDir()
	build, src = filepath.Join(root, "build"), filepath.Join(root, "src")
	files := map[string]string{
		"mooncake-store/src/libmooncake_store.a":                                      "",
		"mooncake-store/src/CMakeFiles/x.dir/libmooncake_store.a":                     "", // CMake's own folder: never taken
		"mooncake-store/src/cachelib_memory_allocator/libcachelib_memory_allocator.a": "",
		"mooncake-store/src/local_ssd/libmooncake_local_ssd.a":                        "",
		"mooncake-transfer-engine/src/libtransfer_engine.a":                           "",
		"mooncake-transfer-engine/src/common/base/libbase.a":                          "",
		"mooncake-common/src/libmooncake_common.a":                                    "",
		"mooncake-common/libasio.so":                                                  "",
		"mooncake-store/src/mooncake_master":                                          "",
		"mooncake-store/include/version.h":                                            `constexpr const char* MOONCAKE_DISPLAY_VERSION = "0.3.12.post1 (git: 3b5a59413)";`,
	}
	for name, body := range files {
		p := filepath.Join(build, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o755))
	}
	cmd := "/usr/bin/c++ -DASIO_DYN_LINK -DUSE_TCP '-DQUOTED=a b' -I" + src + "/mooncake-store/include -I" + build + "/mooncake-store/src/../include " +
		"-I ../rel/include -isystem " + root + "/ylt/include -Wall -Wextra -fPIC -g -fcoroutines -O2 -DNDEBUG -std=gnu++20 " +
		"-o mooncake-store/src/CMakeFiles/o.dir/real_client.cpp.o -c " + src + "/mooncake-store/src/real_client.cpp"
	entry := map[string]any{"directory": build, "file": src + "/mooncake-store/src/real_client.cpp"}
	if asArguments {
		args, err := splitCommand(cmd)
		require.NoError(t, err)
		entry["arguments"] = args
	} else {
		entry["command"] = cmd
	}
	db, _ := json.Marshal([]any{map[string]any{"directory": build, "file": src + "/other.cpp", "command": "c++ -DOTHER -c other.cpp"}, entry})
	require.NoError(t, os.WriteFile(filepath.Join(build, "compile_commands.json"), db, 0o644))
	return build, src
}

// TestCgoflagsReadsTheBuildTree: the flags are real_client.cpp's own
// (defines, include dirs made absolute, -std/-f/-O/-g; no warnings, no
// -fPIC, nothing of another source), the libraries are found where the
// build left them, and both output formats carry the same values.
func TestCgoflagsReadsTheBuildTree(t *testing.T) {
	for _, asArguments := range []bool{false, true} {
		build, src := fakeBuild(t, asArguments)
		code, out, stderr := runCLI("cgoflags", "-format", "github", build)
		require.Equal(t, 0, code, stderr)
		want := strings.Join([]string{
			"CGO_ENABLED=1",
			"CGO_CPPFLAGS=-DASIO_DYN_LINK -DUSE_TCP -DQUOTED=a b -I" + src + "/mooncake-store/include -I" + build + "/mooncake-store/include -I " +
				filepath.Join(build, "../rel/include") + " -isystem " + filepath.Dir(build) + "/ylt/include -DNDEBUG -DKVBLOB_SDK_DIGEST=<digest>",
			"CGO_CXXFLAGS=-g -fcoroutines -O2 -std=gnu++20",
			"CGO_LDFLAGS=-L" + build + "/mooncake-store/src -L" + build + "/mooncake-store/src/cachelib_memory_allocator -L" + build + "/mooncake-store/src/local_ssd -L" +
				build + "/mooncake-transfer-engine/src -L" + build + "/mooncake-transfer-engine/src/common/base -L" + build + "/mooncake-common/src -L" + build + "/mooncake-common " +
				"-Wl,--start-group -lmooncake_store -lcachelib_memory_allocator -lmooncake_local_ssd -ltransfer_engine -lbase -lmooncake_common -Wl,--end-group " +
				"-lasio -lcurl -lglog -lgflags -ljsoncpp -lnuma -libverbs -lzstd -lyaml-cpp -lxxhash -luring -ldl -lpthread -lstdc++ -lm",
			"LD_LIBRARY_PATH=" + build + "/mooncake-common",
			"MOONCAKE_MASTER_DIR=" + build + "/mooncake-store/src",
			"MOONCAKE_VERSION=0.3.12.post1 (git: 3b5a59413)",
		}, "\n") + "\n"
		assert.Equal(t, want, anyDigest(out), "arguments: %v", asArguments)

		// Reached through a symbolic link, the tree gives the same
		// environment: the link is resolved before the walk.
		link := filepath.Join(t.TempDir(), "build")
		require.NoError(t, os.Symlink(build, link))
		code, viaLink, stderr := runCLI("cgoflags", "-format", "github", link)
		require.Equal(t, 0, code, stderr)
		assert.Equal(t, out, viaLink, "through a link; arguments: %v", asArguments)

		code, sh, stderr := runCLI("cgoflags", build)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, sh, "export CGO_CPPFLAGS='-DASIO_DYN_LINK -DUSE_TCP -DQUOTED=a b ")
		assert.Contains(t, sh, "export MOONCAKE_VERSION='0.3.12.post1 (git: 3b5a59413)'\n")
	}
}

var digestRE = regexp.MustCompile(`-DKVBLOB_SDK_DIGEST=[0-9a-f]{32}\b`)

// anyDigest replaces the digest define's value in out by <digest>.
func anyDigest(out string) string {
	return digestRE.ReplaceAllString(out, "-DKVBLOB_SDK_DIGEST=<digest>")
}

// digestOf runs 'gate cgoflags' over build and returns the digest define.
func digestOf(t *testing.T, build string) string {
	t.Helper()
	code, out, stderr := runCLI("cgoflags", "-format", "github", build)
	require.Equal(t, 0, code, stderr)
	d := digestRE.FindString(out)
	require.NotEmpty(t, d, out)
	return d
}

// TestCgoflagsDigestFollowsTheSDK: the digest define changes with every
// byte the cgo build compiles or links against (a library, the version
// header, a header under an -I dir), so Go's cache, which sees the flags
// but neither headers nor libraries, never reuses a build of another SDK;
// and it stays the same for the same bytes elsewhere, and for what is not
// the SDK's (a file that is no header, a header of an -isystem dir).
func TestCgoflagsDigestFollowsTheSDK(t *testing.T) {
	for _, c := range []struct {
		name, file string // file, relative to the tree's root
		changes    bool
	}{
		{"a static library", "build/mooncake-transfer-engine/src/libtransfer_engine.a", true},
		{"the shared library", "build/mooncake-common/libasio.so", true},
		{"the version header", "build/mooncake-store/include/version.h", true},
		{"a header under an -I dir", "src/mooncake-store/include/real_client.h", true},
		{"a header in a subfolder of an -I dir", "src/mooncake-store/include/sub/types.hpp", true},
		{"a file under an -I dir that is no header", "src/mooncake-store/include/notes.txt", false},
		{"a header of an -isystem dir", "ylt/include/ylt.h", false},
		{"the master", "build/mooncake-store/src/mooncake_master", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			build, src := fakeBuild(t, false)
			root := filepath.Dir(build)
			require.Equal(t, root, filepath.Dir(src))
			before := digestOf(t, build)
			p := filepath.Join(root, c.file)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			require.NoError(t, err)
			_, err = f.WriteString("one more byte")
			require.NoError(t, err)
			require.NoError(t, f.Close())
			after := digestOf(t, build)
			if c.changes {
				assert.NotEqual(t, before, after)
			} else {
				assert.Equal(t, before, after)
			}
		})
	}
	// The same bytes in another place: the same digest.
	a, _ := fakeBuild(t, false)
	b, _ := fakeBuild(t, false)
	assert.Equal(t, digestOf(t, a), digestOf(t, b))
}

// TestCgoflagsRefusesAnIncompleteTree: what the tree lacks is named, and
// the exit code is 2 (a set-up problem).
func TestCgoflagsRefusesAnIncompleteTree(t *testing.T) {
	for _, c := range []struct {
		remove, want string
	}{
		{"compile_commands.json", "CMAKE_EXPORT_COMPILE_COMMANDS=ON"},
		{"mooncake-transfer-engine/src/libtransfer_engine.a", "lacks transfer_engine: build the SDK's targets mooncake_store and mooncake_master there first"},
		{"mooncake-store/src/mooncake_master", "lacks mooncake_master"},
		{"mooncake-store/include/version.h", "the build's version header"},
	} {
		build, _ := fakeBuild(t, false)
		require.NoError(t, os.Remove(filepath.Join(build, c.remove)))
		code, out, stderr := runCLI("cgoflags", build)
		assert.Equal(t, 2, code, c.remove)
		assert.Empty(t, out)
		assert.Contains(t, stderr, c.want, c.remove)
	}
	code, _, stderr := runCLI("cgoflags", "-format", "json", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "usage: gate cgoflags")
}

// TestSplitCommand: a compile command splits as a POSIX shell splits it:
// blanks (space, tab, newline) between arguments, quotes and backslashes
// joining; an empty quoted argument is an argument; a quote or backslash
// left open is an error.
func TestSplitCommand(t *testing.T) {
	for _, c := range []struct {
		cmd  string
		want []string
	}{
		{`c++ -DA="x y" '-DB=it'\''s' -DC=a\ b  -c f.cpp`, []string{"c++", "-DA=x y", "-DB=it's", "-DC=a b", "-c", "f.cpp"}},
		{"", nil},
		{" \t\n", nil},
		{"a", []string{"a"}},
		{" a\tb\nc ", []string{"a", "b", "c"}},
		{`''`, []string{""}},
		{`a '' b`, []string{"a", "", "b"}},
		{`a''b`, []string{"ab"}},
		{`"a b"c`, []string{"a bc"}},
		{`'a\b'`, []string{`a\b`}},
		{`"a\"b"`, []string{`a"b`}},
		{`"a'b" 'a"b'`, []string{"a'b", `a"b`}},
		{`\'`, []string{"'"}},
		{`\ `, []string{" "}},
		{`a\\`, []string{`a\`}},
	} {
		got, err := splitCommand(c.cmd)
		if assert.NoError(t, err, "%q", c.cmd) {
			assert.Equal(t, c.want, got, "%q", c.cmd)
		}
	}
	for _, cmd := range []string{`c++ "-DA`, `'a`, `a\`, `"a\"`} {
		_, err := splitCommand(cmd)
		assert.EqualError(t, err, "unterminated quote", "%q", cmd)
	}
	for _, arg := range []string{"", "a", "a b", "it's", `\`, `"`, "'''", "a\tb\nc"} {
		got, err := splitCommand("x " + shellQuote(arg))
		if assert.NoError(t, err, "%q", arg) {
			assert.Equal(t, []string{"x", arg}, got, "shellQuote(%q) reads back as itself", arg)
		}
	}
}

// TestIncludeDirs: the -I directories of a command, joined or as the next
// argument, in order; not -isystem's, and not a -I that ends the command.
func TestIncludeDirs(t *testing.T) {
	assert.Equal(t, []string{"x", "y", "z"}, includeDirs([]string{"c++", "-I", "x", "-Iy", "-isystem", "s", "-isystem/t", "-DI", "-I", "z", "-I"}))
	assert.Empty(t, includeDirs([]string{"-I"}))
	assert.Empty(t, includeDirs(nil))
}

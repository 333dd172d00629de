package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The Mooncake SDK a cgo build of stores/mooncake/cgosdk links: what
// 'gate cgoflags' finds in a Mooncake build tree. This is the one list of
// it (stores/mooncake/cgosdk/doc.go points here).
var (
	// cgoSource is the SDK source whose compile flags the shim must share:
	// RealClient's layout depends on its -D flags.
	cgoSource = "mooncake-store/src/real_client.cpp"
	// cgoStaticLibs are the SDK's static libraries, in link order (linked
	// as one group).
	cgoStaticLibs = []string{"mooncake_store", "cachelib_memory_allocator", "mooncake_local_ssd", "transfer_engine", "base", "mooncake_common"}
	// cgoSharedLibs are the SDK's shared libraries, found at run time
	// through LD_LIBRARY_PATH.
	cgoSharedLibs = []string{"asio"}
	// cgoSystemLibs are the system libraries they use (Debian bookworm's
	// packages of the same names).
	cgoSystemLibs = []string{"curl", "glog", "gflags", "jsoncpp", "numa", "ibverbs", "zstd", "yaml-cpp", "xxhash", "uring", "dl", "pthread", "stdc++", "m"}
	// cgoMaster is the master the real tests start.
	cgoMaster = "mooncake_master"
	// cgoVersionHeader is the build's generated version header, and the
	// define in it that holds what the build reports itself as.
	cgoVersionHeader = "mooncake-store/include/version.h"
	cgoVersionRE     = regexp.MustCompile(`MOONCAKE_DISPLAY_VERSION\s*=\s*"([^"]*)"`)
)

// runCgoflags is 'gate cgoflags [-format sh|github] BUILD_DIR': the
// environment a cgo build of the real Mooncake SDK needs, read from a
// Mooncake build tree (CMake's, with compile_commands.json, which
// CMAKE_EXPORT_COMPILE_COMMANDS or Mooncake's own CMakeLists writes):
// CGO_CPPFLAGS and CGO_CXXFLAGS are the -D, -I, -isystem, -std, -f and -O
// flags the build compiled cgoSource with (relative include dirs made
// absolute against its directory); CGO_LDFLAGS links the SDK's libraries,
// each found in the tree; LD_LIBRARY_PATH holds its shared ones;
// MOONCAKE_MASTER_DIR is the folder of the build's mooncake_master and
// MOONCAKE_VERSION the version the build reports. CGO_CPPFLAGS also
// carries a digest of the SDK (cgoDigestDefine), so Go's cache never
// reuses a build against another SDK. -format sh prints export
// lines for eval; -format github prints NAME=value lines for
// $GITHUB_ENV. Exit 2 when the tree lacks any of it.
func runCgoflags(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gate cgoflags", flag.ContinueOnError)
	fs.SetOutput(stderr)
	format := fs.String("format", "sh", "sh: export lines for eval; github: NAME=value lines for $GITHUB_ENV")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: gate cgoflags [-format sh|github] BUILD_DIR")
		fmt.Fprintln(stderr, "\nPrints the cgo flags and environment a build of stores/mooncake/cgosdk (-tags mooncake)")
		fmt.Fprintln(stderr, "needs, read from a Mooncake build tree and its compile_commands.json.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != 1 || (*format != "sh" && *format != "github") {
		fs.Usage()
		return 2
	}
	env, err := cgoEnv(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "gate cgoflags: %v\n", err)
		return 2
	}
	for _, kv := range env {
		if *format == "github" {
			fmt.Fprintf(stdout, "%s=%s\n", kv[0], kv[1])
		} else {
			fmt.Fprintf(stdout, "export %s=%s\n", kv[0], shellQuote(kv[1]))
		}
	}
	return 0
}

// cgoEnv reads build's tree and returns the environment, in order.
func cgoEnv(build string) ([][2]string, error) {
	build, err := filepath.Abs(build)
	if err != nil {
		return nil, err
	}
	// A CI often reaches its build tree through a symbolic link (a
	// workspace path onto a cache), and a walk from a link stops at the
	// link: resolve it, so the libraries are found under what it names.
	if build, err = filepath.EvalSymlinks(build); err != nil {
		return nil, fmt.Errorf("the build tree: %w", err)
	}
	cpp, cxx, err := compileFlags(filepath.Join(build, "compile_commands.json"), cgoSource)
	if err != nil {
		return nil, err
	}
	found, err := findFiles(build, cgoStaticLibs, cgoSharedLibs)
	if err != nil {
		return nil, err
	}
	var libDirs, ld []string
	addDir := func(dirs *[]string, d string) {
		for _, x := range *dirs {
			if x == d {
				return
			}
		}
		*dirs = append(*dirs, d)
	}
	var missing []string
	for _, l := range append(append([]string{}, cgoStaticLibs...), cgoSharedLibs...) {
		p, ok := found[l]
		if !ok {
			missing = append(missing, l)
			continue
		}
		addDir(&libDirs, filepath.Dir(p))
	}
	master, ok := found[cgoMaster]
	if !ok {
		missing = append(missing, cgoMaster)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s lacks %s: build the SDK's targets mooncake_store and mooncake_master there first", build, strings.Join(missing, ", "))
	}
	for _, l := range cgoSharedLibs {
		addDir(&ld, filepath.Dir(found[l]))
	}
	var ldflags []string
	for _, d := range libDirs {
		ldflags = append(ldflags, "-L"+d)
	}
	ldflags = append(ldflags, "-Wl,--start-group")
	for _, l := range cgoStaticLibs {
		ldflags = append(ldflags, "-l"+l)
	}
	ldflags = append(ldflags, "-Wl,--end-group")
	for _, l := range append(append([]string{}, cgoSharedLibs...), cgoSystemLibs...) {
		ldflags = append(ldflags, "-l"+l)
	}
	vh, err := os.ReadFile(filepath.Join(build, cgoVersionHeader))
	if err != nil {
		return nil, fmt.Errorf("the build's version header: %w", err)
	}
	m := cgoVersionRE.FindSubmatch(vh)
	if m == nil {
		return nil, fmt.Errorf("%s defines no MOONCAKE_DISPLAY_VERSION", filepath.Join(build, cgoVersionHeader))
	}
	var linked []string
	for _, l := range append(append([]string{}, cgoStaticLibs...), cgoSharedLibs...) {
		linked = append(linked, found[l])
	}
	digest, err := sdkDigest(linked, filepath.Join(build, cgoVersionHeader), includeDirs(cpp))
	if err != nil {
		return nil, fmt.Errorf("reading the SDK to digest it: %w", err)
	}
	cpp = append(cpp, "-D"+cgoDigestDefine+"="+digest)
	return [][2]string{
		{"CGO_ENABLED", "1"},
		{"CGO_CPPFLAGS", strings.Join(cpp, " ")},
		{"CGO_CXXFLAGS", strings.Join(cxx, " ")},
		{"CGO_LDFLAGS", strings.Join(ldflags, " ")},
		{"LD_LIBRARY_PATH", strings.Join(ld, ":")},
		{"MOONCAKE_MASTER_DIR", filepath.Dir(master)},
		{"MOONCAKE_VERSION", string(m[1])},
	}, nil
}

// compileFlags returns the preprocessor and C++ flags compile_commands.json
// at db lists for the source whose path ends in source: -D, -U, -I and
// -isystem (dirs made absolute against the entry's directory) for the
// preprocessor; -std, -f, -O and -g for C++. Warnings, -o, -c and the
// source are left out.
func compileFlags(db, source string) (cpp, cxx []string, err error) {
	b, err := os.ReadFile(db)
	if err != nil {
		return nil, nil, fmt.Errorf("%w (configure the SDK with CMake and -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)", err)
	}
	var entries []struct {
		Directory, File, Command string
		Arguments                []string
	}
	if err := json.Unmarshal(b, &entries); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", db, err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(filepath.ToSlash(e.File), "/"+source) {
			continue
		}
		args := e.Arguments
		if len(args) == 0 {
			if args, err = splitCommand(e.Command); err != nil {
				return nil, nil, fmt.Errorf("%s: the command of %s: %w", db, e.File, err)
			}
		}
		abs := func(d string) string {
			if !filepath.IsAbs(d) {
				d = filepath.Join(e.Directory, d)
			}
			return filepath.Clean(d)
		}
		for i := 1; i < len(args); i++ {
			a := args[i]
			switch {
			case a == "-o" || a == "-c" || a == "-MF" || a == "-MT" || a == "-MQ":
				i++ // and its argument
			case a == "-I" || a == "-isystem":
				if i+1 < len(args) {
					cpp = append(cpp, a, abs(args[i+1]))
					i++
				}
			case strings.HasPrefix(a, "-I"):
				cpp = append(cpp, "-I"+abs(a[2:]))
			case strings.HasPrefix(a, "-isystem"):
				cpp = append(cpp, "-isystem", abs(a[len("-isystem"):]))
			case strings.HasPrefix(a, "-D"), strings.HasPrefix(a, "-U"):
				cpp = append(cpp, a)
			case strings.HasPrefix(a, "-std="), strings.HasPrefix(a, "-O"), a == "-g",
				strings.HasPrefix(a, "-f") && a != "-fPIC":
				cxx = append(cxx, a)
			}
		}
		return cpp, cxx, nil
	}
	return nil, nil, fmt.Errorf("%s has no entry for %s: is it a Mooncake build tree?", db, source)
}

// splitCommand splits a compile command as a POSIX shell would, for the
// quoting CMake writes: single and double quotes and backslashes.
func splitCommand(s string) ([]string, error) {
	var args []string
	var cur strings.Builder
	in, quote, escaped := false, byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			cur.WriteByte(c)
			escaped, in = false, true
		case c == '\\' && quote != '\'':
			escaped = true
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				args = append(args, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 || escaped {
		return nil, errors.New("unterminated quote")
	}
	if in {
		args = append(args, cur.String())
	}
	return args, nil
}

// findFiles finds, under build, lib<name>.a for each of static,
// lib<name>.so for each of shared, and the executable cgoMaster: the first
// of each by path order, skipping CMake's own folders.
func findFiles(build string, static, shared []string) (map[string]string, error) {
	want := map[string]string{cgoMaster: cgoMaster}
	for _, l := range static {
		want["lib"+l+".a"] = l
	}
	for _, l := range shared {
		want["lib"+l+".so"] = l
	}
	found := map[string]string{}
	err := filepath.WalkDir(build, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "CMakeFiles" {
			return filepath.SkipDir
		}
		name, ok := want[d.Name()]
		if ok && !d.IsDir() {
			if _, seen := found[name]; !seen {
				found[name] = p
			}
		}
		return nil
	})
	return found, err
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cgoDigestDefine is the define 'gate cgoflags' adds to CGO_CPPFLAGS: a
// digest of the SDK the build compiles and links against (sdkDigest).
//
// Go's build cache keys a cgo package on its own files and on the CGO_*
// flags, never on the headers it includes from elsewhere nor the
// libraries it links ('go help cache'). An SDK's CI that restores a Go
// cache (actions/setup-go does by default) would otherwise reuse the
// shim compiled against the previous commit's headers (RealClient's
// layout, the version string the gate picks the spec by) and a test
// binary linked with its libraries: the gate would report the old build.
// With the digest in the flags, another SDK is another cache key.
const cgoDigestDefine = "KVBLOB_SDK_DIGEST"

// includeDirs returns the -I directories of cpp (not -isystem: the
// system's and third-party headers are not the SDK's).
func includeDirs(cpp []string) []string {
	var dirs []string
	for i, a := range cpp {
		switch {
		case a == "-I" && i+1 < len(cpp):
			dirs = append(dirs, cpp[i+1])
		case strings.HasPrefix(a, "-I") && len(a) > 2:
			dirs = append(dirs, a[2:])
		}
	}
	return dirs
}

// sdkDigest is the first 16 bytes, in hex, of a SHA-256 over the bytes of
// each linked library, the version header and every header under the
// include dirs, each named by its path from its own root (a library by its
// file name, a header from its include dir): the same SDK build gives the
// same digest wherever its tree lies, and any change the shim could see
// gives another.
func sdkDigest(libs []string, versionHeader string, incDirs []string) (string, error) {
	h := sha256.New()
	add := func(name, p string) error {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\x00", name)
		_, err = io.Copy(h, f)
		return err
	}
	for _, p := range append(append([]string{}, libs...), versionHeader) {
		if err := add(filepath.Base(p), p); err != nil {
			return "", err
		}
	}
	for _, d := range incDirs {
		// WalkDir visits in lexical order, so the order is fixed.
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if p == d && errors.Is(err, fs.ErrNotExist) {
					return filepath.SkipDir // a dir the compiler was told of but the tree lacks
				}
				return err
			}
			switch filepath.Ext(p) {
			case ".h", ".hh", ".hpp", ".hxx", ".inl", ".ipp", ".tcc":
				if e.Type().IsRegular() {
					rel, _ := filepath.Rel(d, p)
					return add(rel, p)
				}
			}
			return nil
		})
		if err != nil {
			return "", err
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

package rediskit

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	redisgen "github.com/kvblob/kvblob/generated/redis"
	"github.com/kvblob/kvblob/generated/redis/rediscases"
	"github.com/kvblob/kvblob/runtime/rules"
)

// A Build is a server build kvblob holds a spec for, as the tests run it:
// its spec and generated cases, and the programs that run it. Each build's
// spec is tested against that build: the conformance suite, the spec's own
// generated cases, and SDKChecks that ask the live server for the replies
// its rules rely on.
type Build struct {
	// Name names the build in test names ("redis-7"); Store names the
	// Redis store over it in the gate and in blobbench ("redis",
	// "redis-valkey-8.1").
	Name, Store string
	// Spec and Cases are the build's generated package's.
	Spec  *rules.Spec
	Cases []conformance.Case
	// Server and CLI find the server program and its client (the client
	// creates Clusters); each returns the program, or "" and why it is
	// missing and how to get it.
	Server, CLI func() (path, why string)
	// Env are the environment variables that name the build's programs
	// instead (none for Redis7, whose programs are the ones on PATH).
	Env []string
}

// Named reports whether the environment names the build's programs: a
// build the user chose, whose absence is an error, not a reason to skip.
func (b *Build) Named() bool {
	for _, e := range b.Env {
		if os.Getenv(e) != "" {
			return true
		}
	}
	return false
}

// Redis7 is Debian's redis-server 7 (spec/redis-7.yaml).
var Redis7 = &Build{
	Name: "redis-7", Store: "redis", Spec: redisgen.Redis7().Spec, Cases: rediscases.Redis7(),
	Server: onPath("redis-server", "apt-get install redis-server"),
	CLI:    onPath("redis-cli", "apt-get install redis-tools"),
}

// Valkey81 is Valkey 8.1 (spec/redis-valkey-8.1.yaml): Debian trixie's
// valkey-server 8.1.x, which 'make deps' fetches into .bin/valkey-8.1 with
// the trixie C library it runs on (Debian 12 has no Valkey 8.1).
// KVBLOB_VALKEY_SERVER and KVBLOB_VALKEY_CLI name other programs.
var Valkey81 = &Build{
	Name: "valkey-8.1", Store: "redis-valkey-8.1", Spec: redisgen.RedisValkey81().Spec, Cases: rediscases.RedisValkey81(),
	Server: valkey("KVBLOB_VALKEY_SERVER", "valkey-server"),
	CLI:    valkey("KVBLOB_VALKEY_CLI", "valkey-cli"),
	Env:    []string{"KVBLOB_VALKEY_SERVER", "KVBLOB_VALKEY_CLI"},
}

// Builds are every build, in the order of the driver's specs (redis.Specs;
// a test holds the two lists to each other).
var Builds = []*Build{Redis7, Valkey81}

// BuildOf returns the build whose spec is spec, or nil.
func BuildOf(spec *rules.Spec) *Build {
	for _, b := range Builds {
		if b.Spec == spec {
			return b
		}
	}
	return nil
}

// Available reports whether the build's server and client are installed,
// and if not, what to do.
func (b *Build) Available() (bool, string) {
	if _, why := b.Server(); why != "" {
		return false, why
	}
	if _, why := b.CLI(); why != "" {
		return false, why
	}
	return true, ""
}

func (b *Build) server(args func(host string, port int, dir string) []string, ready func(addr string) error) (storekit.Spec, error) {
	path, why := b.Server()
	if why != "" {
		return storekit.Spec{}, fmt.Errorf("rediskit: %s", why)
	}
	return storekit.Spec{Binary: path, Args: args, Ready: ready}, nil
}

func onPath(program, install string) func() (string, string) {
	return func() (string, string) {
		if ok, why := storekit.Available(storekit.Spec{Binary: program, Install: install}); !ok {
			return "", why
		}
		return program, "" // storekit.Start finds it
	}
}

// valkeyDir is where 'make deps' puts Valkey 8.1, under the module root.
const valkeyDir = ".bin/valkey-8.1"

// valkey finds a Valkey 8.1 program: the one env names, and then only
// that one (a wrong program there is an error, never a fall-back to
// another); else the one 'make deps' fetched; else one on PATH. It must
// report version 8.1.x.
func valkey(env, program string) func() (string, string) {
	return func() (string, string) {
		if p := os.Getenv(env); p != "" {
			if why := isValkey81(p); why != "" {
				return "", env + "=" + p + ": " + why
			}
			return p, ""
		}
		var candidates, tried []string
		if root, ok := moduleRoot(); ok {
			candidates = append(candidates, filepath.Join(root, valkeyDir, program))
		}
		if p, err := exec.LookPath(program); err == nil {
			candidates = append(candidates, p)
		}
		for _, p := range candidates {
			why := isValkey81(p)
			if why == "" {
				return p, ""
			}
			if !errors.Is(statErr(p), fs.ErrNotExist) {
				tried = append(tried, p+": "+why)
			}
		}
		why := program + " 8.1 is not installed ('make deps' fetches Debian 13's into " + valkeyDir + "; or set " + env + ")"
		if len(tried) > 0 {
			why += "; tried " + strings.Join(tried, ", ")
		}
		return "", why
	}
}

// isValkey81 says why the program at p is not a Valkey 8.1, or "".
func isValkey81(p string) string {
	out, err := exec.Command(p, "--version").CombinedOutput()
	switch {
	case err != nil:
		return fmt.Sprintf("%v", err)
	case !bytes.Contains(out, []byte("v=8.1.")) && !bytes.Contains(out, []byte(" 8.1.")):
		first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return "it is " + first + ", not Valkey 8.1"
	}
	return ""
}

func statErr(p string) error {
	_, err := os.Stat(p)
	return err
}

// moduleRoot is the folder of kvblob's go.mod at or above the working
// directory (a test runs in its package's folder).
func moduleRoot() (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(b, []byte("module github.com/kvblob/kvblob\n")) {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// realSDKTag is the build tag that links the real Mooncake SDK; --sdk real
// adds it, and MOONCAKE_REAL=1, which the real store's test needs to run.
const realSDKTag = "mooncake"

// storesPattern is where the gate looks for stores: every package under it
// with a TestConformance is one.
const storesPattern = "./stores/..."

// goTester runs go test -json in the module root dir with args and env
// added to the gate's own, and writes its output to out. An error is go
// test's failure to run at all; a failing test is in the stream.
type goTester func(dir string, args, env []string, out io.Writer) error

// execGoTest runs the go command.
func execGoTest(dir string, args, env []string, out io.Writer) error {
	cmd := exec.Command("go", append([]string{"test"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, &stderr
	err := cmd.Run()
	fmt.Fprint(out, stderr.String()) // go's own messages, with the stream
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return nil // a test failed or a package did not build: the stream says which
	}
	return err
}

// moduleRoot is the folder of the go.mod the working directory is in.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("the gate runs inside kvblob's module (no go.mod above %s)", mustGetwd())
	}
	b, err := os.ReadFile(mod)
	if err != nil {
		return "", err
	}
	if p := modulePath(b); p != kvblobModule {
		return "", fmt.Errorf("the gate runs inside kvblob's module, and %s is module %q; run it from a kvblob checkout", mod, p)
	}
	return filepath.Dir(mod), nil
}

// kvblobModule is kvblob's module path.
const kvblobModule = "github.com/kvblob/kvblob"

// modulePath is the module path a go.mod declares.
func modulePath(gomod []byte) string {
	for _, l := range strings.Split(string(gomod), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(p), `"`)
		}
	}
	return ""
}

func mustGetwd() string {
	d, _ := os.Getwd()
	return d
}

// listed is what go list says of a package.
type listed struct {
	ImportPath, Dir           string
	TestGoFiles, XTestGoFiles []string
}

// declaresConformance matches the test every store declares.
var declaresConformance = regexp.MustCompile(`(?m)^func ` + conformanceTest + `\(t \*testing\.T\) \{`)

// storePackages lists the packages under storesPattern whose tests declare
// TestConformance, built with tags ("" for none).
func storePackages(root, tags string) ([]string, error) {
	args := []string{"list", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, storesPattern)...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %v\n%s", storesPattern, err, stderr.String())
	}
	var pkgs []string
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("go list: %w", err)
		}
		for _, f := range append(p.TestGoFiles, p.XTestGoFiles...) {
			b, err := os.ReadFile(filepath.Join(p.Dir, f))
			if err != nil {
				return nil, err
			}
			if declaresConformance.Match(b) {
				pkgs = append(pkgs, p.ImportPath)
				break
			}
		}
	}
	return pkgs, nil
}

// testArgs are the arguments of go test for pkgs: every store's
// TestConformance and TestWitness, or only the stores named and the
// witnesses of their specs, by spec file stem (-run's second level), with
// the real SDK's tag when real, bounded by timeout.
func testArgs(pkgs, stores, stems []string, real bool, timeout time.Duration) []string {
	run := "^(" + conformanceTest + "|" + witnessTest + ")$"
	if len(stores) > 0 {
		var quoted []string
		for _, s := range append(append([]string(nil), stores...), stems...) {
			if q := regexp.QuoteMeta(s); !slices.Contains(quoted, q) {
				quoted = append(quoted, q)
			}
		}
		run += "/^(" + strings.Join(quoted, "|") + ")$"
	}
	args := []string{"-count=1", "-json", "-timeout", timeout.String(), "-run", run}
	if real {
		args = append(args, "-tags", realSDKTag)
	}
	return append(args, pkgs...)
}

// Package s3kit is the test kit of the S3 store: versitygw (an S3 gateway
// over a POSIX directory, Apache-2.0) started by conformance/serverproc on
// 127.0.0.1 with HTTPS from a CA the kit makes, over a small tmpfs when the
// tests run as root (so that a full disk is real); drivers over a fresh
// bucket each, with a driverkit.Seam keyed by the spec's call names; the
// scenarios a real server can stage and a stager for every case generated
// from spec/s3-v1.109.yaml.
package s3kit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"go/build"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kvblob/kvblob/conformance/fullfs"
	"github.com/kvblob/kvblob/conformance/serverproc"
)

// Version is the versitygw release the kit runs; Install installs it.
const (
	Version = "v1.8.0"
	Install = "go install github.com/versity/versitygw/cmd/versitygw@" + Version
)

// TmpfsBytes is the size of the tmpfs under the gateway: room for the
// gate's round trip many times over, small enough to fill in milliseconds.
const TmpfsBytes = 64 << 20

// Binary finds versitygw: in PATH, else in GOBIN or GOPATH/bin, where
// Install puts it.
func Binary() (string, bool) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, true
	}
	for _, dir := range []string{os.Getenv("GOBIN"), filepath.Join(build.Default.GOPATH, "bin")} {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "versitygw")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, true
		}
	}
	return "", false
}

// Available reports whether versitygw is installed, and if not, what to do.
func Available() (bool, string) {
	if _, ok := Binary(); ok {
		return true, ""
	}
	return false, "versitygw is not installed (" + Install + "; make deps does it)"
}

// Mounts says whether Setup mounts a tmpfs under the gateway: only root may.
func Mounts() bool { return fullfs.CanMount() }

// NoMount is why a full disk cannot be staged without root.
const NoMount = "a full disk under the gateway needs a tmpfs mount, which needs root"

// Env is a running versitygw and the directory it serves.
type Env struct {
	Server *serverproc.Server
	// Root is the directory the gateway serves: each bucket a directory.
	Root string
	// Tmpfs says Root is a tmpfs of TmpfsBytes the kit mounted.
	Tmpfs bool
	// Endpoint is https://127.0.0.1:port.
	Endpoint string
	// AccessKey and SecretKey are the gateway's root user's, random per
	// Env.
	AccessKey, SecretKey string
	Certs                *Certs
	dir                  string
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Setup starts versitygw over a fresh directory (a tmpfs when Mounts).
func Setup() (*Env, error) {
	bin, ok := Binary()
	if !ok {
		_, why := Available()
		return nil, errors.New("s3kit: " + why)
	}
	dir, err := os.MkdirTemp("", "kvblob-s3-")
	if err != nil {
		return nil, err
	}
	e := &Env{dir: dir, Root: filepath.Join(dir, "root"), AccessKey: "kvblob" + random(6), SecretKey: random(20)}
	fail := func(err error) (*Env, error) { _ = e.Close(); return nil, err }
	if err := os.Mkdir(e.Root, 0o755); err != nil {
		return fail(err)
	}
	if Mounts() {
		if err := fullfs.Mount(e.Root, TmpfsBytes); err != nil {
			return fail(fmt.Errorf("s3kit: %w", err))
		}
		e.Tmpfs = true
	}
	if e.Certs, err = NewCerts(dir); err != nil {
		return fail(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: e.Certs.TLSConfig()}, Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	spec := serverproc.Spec{
		Binary: bin, Install: Install,
		Args: func(host string, port int, _ string) []string {
			return []string{"--port", host + ":" + strconv.Itoa(port), "--cert", e.Certs.CertFile, "--key", e.Certs.KeyFile, "posix", e.Root}
		},
		// The root user's keys through the environment, not argv, where
		// any user of the machine could read them.
		Env: []string{"ROOT_ACCESS_KEY_ID=" + e.AccessKey, "ROOT_SECRET_ACCESS_KEY=" + e.SecretKey},
		Ready: func(addr string) error {
			resp, err := client.Get("https://" + addr + "/")
			if err != nil {
				return err
			}
			return resp.Body.Close()
		},
		Wait: 30 * time.Second,
	}
	if e.Server, err = serverproc.Start(spec); err != nil {
		return fail(err)
	}
	e.Endpoint = "https://" + e.Server.Addr
	return e, nil
}

// Close stops the gateway, unmounts the tmpfs and removes the directory.
func (e *Env) Close() error {
	if e.Server != nil {
		e.Server.Stop()
	}
	if e.Tmpfs {
		if err := fullfs.Unmount(e.Root); err != nil {
			return fmt.Errorf("s3kit: %w", err)
		}
		e.Tmpfs = false
	}
	return os.RemoveAll(e.dir)
}

// FillFS writes a filler file in dir until its filesystem answers ENOSPC
// (see fullfs.Fill).
func FillFS(dir string) (string, error) { return fullfs.Fill(dir) }

// ctx is the deadline of one kit request.
func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

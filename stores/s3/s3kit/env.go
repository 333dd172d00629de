// Package s3kit is the test kit of the S3 store: versitygw (an S3 gateway
// over a POSIX directory, Apache-2.0) started by conformance/storekit on
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
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kvblob/kvblob/conformance/storekit"
)

// Version is the versitygw release the kit runs (stores/s3/deps.sh
// installs it; a test holds the two alike); Install installs it.
const (
	Version = "v1.8.0"
	Install = "go install github.com/versity/versitygw/cmd/versitygw@" + Version
)

// TmpfsBytes is the size of the tmpfs under the gateway: room for the
// gate's round trip many times over, small enough to fill in milliseconds.
const TmpfsBytes = 64 << 20

// Available reports whether versitygw is installed, and if not, what to do.
func Available() (bool, string) {
	return storekit.Available(server)
}

// server is versitygw as storekit runs it; Setup adds its arguments.
var server = storekit.Spec{Binary: "versitygw", Install: Install + "; make deps does it"}

// Mounts says whether Setup mounts a tmpfs under the gateway: only root may.
func Mounts() bool { return storekit.CanMount() }

// NoMount is why a full disk cannot be staged without root.
const NoMount = "a full disk under the gateway needs a tmpfs mount, which needs root"

// Env is a running versitygw and the directory it serves.
type Env struct {
	Server *storekit.Server
	// Root is the directory the gateway serves: each bucket a directory.
	Root string
	// Tmpfs says Root is a tmpfs of TmpfsBytes the kit mounted.
	Tmpfs bool
	// Endpoint is https://127.0.0.1:port.
	Endpoint string
	// AccessKey and SecretKey are the gateway's root user's, random per
	// Env.
	AccessKey, SecretKey string
	Certs                *storekit.Certs
	dir                  string
}

func random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Setup starts versitygw over a fresh directory (a tmpfs of TmpfsBytes
// when Mounts).
func Setup() (*Env, error) { return SetupSized(TmpfsBytes) }

// SetupSized is Setup with a tmpfs of tmpfsBytes: blobbench's views need
// room for hundreds of megabytes, the tests a full disk in milliseconds.
func SetupSized(tmpfsBytes int64) (*Env, error) { return setup(tmpfsBytes, false) }

// SetupIAM is Setup with versitygw's internal IAM (--iam-dir), so that a
// test can add users (Env.CreateUser) and grant them keys by a bucket
// policy (Env.PutBucketPolicy), as a tenant is granted its key pattern.
func SetupIAM() (*Env, error) { return setup(TmpfsBytes, true) }

func setup(tmpfsBytes int64, iam bool) (*Env, error) {
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
		if err := storekit.Mount(e.Root, tmpfsBytes); err != nil {
			return fail(fmt.Errorf("s3kit: %w", err))
		}
		e.Tmpfs = true
	}
	if e.Certs, err = storekit.NewCerts(dir); err != nil {
		return fail(err)
	}
	if iam {
		if err := os.Mkdir(filepath.Join(dir, "iam"), 0o700); err != nil {
			return fail(err)
		}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: e.Certs.TrustConfig()}, Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	spec := server
	spec.Args = func(host string, port int, _ string) []string {
		args := []string{"--port", host + ":" + strconv.Itoa(port), "--cert", e.Certs.ServerCertFile, "--key", e.Certs.ServerKey}
		if iam {
			args = append(args, "--iam-dir", filepath.Join(dir, "iam"))
		}
		return append(args, "posix", e.Root)
	}
	// The root user's keys through the environment, not argv, where any
	// user of the machine could read them.
	spec.Env = []string{"ROOT_ACCESS_KEY_ID=" + e.AccessKey, "ROOT_SECRET_ACCESS_KEY=" + e.SecretKey}
	spec.Ready = func(addr string) error {
		resp, err := client.Get("https://" + addr + "/")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	}
	spec.Wait = 30 * time.Second
	if e.Server, err = storekit.Start(spec); err != nil {
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
		if err := storekit.Unmount(e.Root); err != nil {
			return fmt.Errorf("s3kit: %w", err)
		}
		e.Tmpfs = false
	}
	return os.RemoveAll(e.dir)
}

// ctx is the deadline of one kit request.
func ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

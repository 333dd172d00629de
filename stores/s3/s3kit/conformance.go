package s3kit

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	s3gen "github.com/kvblob/kvblob/generated/s3"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/stores/s3"
	"github.com/kvblob/kvblob/stores/trailer"
)

// Timeout bounds each request of the kit's drivers: a frozen server
// answers CONN after it.
const Timeout = 3 * time.Second

// Driver is an s3 driver from Factory, with its seam and the Env it stores
// in.
type Driver struct {
	*s3.Driver
	// Seam is the driver's, keyed by spec/s3-v1.109.yaml's call names.
	Seam *driverkit.Seam
	Env  *Env
	// Transport is the driver's HTTP transport.
	Transport *http.Transport
	fillers   []string // files Fill wrote, removed at the test's cleanup
}

// Parts returns the kit's Driver behind d.
func Parts(d driver.Driver) *Driver { return storekit.Unwrap[*Driver](d) }

// Options are the driver options the kit uses over e, for bucket, with
// transport rt (nil: a fresh one trusting the test CA).
func (e *Env) Options(bucket string, rt http.RoundTripper) s3.Options {
	if rt == nil {
		rt = e.Transport()
	}
	return s3.Options{
		Endpoint: e.Endpoint, Bucket: bucket, AccessKey: e.AccessKey, SecretKey: e.SecretKey,
		HTTPClient: &http.Client{Transport: rt}, Timeout: Timeout, MaxAttempts: 1,
	}
}

// Transport is a transport that trusts the test CA alone.
func (e *Env) Transport() *http.Transport {
	return &http.Transport{TLSClientConfig: e.Certs.TrustConfig(), MaxIdleConnsPerHost: 64, ForceAttemptHTTP2: false}
}

// NewBucket creates a bucket of its own for a driver (storekit.Namespace)
// through a client of the gateway, and removes its directory at t's
// cleanup.
func (e *Env) NewBucket(t conformance.T) string {
	return storekit.Namespace(t, func(name string) error {
		c, done := e.rootClient()
		defer done()
		cx, cancel := ctx()
		defer cancel()
		_, err := c.CreateBucket(cx, &awss3.CreateBucketInput{Bucket: aws.String(name)})
		return err
	}, func(name string) error { return os.RemoveAll(filepath.Join(e.Root, name)) })
}

// Open opens a driver over a fresh bucket in e.
func Open(t conformance.T, e *Env) *Driver { return OpenWith(t, e, nil) }

// Large sets a driver's options so that every row is a large one: put by
// multipart upload and read by ranged GETs (spec/s3-v1.109.yaml, "Large
// rows"), a row of the suite's size in one part.
func Large(o *s3.Options) { o.MultipartBytes = 1 }

// OpenWith is Open with the driver's options changed by set (nil: none).
func OpenWith(t conformance.T, e *Env, set func(*s3.Options)) *Driver {
	bucket := e.NewBucket(t)
	tr := e.Transport()
	t.Cleanup(tr.CloseIdleConnections)
	seam := &driverkit.Seam{}
	opt := e.Options(bucket, tr)
	opt.Seam = seam
	if set != nil {
		set(&opt)
	}
	d, err := s3.Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	k := &Driver{Driver: d, Seam: seam, Env: e, Transport: tr}
	t.Cleanup(func() {
		for _, f := range k.fillers {
			_ = os.Remove(f)
		}
	})
	return k
}

// Factory returns drivers over e, each over a bucket of its own.
func Factory(e *Env) conformance.Factory {
	return func(t conformance.T) driver.Driver { return Open(t, e) }
}

// Plant stores obj under key with an unconditional PutObject.
func (k *Driver) Plant(key string, obj []byte) error {
	cx, cancel := ctx()
	defer cancel()
	_, err := k.Client().PutObject(cx, &awss3.PutObjectInput{Bucket: aws.String(k.Bucket()), Key: aws.String(key), Body: bytes.NewReader(obj)})
	return err
}

// Remove deletes key's object.
func (k *Driver) Remove(key string) error {
	cx, cancel := ctx()
	defer cancel()
	_, err := k.Client().DeleteObject(cx, &awss3.DeleteObjectInput{Bucket: aws.String(k.Bucket()), Key: aws.String(key)})
	return err
}

// Fetch returns key's object as stored.
func (k *Driver) Fetch(key string) ([]byte, error) {
	cx, cancel := ctx()
	defer cancel()
	out, err := k.Client().GetObject(cx, &awss3.GetObjectInput{Bucket: aws.String(k.Bucket()), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(out.Body)
	return b.Bytes(), err
}

// DropBucket removes the driver's bucket under the gateway.
func (k *Driver) DropBucket() error { return os.RemoveAll(filepath.Join(k.Env.Root, k.Bucket())) }

// Fill fills the tmpfs under the gateway (an error without one).
func (k *Driver) Fill() error {
	if !k.Env.Tmpfs {
		return fmt.Errorf("%s", NoMount)
	}
	filler, err := storekit.FillFS(k.Env.Root)
	if filler != "" {
		// Every driver shares the Env's tmpfs: free it at the test's end.
		k.fillers = append(k.fillers, filler)
	}
	return err
}

// Scenarios are what versitygw stages for real, and through the seam what
// it cannot on cue. Writing, Unprovable and HoldAccess are not among them:
// S3 shows a reader no unfinished upload (a get is a MISS until the object
// is whole), and every call ends its access on return (a sealed body).
// Full fills the tmpfs under the gateway, so it is there only when the kit
// Mounts.
func Scenarios() conformance.Scenarios {
	s := conformance.Scenarios{
		HoldGet: func(d driver.Driver, key string) (<-chan struct{}, func()) {
			return Parts(d).Seam.Hold("get", key)
		},
		FailPut: func(d driver.Driver, key string) {
			Parts(d).Seam.Raise("put", key, connRefused())
		},
		FailRead: func(d driver.Driver, key string) {
			Parts(d).Seam.Raise("get", key, connRefused())
		},
	}
	if Mounts() {
		s.Full = func(d driver.Driver, key string) { _ = Parts(d).Fill() }
	}
	return s
}

func connRefused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
}

// injected are the answers versitygw gives on no cue: the seam raises each
// as the client would report it, so classify still runs.
var injected = map[s3gen.Code]error{
	s3gen.ConditionalConflict: &smithy.GenericAPIError{Code: "ConditionalRequestConflict", Message: "staged by s3kit"},
	s3gen.SlowDown:            &smithy.GenericAPIError{Code: "SlowDown", Message: "staged by s3kit"},
	s3gen.QuotaExceeded:       &smithy.GenericAPIError{Code: "QuotaExceeded", Message: "staged by s3kit"},
	s3gen.AccessDenied:        &smithy.GenericAPIError{Code: "AccessDenied", Message: "staged by s3kit"},
	s3gen.Conn:                connRefused(),
	s3gen.NoSuchUpload:        &smithy.GenericAPIError{Code: "NoSuchUpload", Message: "staged by s3kit"},
	s3gen.InsufficientStorage: &smithy.GenericAPIError{Code: "InsufficientStorage", Message: "staged by s3kit"},
	s3gen.Err:                 &smithy.GenericAPIError{Code: "InternalError", Message: "staged by s3kit"},
}

// replaceErrors are the answers a replace gets on no cue that the other
// calls stage for real: the S3 error code the seam raises for each.
var replaceErrors = map[s3gen.Code]string{
	s3gen.PreconditionFailed: "PreconditionFailed", s3gen.NoSuchKey: "NoSuchKey", s3gen.InsufficientStorage: "InsufficientStorage",
}

// Stage makes the server answer case c for key. A case the spec marks
// stageable is staged for real (an object planted, damaged or deleted, the
// bucket dropped, the disk filled) or fails naming why; the others are
// raised through the driver's driverkit.Seam, keyed by the case's call.
func Stage(h *conformance.Harness, c conformance.Case, key string) error {
	k := Parts(h.D)
	payload, done, err := storekit.PlantCase(c, key, k.Plant)
	if done || err != nil {
		return err
	}
	code := s3gen.Code(c.Answer.Code)
	if c.Call == "replace" {
		// The put's 412 finds an object that is no row (a payload byte
		// flipped): the driver replaces it, and the replace answers code.
		obj := trailer.Encode(key, payload)
		obj[7] ^= 0xff
		if err := k.Plant(key, obj); err != nil || code == s3gen.OK {
			return err
		}
		err := injected[code]
		if s3code, named := replaceErrors[code]; named {
			err = &smithy.GenericAPIError{Code: s3code, Message: "staged by s3kit"}
		}
		return conformance.SeamRaise(h, k.Seam, c, key, err)
	}
	switch {
	case code == s3gen.OK:
		return nil
	case code == s3gen.PreconditionFailed && c.Other:
		return k.Plant(key, trailer.Encode(key, payload[:len(payload)/2]))
	case code == s3gen.PreconditionFailed && c.Exists:
		return k.Plant(key, trailer.Encode(key, conformance.Filled(conformance.RowBytes, conformance.CaseSeed)))
	case code == s3gen.PreconditionFailed:
		// The object vanished between the 412 and the driver's look, or
		// (get) was replaced between two ranged GETs: no server does
		// either on cue.
		k.Seam.Answer(c.Call, key, int64(code))
		return nil
	case code == s3gen.InsufficientStorage && c.Call == "put":
		return k.Fill()
	case code == s3gen.NoSuchBucket:
		return k.DropBucket()
	case code == s3gen.NoSuchKey:
		return k.Remove(key)
	case code == s3gen.Corrupt:
		obj := trailer.Encode(key, payload)
		obj[7] ^= 0xff // a payload byte: the CRC32 no longer matches
		return k.Plant(key, obj)
	}
	return conformance.SeamRaise(h, k.Seam, c, key, injected[code])
}

// rootClient is an S3 client of the gateway's root user over a transport
// of its own; done closes the transport's idle connections.
func (e *Env) rootClient() (c *awss3.Client, done func()) {
	tr := e.Transport()
	c = awss3.New(awss3.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(e.Endpoint), UsePathStyle: true,
		Credentials: staticCreds(e), HTTPClient: &http.Client{Transport: tr},
	})
	return c, tr.CloseIdleConnections
}

// Package s3 is kvblob's driver for an S3-compatible object store, through
// github.com/aws/aws-sdk-go-v2/service/s3: every request signed (SigV4),
// over HTTPS in production.
//
// spec/s3-v1.109.yaml holds the layout, the publish protocol (one
// conditional PutObject, If-None-Match: *; a multipart upload completed
// under the same condition for a large row, large.go), what a 412 means and every
// answer-to-result rule: this package only issues the requests and
// classifies their errors into the spec's codes (classify.go). A PUT's body
// reads the caller's slot in place and is sealed before the call returns
// (body.go), which is what proves the call's access ended.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	s3gen "github.com/kvblob/kvblob/generated/s3"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/runtime/rules"
	"github.com/kvblob/kvblob/stores/trailer"
)

// Options configure a Driver. AccessKey and SecretKey are secrets: the
// driver never prints them, nor puts them in an error.
type Options struct {
	// Endpoint is the server's base URL (https://host:port); empty means
	// AWS's endpoint for Region.
	Endpoint string
	// Region signs the requests (default us-east-1).
	Region string
	// Bucket holds the objects; it must exist.
	Bucket string
	// AccessKey and SecretKey sign every request (SigV4).
	AccessKey, SecretKey string
	// HTTPClient carries the requests; its transport holds the TLS
	// configuration (a test CA, say). Default: a client of its own over a
	// clone of http.DefaultTransport, whose idle connections Close closes.
	HTTPClient *http.Client
	// Timeout bounds each request, retries included (default 30 s).
	Timeout time.Duration
	// MaxAttempts is the client's attempts per request (default 3, the
	// SDK's; 1 turns retries off).
	MaxAttempts int
	// RowsInFlight is how many of a call's rows are requests in flight at
	// once (default DefaultRowsInFlight; 1 sends them one after another).
	// A row is a request of its own, bound by its round trip rather than
	// by bandwidth, so a call of many rows moves them in parallel; the
	// backend's workers multiply it (a backend of W workers keeps up to
	// W x RowsInFlight requests open, each a connection of the client's
	// pool).
	RowsInFlight int
	// MultipartBytes is the longest object (payload, tag and trailer) a
	// row is put as one PutObject and read as one GetObject (default
	// DefaultMultipartBytes; negative: every row so). A longer one is put
	// by multipart upload and read by ranged GETs in parallel, with the
	// same visibility and the same first-writer-wins condition
	// (spec/s3-v1.109.yaml, "Large rows").
	MultipartBytes int64
	// PartBytes is the size of each part a large row is put and read in
	// (default DefaultPartBytes; at least MinPartBytes, S3's least).
	PartBytes int64
	// PartsInFlight is how many of a large row's parts are requests in
	// flight at once (default DefaultPartsInFlight); RowsInFlight
	// multiplies it.
	PartsInFlight int
	// Integrity, when set, tags every object the driver writes with the
	// current row key and refuses (CORRUPT) every object whose tag does not
	// verify under the current or previous key, one another writer stored
	// with a valid unkeyed trailer included (see trailer.Integrity); a put
	// that finds such an object under its key replaces it.
	Integrity *trailer.Integrity
	// Seam, when set, is entered before each spec call (put, replace, get)
	// on a key: a held call waits in it, a raise is answered as if the request
	// had failed with that error (classified), and a staged negative code
	// is the call's answer without a request. Production leaves it nil.
	Seam *driverkit.Seam
}

// DefaultRowsInFlight is Options.RowsInFlight's default: a 2-worker
// backend keeps 16 requests open, more than versitygw on two cores serves
// at once (blobbench: the driver is at its raw client's speed at that
// concurrency); not tuned against a real S3, whose tens of milliseconds a
// request want more (docs/operating.md, "Scale").
const DefaultRowsInFlight = 8

// Driver is a driver.Driver over one bucket.
type Driver struct {
	opt Options
	// spec is the spec of the SDK this binary was built with, picked from
	// every spec of the store (generated/s3's Specs) at Open: its Calls
	// map each answer.
	spec *s3gen.Spec
	// bufs are the buffers gets read objects into, kept between calls
	// (up to 2 x RowsInFlight): a sync.Pool drops them at every second
	// collection, and the SDK's garbage brings one every few requests, so
	// a 4 MiB row faulted a fresh buffer in on most gets.
	bufs   chan *[]byte
	c      *s3.Client
	idle   func() // closes the idle connections of a client the driver made
	life   driverkit.Lifecycle
	bucket *string
	// onBody, set by tests, sees each PUT body as it is made: a test holds
	// it, as a transport would, to read it after the call returned.
	onBody func(io.Reader)
}

var _ driver.Driver = (*Driver)(nil)

// SDKVersion is the version of github.com/aws/aws-sdk-go-v2/service/s3 this
// binary was built with ("" when the build has no module information).
func SDKVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path == "github.com/aws/aws-sdk-go-v2/service/s3" {
			if m.Replace != nil {
				return m.Replace.Version
			}
			return m.Version
		}
	}
	return ""
}

// SDKName is the SDK every s3 spec names (sdk.name).
const SDKName = "aws-sdk-go-v2/service/s3"

// Open picks the spec that holds for the SDK this binary was built with
// (the store's first spec when the build has no module information to
// tell), and returns a driver. It sends nothing.
func Open(opt Options) (*Driver, error) {
	spec := s3gen.Specs()[0]
	if v := SDKVersion(); v != "" {
		var err error
		if spec, err = s3gen.Pick(SDKName, v); err != nil {
			return nil, err
		}
	}
	if opt.Bucket == "" {
		return nil, errors.New("s3: no bucket; set Options.Bucket")
	}
	if opt.AccessKey == "" || opt.SecretKey == "" {
		return nil, errors.New("s3: no credentials; every request is signed, so set Options.AccessKey and Options.SecretKey")
	}
	if opt.Region == "" {
		opt.Region = "us-east-1"
	}
	if opt.Timeout <= 0 {
		opt.Timeout = 30 * time.Second
	}
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = 3
	}
	if opt.RowsInFlight <= 0 {
		opt.RowsInFlight = DefaultRowsInFlight
	}
	if opt.MultipartBytes == 0 {
		opt.MultipartBytes = DefaultMultipartBytes
	}
	if opt.PartBytes == 0 {
		opt.PartBytes = DefaultPartBytes
	}
	if opt.PartBytes < MinPartBytes {
		return nil, fmt.Errorf("s3: PartBytes %d is under S3's least part, %d bytes", opt.PartBytes, MinPartBytes)
	}
	if opt.PartsInFlight <= 0 {
		opt.PartsInFlight = DefaultPartsInFlight
	}
	d := &Driver{opt: opt, spec: spec, bucket: aws.String(opt.Bucket), bufs: make(chan *[]byte, 2*opt.RowsInFlight)}
	hc := opt.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		hc = &http.Client{Transport: tr}
		d.idle = tr.CloseIdleConnections
	}
	o := s3.Options{
		Region:       opt.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(opt.AccessKey, opt.SecretKey, ""),
		HTTPClient:   hc,
		UsePathStyle: opt.Endpoint != "",
		// A checksum only where S3 requires one: no aws-chunked trailer,
		// which some S3-compatible servers refuse; the trailer's CRC32
		// guards the bytes end to end.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           opt.MaxAttempts,
	}
	if opt.Endpoint != "" {
		o.BaseEndpoint = aws.String(opt.Endpoint)
	}
	d.c = s3.New(o)
	return d, nil
}

// Client is the driver's S3 client (for tests and the benchmark, which
// compare against PutObject/GetObject of the same bytes).
func (d *Driver) Client() *s3.Client { return d.c }

// Bucket is the bucket the driver stores in.
func (d *Driver) Bucket() string { return d.opt.Bucket }

// Capabilities are spec/s3-v1.109.yaml's.
func (d *Driver) Capabilities() driver.Capabilities { return d.spec.Capabilities }

// Register admits a host region; objects need no registration of their own.
func (d *Driver) Register(r *driver.Region) (driver.Registration, error) {
	return d.life.Register(r, d.spec.Admission.Register, nil)
}

// Unregister refuses while a call that may touch the region is in progress.
func (d *Driver) Unregister(reg driver.Registration) error { return d.life.Unregister(reg, nil) }

// Drain waits for the calls in progress. Every call ends its access on
// return (a PUT's body is sealed first), so no operation is unprovable.
func (d *Driver) Drain(ctx context.Context) bool { return d.life.Drain(ctx, nil) }

// Close closes the driver once every call ended and every region is
// unregistered (driverkit.Lifecycle.Close), and closes the idle
// connections of a client it made.
func (d *Driver) Close() error {
	return d.life.Close(func() error {
		if d.idle != nil {
			d.idle()
		}
		return nil
	})
}

// Put publishes each row with a conditional PutObject, up to
// Options.RowsInFlight rows at once.
func (d *Driver) Put(ctx context.Context, rows []driver.Row) (driver.Operation, error) {
	return d.life.EachRowIn(ctx, rows, d.opt.RowsInFlight, func(live func(*driver.Region) bool) error {
		return d.spec.Admission.Put(rows, live)
	}, func(r driver.Row) driver.Result { return d.put(ctx, r) })
}

// Get reads each row's object, checks its trailer and only then copies its
// payload into the row's span, up to Options.RowsInFlight rows at once.
func (d *Driver) Get(ctx context.Context, rows []driver.Row, hint driver.Hint) (driver.Operation, error) {
	return d.life.EachRowIn(ctx, rows, d.opt.RowsInFlight, func(live func(*driver.Region) bool) error {
		return d.spec.Admission.Get(rows, hint, live)
	}, func(r driver.Row) driver.Result {
		var buf *[]byte
		select {
		case buf = <-d.bufs:
		default:
			buf = new([]byte)
		}
		var res driver.Result
		res, *buf = d.get(ctx, r, *buf)
		select {
		case d.bufs <- buf:
		default: // enough kept
		}
		return res
	})
}

// seam enters the seam for call on key (driverkit.Stage): staged reports
// that a test answered for the store, with the code and the error to answer.
func (d *Driver) seam(call, key string) (code s3gen.Code, staged bool, err error) {
	return driverkit.Stage(d.opt.Seam, call, key, classify)
}

func (d *Driver) put(ctx context.Context, row driver.Row) driver.Result {
	slot := row.Spans[0].Bytes()
	tail := d.opt.Integrity.Append(nil, row.Key, slot)
	var m rules.Mapping
	var err error
	if d.large(int64(len(slot) + len(tail))) {
		m, err = d.putParts(ctx, row.Key, slot, tail)
	} else {
		var code s3gen.Code
		code, err = d.putObject(ctx, "put", row.Key, slot, tail, "")
		m = d.spec.Calls.Put.Map(int64(code))
	}
	if m.FollowUp != rules.FollowAskExistence {
		return m.WithCause(err)
	}
	// 412: an object is under the key now. It is this row's only if it is
	// the row's whole object.
	obj, etag, code, err := d.fetch(ctx, row.Key, int64(len(slot)), nil)
	switch {
	case code == s3gen.NoSuchKey:
		return driver.Result{Status: m.IfAbsent}
	case code != s3gen.OK:
		return m.WithCause(fmt.Errorf("asking what the key holds: %w", err))
	}
	payload, err := d.opt.Integrity.Check(obj, row.Key)
	switch {
	case err != nil:
		// No row for the key at all (torn, poisoned, or unverified under
		// the row key): replace exactly that object, so the row's writer
		// repairs it and no object stored since is overwritten.
		code, rerr := d.putObject(ctx, "replace", row.Key, slot, tail, etag)
		return d.spec.Calls.Replace.Map(int64(code)).WithCause(fmt.Errorf("key %q held %d bytes that are no row for it (%v); replacing them: %w", row.Key, len(obj), err, rerr))
	case !bytes.Equal(payload, slot):
		return m.Other(fmt.Sprintf("key %q holds a %d-byte object that is not this row's %d bytes", row.Key, len(payload), len(slot)))
	}
	return driver.Result{Status: m.IfExists}
}

// putObject sends slot and tail (its tag and trailer) as spec call call:
// with If-None-Match: * (put), or If-Match: ifMatch (replace: only over the
// object that ETag names). It seals the body before it returns.
func (d *Driver) putObject(ctx context.Context, call, key string, slot, tail []byte, ifMatch string) (s3gen.Code, error) {
	if code, staged, err := d.seam(call, key); staged {
		return code, err
	}
	b := newBody(slot, tail)
	defer b.seal() // the proof that the call's access to slot ended
	if d.onBody != nil {
		d.onBody(b)
	}
	ctx, cancel := context.WithTimeout(ctx, d.opt.Timeout)
	defer cancel()
	in := &s3.PutObjectInput{Bucket: d.bucket, Key: aws.String(key), Body: b, ContentLength: aws.Int64(b.size())}
	if ifMatch != "" {
		in.IfMatch = aws.String(ifMatch)
	} else {
		in.IfNoneMatch = aws.String("*")
	}
	_, err := d.c.PutObject(ctx, in)
	return classify(err), err
}

func (d *Driver) get(ctx context.Context, row driver.Row, buf []byte) (driver.Result, []byte) {
	span := row.Spans[0]
	answer := int64(0)
	obj, _, code, err := d.fetch(ctx, row.Key, span.Length, buf)
	var payload []byte
	if code == s3gen.OK {
		buf = obj
		if payload, err = d.opt.Integrity.Check(obj, row.Key); err != nil {
			code = s3gen.Corrupt
		}
	}
	if code == s3gen.OK {
		answer = int64(len(payload))
	} else {
		answer = int64(code)
	}
	m := d.spec.Calls.Get.Map(answer, span.Length)
	if m.Written == rules.WrittenYes {
		copy(span.Bytes(), payload)
	}
	return m.WithCause(err), buf
}

// fetch reads key's whole object into buf (grown as needed) and returns it
// with its ETag: by one GetObject, or by ranged GETs (getRanges) for a row
// whose object may be longer than Options.MultipartBytes. An object
// longer than a row of rowBytes with its tag and trailer is CORRUPT
// without being read.
func (d *Driver) fetch(ctx context.Context, key string, rowBytes int64, buf []byte) ([]byte, string, s3gen.Code, error) {
	if code, staged, err := d.seam("get", key); staged {
		return nil, "", code, err
	}
	if d.large(rowBytes + trailer.TailSize) {
		return d.getRanges(ctx, key, rowBytes, buf)
	}
	return d.getObject(ctx, key, rowBytes, buf)
}

// getObject reads key's whole object into buf (grown as needed) and
// returns it with its ETag. An object longer than a row of rowBytes with
// its tag and trailer is CORRUPT without being read: it cannot be this
// row's.
func (d *Driver) getObject(ctx context.Context, key string, rowBytes int64, buf []byte) ([]byte, string, s3gen.Code, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opt.Timeout)
	defer cancel()
	out, err := d.c.GetObject(ctx, &s3.GetObjectInput{Bucket: d.bucket, Key: aws.String(key)})
	if err != nil {
		return nil, "", classify(err), err
	}
	defer out.Body.Close()
	etag := aws.ToString(out.ETag)
	limit := rowBytes + trailer.TailSize
	n := aws.ToInt64(out.ContentLength)
	if n > limit {
		return nil, etag, s3gen.Corrupt, fmt.Errorf("the object holds %d bytes, more than the row's %d with its tag and trailer", n, rowBytes)
	}
	if n < 0 || out.ContentLength == nil {
		n = limit + 1
	}
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	got, err := io.ReadFull(out.Body, buf)
	switch {
	case out.ContentLength == nil && (errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)):
		return buf[:got], etag, s3gen.OK, nil
	case out.ContentLength == nil && err == nil:
		return nil, etag, s3gen.Corrupt, fmt.Errorf("the object is longer than the row's %d bytes with its tag and trailer", rowBytes)
	case err != nil:
		return nil, etag, classify(err), fmt.Errorf("reading the object's body: %w", err)
	}
	return buf, etag, s3gen.OK, nil
}

// Format prints o with its secret key redacted, whatever the verb: a
// logged or wrapped Options never shows the secret.
func (o Options) Format(f fmt.State, _ rune) {
	secret := ""
	if o.SecretKey != "" {
		secret = "[redacted]"
	}
	fmt.Fprintf(f, "s3.Options{Endpoint: %q, Region: %q, Bucket: %q, AccessKey: %q, SecretKey: %s, Timeout: %v, MaxAttempts: %d, RowsInFlight: %d, MultipartBytes: %d, PartBytes: %d, PartsInFlight: %d, Integrity: %s}",
		o.Endpoint, o.Region, o.Bucket, o.AccessKey, secret, o.Timeout, o.MaxAttempts, o.RowsInFlight, o.MultipartBytes, o.PartBytes, o.PartsInFlight, o.Integrity.String())
}

package s3kit

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	s3gen "github.com/kvblob/kvblob/generated/s3"
	"github.com/kvblob/kvblob/generated/s3/s3cases"
	"github.com/kvblob/kvblob/stores/s3"
)

// SDKChecks ask the server, not the driver, for what spec/s3-v1.109.yaml
// relies on: the SDK version, the answers its rules map (412 for a
// conditional PUT over an object, NoSuchKey and NoSuchBucket apart), and
// what a concurrent writer sees: nothing of an unfinished upload, and 412
// for the writer that finishes second.
func SDKChecks() []conformance.SDKCheck {
	pos := func(id string) string { return storekit.SpecPos(s3cases.S3V1109(), id) }
	return []conformance.SDKCheck{
		{Name: "the_sdk_is_one_the_spec_holds_for", Run: func(h *conformance.Harness) {
			if v := s3.SDKVersion(); v != "" && !s3gen.S3V1109().SupportsVersion(v) {
				h.T.Errorf("the spec holds for %v, and this is %s", s3gen.S3V1109().SDKVersions, v)
			}
		}},
		{Name: "the_server_listens_on_loopback_only", Run: func(h *conformance.Harness) {
			if err := Parts(h.D).Env.Server.LoopbackOnly(); err != nil {
				h.T.Error(err)
			}
		}},
		{Name: "a_conditional_put_over_an_object_answers_412", Spec: pos("put/PRECONDITION_FAILED/exists"), Run: func(h *conformance.Harness) {
			k := Parts(h.D)
			for i := 0; i < 2; i++ {
				err := k.put("p/v1/00", bytes.NewReader([]byte("x")))
				if got := code(err); (i == 0) != (err == nil) || (i == 1 && got != "PreconditionFailed") {
					h.T.Errorf("%s: a conditional PUT answered %v on try %d; the put rule for PRECONDITION_FAILED relies on success, then 412 PreconditionFailed", pos("put/PRECONDITION_FAILED/exists"), err, i+1)
				}
			}
		}},
		{Name: "absent_key_and_absent_bucket_answer_apart", Spec: pos("get/NO_SUCH_KEY"), Run: func(h *conformance.Harness) {
			k := Parts(h.D)
			cx, cancel := ctx()
			defer cancel()
			_, err := k.Client().GetObject(cx, &awss3.GetObjectInput{Bucket: aws.String(k.Bucket()), Key: aws.String("p/v1/01")})
			if code(err) != "NoSuchKey" {
				h.T.Errorf("%s: a GET of an absent key answered %v; want NoSuchKey (MISS)", pos("get/NO_SUCH_KEY"), err)
			}
			_, err = k.Client().GetObject(cx, &awss3.GetObjectInput{Bucket: aws.String(k.Bucket() + "-absent"), Key: aws.String("p/v1/01")})
			if code(err) != "NoSuchBucket" {
				h.T.Errorf("%s: a GET in an absent bucket answered %v; want NoSuchBucket (a FAULT, never a MISS)", pos("get/NO_SUCH_BUCKET"), err)
			}
		}},
		{Name: "a_concurrent_writer_sees_412_and_readers_see_no_unfinished_upload", Spec: pos("put/PRECONDITION_FAILED/exists"), Run: func(h *conformance.Harness) {
			k := Parts(h.D)
			key := "p/v1/02"
			// The slow writer's body stops after its first bytes until the
			// others are done.
			slow := &gatedBody{data: bytes.Repeat([]byte{1}, 4096), started: make(chan struct{}), gate: make(chan struct{})}
			done := make(chan error, 1)
			go func() { done <- k.put(key, slow) }()
			<-slow.started
			cx, cancel := ctx()
			defer cancel()
			_, err := k.Client().GetObject(cx, &awss3.GetObjectInput{Bucket: aws.String(k.Bucket()), Key: aws.String(key)})
			if code(err) != "NoSuchKey" {
				h.T.Errorf("a GET while another PUT of the key is unfinished answered %v; the spec says a reader sees no unfinished upload (NoSuchKey)", err)
			}
			if err := k.put(key, bytes.NewReader([]byte("second"))); err != nil {
				h.T.Errorf("a conditional PUT while another is unfinished answered %v; the spec says the first to finish wins", err)
			}
			slow.open()
			if err := <-done; code(err) != "PreconditionFailed" {
				h.T.Errorf("%s: the writer that finished second answered %v; the spec says 412 PreconditionFailed", pos("put/PRECONDITION_FAILED/exists"), err)
			}
		}},
	}
}

// put is a conditional PutObject of body, which must be seekable.
func (k *Driver) put(key string, body io.ReadSeeker) error {
	cx, cancel := ctx()
	defer cancel()
	_, err := k.Client().PutObject(cx, &awss3.PutObjectInput{Bucket: aws.String(k.Bucket()), Key: aws.String(key), Body: body, IfNoneMatch: aws.String("*")})
	return err
}

func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// gatedBody is a request body whose reads after the first stop until open
// is called; started is closed when the transport reaches that point.
type gatedBody struct {
	mu      sync.Mutex
	data    []byte
	off     int
	once    sync.Once
	started chan struct{}
	gate    chan struct{}
	opened  sync.Once
}

func (b *gatedBody) open() { b.opened.Do(func() { close(b.gate) }) }

func (b *gatedBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	off := b.off
	b.mu.Unlock()
	if off > 0 {
		b.once.Do(func() { close(b.started) })
		<-b.gate
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.off >= len(b.data) {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), 16)], b.data[b.off:])
	b.off += n
	return n, nil
}

func (b *gatedBody) Seek(off int64, whence int) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		off += int64(b.off)
	case io.SeekEnd:
		off += int64(len(b.data))
	}
	b.off = int(off)
	return off, nil
}

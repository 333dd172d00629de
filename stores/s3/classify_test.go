package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"syscall"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	s3gen "github.com/kvblob/kvblob/generated/s3"
)

// answered is an error as the client reports an HTTP answer: a status,
// and the S3 error code its body named ("" for a HEAD, which has none).
func answered(status int, code string) error {
	resp := &smithyhttp.Response{Response: &http.Response{StatusCode: status}}
	var err error = &smithy.GenericAPIError{Code: code}
	if code == "" {
		err = errors.New("no body")
	}
	return fmt.Errorf("operation error S3: %w", &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{Response: resp, Err: err}})
}

// TestClassifyTurnsAnswersIntoSpecCodes pins each row of the tables: the S3
// error code first (ERR when the table does not name it), the status when
// the server named no code, CONN only when no HTTP answer came back.
func TestClassifyTurnsAnswersIntoSpecCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want s3gen.Code
	}{
		{nil, s3gen.OK},
		{answered(404, "NoSuchKey"), s3gen.NoSuchKey},
		{answered(404, ""), s3gen.NoSuchKey}, // HeadObject
		{answered(404, "NoSuchBucket"), s3gen.NoSuchBucket},
		{answered(412, "PreconditionFailed"), s3gen.PreconditionFailed},
		{answered(412, ""), s3gen.PreconditionFailed}, // a conditional HEAD
		{answered(409, ""), s3gen.ConditionalConflict},
		{answered(403, ""), s3gen.AccessDenied},
		{answered(507, ""), s3gen.InsufficientStorage},
		{answered(409, "ConditionalRequestConflict"), s3gen.ConditionalConflict},
		{answered(503, "SlowDown"), s3gen.SlowDown},
		{answered(503, ""), s3gen.SlowDown},
		{answered(507, "InsufficientStorage"), s3gen.InsufficientStorage},
		{answered(403, "QuotaExceeded"), s3gen.QuotaExceeded},
		{answered(403, "AccessDenied"), s3gen.AccessDenied},
		{answered(403, "SignatureDoesNotMatch"), s3gen.AccessDenied},
		{answered(403, "InvalidAccessKeyId"), s3gen.AccessDenied},
		{answered(500, "InternalError"), s3gen.Err},
		{answered(409, "BucketAlreadyExists"), s3gen.Err},   // a known status under an unknown code
		{answered(404, "NoSuchUpload"), s3gen.NoSuchUpload}, // never a MISS
		{answered(404, "NoSuchVersion"), s3gen.Err},         // an unknown 404 code: never a MISS either
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, s3gen.Conn},
		{fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), s3gen.Conn},
		{context.DeadlineExceeded, s3gen.Conn},
		{errors.New("something else"), s3gen.Err},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// TestUnsatisfiableIsA416: a ranged GET refused as InvalidRange, or with a
// 416 whatever its code, says no byte of the range exists; nothing else
// does (getRanges reads such an object as empty).
func TestUnsatisfiableIsA416(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{answered(416, "InvalidRange"), true},
		{answered(416, ""), true},
		{answered(416, "SomethingElse"), true},
		{answered(400, "InvalidRange"), true},
		{answered(404, "NoSuchKey"), false},
		{answered(400, "InvalidArgument"), false},
		{errors.New("connection reset"), false},
		{nil, false},
	} {
		if got := unsatisfiable(c.err); got != c.want {
			t.Errorf("unsatisfiable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

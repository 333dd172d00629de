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

	"github.com/kvblob/kvblob/generated/s3spec"
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
		want s3spec.Code
	}{
		{nil, s3spec.OK},
		{answered(404, "NoSuchKey"), s3spec.NoSuchKey},
		{answered(404, ""), s3spec.NoSuchKey}, // HeadObject
		{answered(404, "NoSuchBucket"), s3spec.NoSuchBucket},
		{answered(412, "PreconditionFailed"), s3spec.PreconditionFailed},
		{answered(412, ""), s3spec.PreconditionFailed}, // a conditional HEAD
		{answered(409, ""), s3spec.ConditionalConflict},
		{answered(403, ""), s3spec.AccessDenied},
		{answered(507, ""), s3spec.InsufficientStorage},
		{answered(409, "ConditionalRequestConflict"), s3spec.ConditionalConflict},
		{answered(503, "SlowDown"), s3spec.SlowDown},
		{answered(503, ""), s3spec.SlowDown},
		{answered(507, "InsufficientStorage"), s3spec.InsufficientStorage},
		{answered(403, "QuotaExceeded"), s3spec.QuotaExceeded},
		{answered(403, "AccessDenied"), s3spec.AccessDenied},
		{answered(403, "SignatureDoesNotMatch"), s3spec.AccessDenied},
		{answered(403, "InvalidAccessKeyId"), s3spec.AccessDenied},
		{answered(500, "InternalError"), s3spec.Err},
		{answered(409, "BucketAlreadyExists"), s3spec.Err},   // a known status under an unknown code
		{answered(404, "NoSuchUpload"), s3spec.NoSuchUpload}, // never a MISS
		{answered(404, "NoSuchVersion"), s3spec.Err},         // an unknown 404 code: never a MISS either
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, s3spec.Conn},
		{fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), s3spec.Conn},
		{context.DeadlineExceeded, s3spec.Conn},
		{errors.New("something else"), s3spec.Err},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

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

	gen "github.com/kvblob/kvblob/generated/s3"
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
		want gen.Code
	}{
		{nil, gen.OK},
		{answered(404, "NoSuchKey"), gen.NoSuchKey},
		{answered(404, ""), gen.NoSuchKey}, // HeadObject
		{answered(404, "NoSuchBucket"), gen.NoSuchBucket},
		{answered(412, "PreconditionFailed"), gen.PreconditionFailed},
		{answered(409, "ConditionalRequestConflict"), gen.ConditionalConflict},
		{answered(503, "SlowDown"), gen.SlowDown},
		{answered(503, ""), gen.SlowDown},
		{answered(507, "InsufficientStorage"), gen.InsufficientStorage},
		{answered(403, "QuotaExceeded"), gen.QuotaExceeded},
		{answered(403, "AccessDenied"), gen.AccessDenied},
		{answered(403, "SignatureDoesNotMatch"), gen.AccessDenied},
		{answered(403, "InvalidAccessKeyId"), gen.AccessDenied},
		{answered(500, "InternalError"), gen.Err},
		{answered(409, "BucketAlreadyExists"), gen.Err}, // a known status under an unknown code
		{answered(404, "NoSuchUpload"), gen.Err},        // never a MISS
		{&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, gen.Conn},
		{fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), gen.Conn},
		{context.DeadlineExceeded, gen.Conn},
		{errors.New("something else"), gen.Err},
	} {
		if got := classify(c.err); got != c.want {
			t.Errorf("classify(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

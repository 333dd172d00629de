package s3

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"

	"github.com/aws/smithy-go"

	"github.com/kvblob/kvblob/generated/s3spec"
)

// byCode is the S3 error code each spec/s3-*.yaml code stands for.
var byCode = map[string]s3spec.Code{
	"NoSuchKey": s3spec.NoSuchKey, "NotFound": s3spec.NoSuchKey,
	"NoSuchBucket":               s3spec.NoSuchBucket,
	"NoSuchUpload":               s3spec.NoSuchUpload,
	"PreconditionFailed":         s3spec.PreconditionFailed,
	"ConditionalRequestConflict": s3spec.ConditionalConflict,
	"SlowDown":                   s3spec.SlowDown, "ServiceUnavailable": s3spec.SlowDown,
	"InsufficientStorage": s3spec.InsufficientStorage,
	"QuotaExceeded":       s3spec.QuotaExceeded,
	"AccessDenied":        s3spec.AccessDenied, "SignatureDoesNotMatch": s3spec.AccessDenied, "InvalidAccessKeyId": s3spec.AccessDenied,
}

// byStatus classifies an HTTP answer whose body named no code (a HEAD has
// no body).
var byStatus = map[int]s3spec.Code{
	403: s3spec.AccessDenied, 404: s3spec.NoSuchKey, 409: s3spec.ConditionalConflict,
	412: s3spec.PreconditionFailed, 503: s3spec.SlowDown, 507: s3spec.InsufficientStorage,
}

// classify turns a client error into a spec/s3-v1.109.yaml code: the S3
// error code when the server named one (ERR when the table does not), the
// HTTP status when it named none, CONN when no HTTP answer came back, ERR
// otherwise. What each code
// means for a row is the spec's.
func classify(err error) s3spec.Code {
	if err == nil {
		return s3spec.OK
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() != "" {
		// A code the table does not name is ERR, whatever its status: a
		// 404 under another code is not an absent object.
		if c, ok := byCode[api.ErrorCode()]; ok {
			return c
		}
		return s3spec.Err
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() != 0 {
		if c, ok := byStatus[status.HTTPStatusCode()]; ok {
			return c
		}
		return s3spec.Err
	}
	var (
		op  *net.OpError
		ue  *url.Error
		ne  net.Error
		cut = errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	)
	if cut || errors.As(err, &op) || errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return s3spec.Conn
	}
	return s3spec.Err
}

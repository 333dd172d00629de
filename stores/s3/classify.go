package s3

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"

	"github.com/aws/smithy-go"

	s3gen "github.com/kvblob/kvblob/generated/s3"
)

// byCode is the S3 error code each spec/s3-*.yaml code stands for.
var byCode = map[string]s3gen.Code{
	"NoSuchKey": s3gen.NoSuchKey, "NotFound": s3gen.NoSuchKey,
	"NoSuchBucket":               s3gen.NoSuchBucket,
	"NoSuchUpload":               s3gen.NoSuchUpload,
	"PreconditionFailed":         s3gen.PreconditionFailed,
	"ConditionalRequestConflict": s3gen.ConditionalConflict,
	"SlowDown":                   s3gen.SlowDown, "ServiceUnavailable": s3gen.SlowDown,
	"InsufficientStorage": s3gen.InsufficientStorage,
	"QuotaExceeded":       s3gen.QuotaExceeded,
	"AccessDenied":        s3gen.AccessDenied, "SignatureDoesNotMatch": s3gen.AccessDenied, "InvalidAccessKeyId": s3gen.AccessDenied,
}

// byStatus classifies an HTTP answer whose body named no code (a HEAD has
// no body).
var byStatus = map[int]s3gen.Code{
	403: s3gen.AccessDenied, 404: s3gen.NoSuchKey, 409: s3gen.ConditionalConflict,
	412: s3gen.PreconditionFailed, 503: s3gen.SlowDown, 507: s3gen.InsufficientStorage,
}

// unsatisfiable reports a ranged GET the server refused because no byte
// of its range exists (416, InvalidRange): from byte 0, an empty object.
func unsatisfiable(err error) bool {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "InvalidRange" {
		return true
	}
	var status interface{ HTTPStatusCode() int }
	return errors.As(err, &status) && status.HTTPStatusCode() == http.StatusRequestedRangeNotSatisfiable
}

// classify turns a client error into a spec/s3-v1.109.yaml code: the S3
// error code when the server named one (ERR when the table does not), the
// HTTP status when it named none, CONN when no HTTP answer came back, ERR
// otherwise. What each code
// means for a row is the spec's.
func classify(err error) s3gen.Code {
	if err == nil {
		return s3gen.OK
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() != "" {
		// A code the table does not name is ERR, whatever its status: a
		// 404 under another code is not an absent object.
		if c, ok := byCode[api.ErrorCode()]; ok {
			return c
		}
		return s3gen.Err
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() != 0 {
		if c, ok := byStatus[status.HTTPStatusCode()]; ok {
			return c
		}
		return s3gen.Err
	}
	var (
		op  *net.OpError
		ue  *url.Error
		ne  net.Error
		cut = errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	)
	if cut || errors.As(err, &op) || errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return s3gen.Conn
	}
	return s3gen.Err
}

package s3

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"

	"github.com/aws/smithy-go"

	gen "github.com/kvblob/kvblob/generated/s3"
)

// byCode is the S3 error code each spec/s3-*.yaml code stands for.
var byCode = map[string]gen.Code{
	"NoSuchKey": gen.NoSuchKey, "NotFound": gen.NoSuchKey,
	"NoSuchBucket":               gen.NoSuchBucket,
	"PreconditionFailed":         gen.PreconditionFailed,
	"ConditionalRequestConflict": gen.ConditionalConflict,
	"SlowDown":                   gen.SlowDown, "ServiceUnavailable": gen.SlowDown,
	"InsufficientStorage": gen.InsufficientStorage,
	"QuotaExceeded":       gen.QuotaExceeded,
	"AccessDenied":        gen.AccessDenied, "SignatureDoesNotMatch": gen.AccessDenied, "InvalidAccessKeyId": gen.AccessDenied,
}

// byStatus classifies an HTTP answer whose body named no code (a HEAD has
// no body).
var byStatus = map[int]gen.Code{
	403: gen.AccessDenied, 404: gen.NoSuchKey, 409: gen.ConditionalConflict,
	412: gen.PreconditionFailed, 503: gen.SlowDown, 507: gen.InsufficientStorage,
}

// classify turns a client error into a spec/s3-v1.109.yaml code: the S3
// error code when the server named one (ERR when the table does not), the
// HTTP status when it named none, CONN when no HTTP answer came back, ERR
// otherwise. What each code
// means for a row is the spec's.
func classify(err error) gen.Code {
	if err == nil {
		return gen.OK
	}
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() != "" {
		// A code the table does not name is ERR, whatever its status: a
		// 404 under another code is not an absent object.
		if c, ok := byCode[api.ErrorCode()]; ok {
			return c
		}
		return gen.Err
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() != 0 {
		if c, ok := byStatus[status.HTTPStatusCode()]; ok {
			return c
		}
		return gen.Err
	}
	var (
		op  *net.OpError
		ue  *url.Error
		ne  net.Error
		cut = errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
	)
	if cut || errors.As(err, &op) || errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return gen.Conn
	}
	return gen.Err
}

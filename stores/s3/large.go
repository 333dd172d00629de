package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	s3gen "github.com/kvblob/kvblob/generated/s3"
	"github.com/kvblob/kvblob/runtime/rules"
	"github.com/kvblob/kvblob/stores/trailer"
)

// Large rows (spec/s3-v1.109.yaml, "Large rows"): an object longer than
// Options.MultipartBytes is put by multipart upload and read by ranged
// GETs, Options.PartBytes at a time, Options.PartsInFlight at once.

// DefaultMultipartBytes is Options.MultipartBytes's default: objects of
// up to 16 MiB are one PutObject and one GetObject. Below two parts a
// multipart upload gains nothing (S3 refuses parts under 5 MiB but the
// last) and costs two more requests.
const DefaultMultipartBytes = 16 << 20

// DefaultPartBytes is Options.PartBytes's default.
const DefaultPartBytes = 8 << 20

// MinPartBytes is the least Options.PartBytes S3 takes: it refuses a part
// under 5 MiB but the last.
const MinPartBytes = 5 << 20

// DefaultPartsInFlight is Options.PartsInFlight's default.
const DefaultPartsInFlight = 4

// large reports whether an object of up to n bytes goes in parts.
func (d *Driver) large(n int64) bool {
	return d.opt.MultipartBytes > 0 && n > d.opt.MultipartBytes
}

// span is one part of an object: its bytes from the slot and from the
// tail (tag and trailer), and where it starts in the object.
type span struct {
	off        int64
	slot, tail []byte
}

// parts cuts the object slot followed by tail into parts of size bytes
// (the last shorter).
func parts(slot, tail []byte, size int64) []span {
	n, s := int64(len(slot)+len(tail)), int64(len(slot))
	clamp := func(x, lo, hi int64) int64 { return max(lo, min(x, hi)) }
	var out []span
	for off := int64(0); off < n; off += size {
		end := min(off+size, n)
		out = append(out, span{off: off,
			slot: slot[clamp(off, 0, s):clamp(end, 0, s)],
			tail: tail[clamp(off-s, 0, int64(len(tail))):clamp(end-s, 0, int64(len(tail)))]})
	}
	return out
}

// inParallel runs f for each index below n, up to limit at once, stops
// starting more after the first failure, and returns once every f it
// started has returned, with the first failure.
func inParallel(n, limit int, f func(i int) (s3gen.Code, error)) (s3gen.Code, error) {
	var mu sync.Mutex
	code, first := s3gen.OK, error(nil)
	next := 0
	var wg sync.WaitGroup
	for range min(n, limit) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i, stop := next, code != s3gen.OK
				next++
				mu.Unlock()
				if stop || i >= n {
					return
				}
				if c, err := f(i); c != s3gen.OK {
					mu.Lock()
					if code == s3gen.OK {
						code, first = c, err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return code, first
}

// putParts publishes slot and tail by multipart upload: create_upload,
// upload_part of every part, complete_upload with If-None-Match: *. It
// answers the mapping of the call that ended it (complete_upload's 412
// asks existence, as put's does), and aborts the upload after any
// failure past its creation. Every part's body is sealed before it
// returns.
func (d *Driver) putParts(ctx context.Context, key string, slot, tail []byte) (rules.Mapping, error) {
	id, code, err := d.createUpload(ctx, key)
	if m := d.spec.Calls.CreateUpload.Map(int64(code)); !m.Continue {
		return m, err
	}
	completed := false
	defer func() {
		if !completed {
			d.abortUpload(ctx, key, id)
		}
	}()
	done, code, err := d.uploadParts(ctx, key, id, slot, tail)
	if m := d.spec.Calls.UploadPart.Map(int64(code)); !m.Continue {
		return m, err
	}
	code, err = d.completeUpload(ctx, key, id, done)
	completed = code == s3gen.OK
	return d.spec.Calls.CompleteUpload.Map(int64(code)), err
}

func (d *Driver) createUpload(ctx context.Context, key string) (string, s3gen.Code, error) {
	if code, staged, err := d.seam("create_upload", key); staged {
		return "", code, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.opt.Timeout)
	defer cancel()
	out, err := d.c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: d.bucket, Key: aws.String(key)})
	if err != nil {
		return "", classify(err), err
	}
	if aws.ToString(out.UploadId) == "" {
		return "", s3gen.Err, errors.New("CreateMultipartUpload answered no upload id")
	}
	return aws.ToString(out.UploadId), s3gen.OK, nil
}

// uploadParts sends every part of slot and tail, Options.PartsInFlight at
// once; each body reads the slot in place and is sealed before its call
// returns, and uploadParts returns only once every call has.
func (d *Driver) uploadParts(ctx context.Context, key, id string, slot, tail []byte) ([]types.CompletedPart, s3gen.Code, error) {
	if code, staged, err := d.seam("upload_part", key); staged {
		return nil, code, err
	}
	ps := parts(slot, tail, d.opt.PartBytes)
	done := make([]types.CompletedPart, len(ps))
	code, err := inParallel(len(ps), d.opt.PartsInFlight, func(i int) (s3gen.Code, error) {
		b := newBody(ps[i].slot, ps[i].tail)
		defer b.seal() // the proof that this part's access to the slot ended
		if d.onBody != nil {
			d.onBody(b)
		}
		cx, cancel := context.WithTimeout(ctx, d.opt.Timeout)
		defer cancel()
		n := int32(i + 1)
		out, err := d.c.UploadPart(cx, &s3.UploadPartInput{Bucket: d.bucket, Key: aws.String(key), UploadId: aws.String(id),
			PartNumber: aws.Int32(n), Body: b, ContentLength: aws.Int64(b.size())})
		if err != nil {
			return classify(err), fmt.Errorf("part %d of %d: %w", n, len(ps), err)
		}
		done[i] = types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag}
		return s3gen.OK, nil
	})
	return done, code, err
}

func (d *Driver) completeUpload(ctx context.Context, key, id string, done []types.CompletedPart) (s3gen.Code, error) {
	if code, staged, err := d.seam("complete_upload", key); staged {
		return code, err
	}
	ctx, cancel := context.WithTimeout(ctx, d.opt.Timeout)
	defer cancel()
	_, err := d.c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: d.bucket, Key: aws.String(key), UploadId: aws.String(id),
		MultipartUpload: &types.CompletedMultipartUpload{Parts: done}, IfNoneMatch: aws.String("*")})
	return classify(err), err
}

// abortUpload drops an upload that will not complete, best effort, on a
// context of its own (the call's may be what ended), bounded by
// Options.Timeout; a failed abort is left to the bucket's lifecycle.
func (d *Driver) abortUpload(ctx context.Context, key, id string) {
	if _, staged, _ := d.seam("abort_upload", key); staged {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.opt.Timeout)
	defer cancel()
	_, _ = d.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: d.bucket, Key: aws.String(key), UploadId: aws.String(id)})
}

// getRanges reads key's object into buf (grown as needed) by ranged GETs:
// the first part, whose answer gives the object's length and ETag, then
// the others Options.PartsInFlight at once, each with If-Match on that
// ETag, so an object replaced meanwhile is a 412, never a mix of two.
// An object longer than a row of rowBytes with its tag and trailer is CORRUPT once the first part named its
// length, and read no further.
func (d *Driver) getRanges(ctx context.Context, key string, rowBytes int64, buf []byte) ([]byte, string, s3gen.Code, error) {
	limit := rowBytes + trailer.TailSize
	if int64(cap(buf)) < limit {
		buf = make([]byte, limit)
	}
	buf = buf[:limit]
	part := d.opt.PartBytes
	got, etag, total, code, err := d.getRange(ctx, key, 0, buf[:min(part, limit)], "")
	switch {
	case code != s3gen.OK && unsatisfiable(err):
		// No range from byte 0 is satisfiable: the object is empty. One
		// GET of it whole gives its ETag, so that a writer can replace
		// exactly it (put, after a 412), and is CORRUPT for any row.
		return d.getObject(ctx, key, rowBytes, buf)
	case code != s3gen.OK:
		return nil, etag, code, err
	case total > limit:
		return nil, etag, s3gen.Corrupt, fmt.Errorf("the object holds %d bytes, more than the row's %d with its tag and trailer", total, rowBytes)
	case got != min(part, total):
		return nil, etag, s3gen.Err, fmt.Errorf("the first %d bytes of a %d-byte object answered %d", min(part, total), total, got)
	}
	n := int((total - got + part - 1) / part)
	code, err = inParallel(n, d.opt.PartsInFlight, func(i int) (s3gen.Code, error) {
		off := got + int64(i)*part
		dst := buf[off:min(off+part, total)]
		m, _, _, code, err := d.getRange(ctx, key, off, dst, etag)
		if code == s3gen.OK && m != int64(len(dst)) {
			return s3gen.Err, fmt.Errorf("bytes %d-%d of the object answered %d bytes", off, off+int64(len(dst))-1, m)
		}
		return code, err
	})
	if code != s3gen.OK {
		return nil, etag, code, err
	}
	return buf[:total], etag, s3gen.OK, nil
}

// getRange GETs up to len(dst) bytes of key's object from off (If-Match:
// etag, when given) into dst, and answers how many came, the object's
// ETag and its whole length.
func (d *Driver) getRange(ctx context.Context, key string, off int64, dst []byte, etag string) (int64, string, int64, s3gen.Code, error) {
	ctx, cancel := context.WithTimeout(ctx, d.opt.Timeout)
	defer cancel()
	last := off + int64(len(dst)) - 1
	in := &s3.GetObjectInput{Bucket: d.bucket, Key: aws.String(key), Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, last))}
	if etag != "" {
		in.IfMatch = aws.String(etag)
	}
	out, err := d.c.GetObject(ctx, in)
	if err != nil {
		return 0, "", 0, classify(err), err
	}
	defer out.Body.Close()
	total, ok := rangeTotal(aws.ToString(out.ContentRange))
	got := aws.ToInt64(out.ContentLength)
	switch {
	case !ok || out.ContentLength == nil:
		return 0, "", 0, s3gen.Err, fmt.Errorf("a GET of bytes %d-%d answered without its range and length (Content-Range %q)", off, last, aws.ToString(out.ContentRange))
	case got > int64(len(dst)) || got < 0:
		return 0, "", 0, s3gen.Err, fmt.Errorf("a GET of bytes %d-%d answered %d bytes", off, last, got)
	}
	if _, err := io.ReadFull(out.Body, dst[:got]); err != nil {
		return 0, "", 0, classify(err), fmt.Errorf("reading bytes %d-%d of the object: %w", off, last, err)
	}
	return got, aws.ToString(out.ETag), total, s3gen.OK, nil
}

// rangeTotal is the object's length a Content-Range ("bytes a-b/total")
// names.
func rangeTotal(cr string) (int64, bool) {
	i := strings.LastIndexByte(cr, '/')
	if !strings.HasPrefix(cr, "bytes ") || i < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(cr[i+1:], 10, 64)
	return n, err == nil && n >= 0
}

package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/sys/unix"

	s3gen "github.com/kvblob/kvblob/generated/s3"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/fs"
	"github.com/kvblob/kvblob/stores/s3"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
	"github.com/kvblob/kvblob/stores/trailer"
)

// rowsInFlightFlag is -rows-in-flight: fs's and S3's Options.RowsInFlight
// when positive, else each store's default.
var rowsInFlightFlag int

// fsDirFlag is -fs-dir: the folder the fs store's directory is made in
// ("": the system's temporary folder, on the machine's disk here).
var fsDirFlag string

func rowsInFlight(def int) int {
	if rowsInFlightFlag > 0 {
		return rowsInFlightFlag
	}
	return def
}

// eachKey runs do(g, i) for every index below n on conc goroutines (g is
// the goroutine's number, for its own buffers) and returns the time it
// took and the first error.
func eachKey(n, conc int, do func(g, i int) error) (time.Duration, error) {
	var mu sync.Mutex
	var first error
	next := 0
	var wg sync.WaitGroup
	t0 := time.Now()
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := do(g, i); err != nil {
					mu.Lock()
					first = cmpErr(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(t0), first
}

// buffers are one warmed (faulted-in) buffer of n bytes per goroutine.
func buffers(conc, n int) [][]byte {
	bufs := make([][]byte, conc)
	for g := range bufs {
		bufs[g] = bytes.Repeat([]byte{1}, n)
	}
	return bufs
}

// fsStore is the shared-filesystem driver over a fresh directory on the
// machine's disk (not a tmpfs: its fsyncs are real; -fs-dir makes it in
// another folder, e.g. a tmpfs, to see the store without a disk's
// fsyncs), against the durable
// write a program would do itself (a temporary file written and fsynced,
// renamed over the object, the directory fsynced) and a pread of the
// whole file, at the same concurrency (posix); and against the same pread
// followed by the trailer's CRC32 over the payload (posix_checked): the
// least a raw client must do before it trusts a row on a filesystem that
// others can write, which the driver's fetch does too.
func fsStore() (store, error) {
	dir, err := os.MkdirTemp(fsDirFlag, "blobbench-fs-")
	if err != nil {
		return store{}, err
	}
	opt := fs.Options{Root: dir, RowsInFlight: rowsInFlight(fs.DefaultRowsInFlight)}
	paths := func(d driver.Driver, key string) string {
		file, _, _ := d.(*fs.Driver).Paths(key)
		return file
	}
	return store{name: "fs", plainName: "posix", checkedName: "posix_checked", rowsInFlight: opt.RowsInFlight, rounds: shortStepRounds,
		make: func() (driver.Driver, error) { return fs.Open(opt) },
		keyed: func(in *trailer.Integrity) (driver.Driver, error) {
			o := opt
			o.Integrity = in
			return fs.Open(o)
		},
		forget: func(d driver.Driver, keys []string) {
			for _, k := range keys {
				_ = os.Remove(paths(d, k))
			}
		},
		plain: func(d driver.Driver, w plainWork) (plainTimes, error) {
			keys, objs, putConc, conc := w.keys, w.objs, w.putConc, w.getConc
			src, dst := w.rows(w.src), w.rows(w.dst)
			files := make([]string, len(keys))
			for i, k := range keys {
				files[i] = paths(d, k)
				if err := os.MkdirAll(filepath.Dir(files[i]), 0o700); err != nil {
					return plainTimes{}, err
				}
			}
			// Each timed step starts with the caches cold, as the
			// driver's publish and fetch do: the put as measureBandwidth
			// leaves it, the reads after a coldCaches of their own (else
			// the checked read read the files the plain read had just
			// read, into the same slots, and each read paid for the
			// lines the step before it left dirty).
			settle()
			// The payload from the row's slot, then the trailer, as the
			// driver writes them.
			put, err := eachKey(len(keys), putConc, func(_, i int) error { return durableWrite(files[i], src[i], objs[i][len(src[i]):]) })
			if err != nil {
				return plainTimes{}, err
			}
			tails := buffers(conc, plainTail)
			coldCaches()
			get, err := eachKey(len(keys), conc, func(g, i int) error {
				return preadObject(files[i], dst[i], tails[g][:len(objs[i])-len(dst[i])])
			})
			if err != nil {
				return plainTimes{}, err
			}
			coldCaches()
			checked, err := eachKey(len(keys), conc, func(g, i int) error {
				tail := tails[g][:len(objs[i])-len(dst[i])]
				if err := preadObject(files[i], dst[i], tail); err != nil {
					return err
				}
				return crcChecks(files[i], dst[i], tail)
			})
			return plainTimes{put: put, get: get, checked: checked}, err
		},
		settle: settle,
		// Removed on Ctrl-C too, not only when measure returns.
		stop: atCleanup(func() { _ = os.RemoveAll(dir) })}, nil
}

// preadObject reads file whole in one call, as a raw client does: the
// payload into dst (the row's slot), the trailer after it into tail.
// O_NOATIME, as the driver's get opens it: else the first read of a file
// after its write (the plain read here; the driver's fetch) updates its
// access time under relatime, a journalled inode update a later read
// (the checked read here) does not pay, and the two reads are not like
// for like.
func preadObject(file string, dst, tail []byte) error {
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOATIME, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	n, err := unix.Preadv(fd, [][]byte{dst, tail}, 0)
	if n != len(dst)+len(tail) {
		return fmt.Errorf("preadv %s: %d of %d bytes: %v", file, n, len(dst)+len(tail), err)
	}
	return nil
}

// crcChecks is a raw client's check of a row it read: the CRC32 of the
// payload against the one its trailer (the last trailer.Size bytes of
// tail) states.
func crcChecks(file string, payload, tail []byte) error {
	t := tail[len(tail)-trailer.Size:]
	if got, want := crc32.ChecksumIEEE(payload), binary.LittleEndian.Uint32(t[trailer.Size-4:]); got != want {
		return fmt.Errorf("%s: payload CRC32 %08x, its trailer says %08x", file, got, want)
	}
	return nil
}

// plainTail is the room a raw get keeps for what follows an object's
// payload (its tag and trailer), read into a small buffer of its own.
const plainTail = trailer.TailSize

// settle writes back whatever the disk still owes for what ran before
// (dirty pages, the journal, the discards of removed files: the root is
// on an ext4 mounted with discard), outside the timed part, so that the
// driver's publish and the raw one each start from a disk with nothing
// pending, whichever ran and removed its files before.
func settle() { unix.Sync() }

// durableWrite writes payload and then tail to file as a program that
// wants it to survive a crash does: a temporary file beside it, written
// and fsynced, renamed over file, and the directory fsynced.
func durableWrite(file string, payload, tail []byte) error {
	tmp := file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(payload)
	if err == nil {
		_, err = f.Write(tail)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, file)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	dfd, err := unix.Open(filepath.Dir(file), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	return unix.Fsync(dfd)
}

// s3TmpfsBytes is the tmpfs under the bench's gateway: two views of the
// largest default size, the raw client's copies and the gateway's
// temporary files, with room to spare.
const s3TmpfsBytes = 1 << 30

// s3Store is the S3 driver over a versitygw it starts on loopback (HTTPS,
// over a tmpfs when run as root), against the SDK's own PutObject and
// GetObject of the same objects through the same client, at the same
// concurrency.
func s3Store() (store, error) {
	if ok, why := s3kit.Available(); !ok {
		return store{}, errors.New(why)
	}
	e, err := s3kit.SetupSized(s3TmpfsBytes)
	if err != nil {
		return store{}, err
	}
	tr := e.Transport()
	tr.MaxIdleConnsPerHost, tr.MaxConnsPerHost = 256, 0
	opt := s3.Options{Endpoint: e.Endpoint, Bucket: "blobbench", AccessKey: e.AccessKey, SecretKey: e.SecretKey,
		HTTPClient: &http.Client{Transport: tr}, MaxAttempts: 1, RowsInFlight: rowsInFlight(s3.DefaultRowsInFlight)}
	// Stopped, its tmpfs unmounted, on Ctrl-C too.
	stop := atCleanup(func() {
		tr.CloseIdleConnections()
		_ = e.Close()
	})
	d, err := s3.Open(opt)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err = d.Client().CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(opt.Bucket)})
		cancel()
	}
	if err != nil {
		stop()
		return store{}, fmt.Errorf("s3 over versitygw: %w", err)
	}
	client := func(d driver.Driver) *awss3.Client { return d.(*s3.Driver).Client() }
	// Views are cut at the spec's batching, as a backend configured from
	// it cuts them (rows_per_batch 64, bytes_per_batch 64 MiB), unless
	// -rows-per-call or -bytes-per-call is given: at the bench's 4 MiB
	// calls a call of four 1 MiB rows ends with its one publishing worker
	// waiting for the slowest of four requests before the next call,
	// which the raw client's goroutines never do (about 4% of the
	// publish at 1 MiB).
	return store{name: "s3", plainName: "sdk", rowsInFlight: opt.RowsInFlight,
		rowsPerCall: s3gen.S3V1109().Defaults.RowsPerBatch, bytesPerCall: s3gen.S3V1109().Defaults.BytesPerBatch,
		make: func() (driver.Driver, error) { return s3.Open(opt) },
		keyed: func(in *trailer.Integrity) (driver.Driver, error) {
			o := opt
			o.Integrity = in
			return s3.Open(o)
		},
		forget: func(d driver.Driver, keys []string) {
			_, _ = eachKey(len(keys), 8, func(_, i int) error {
				_, err := client(d).DeleteObject(context.Background(), &awss3.DeleteObjectInput{Bucket: aws.String(opt.Bucket), Key: aws.String(keys[i])})
				return err
			})
		},
		plain: func(d driver.Driver, w plainWork) (plainTimes, error) {
			keys, objs, putConc, conc := w.keys, w.objs, w.putConc, w.getConc
			src, dst := w.rows(w.src), w.rows(w.dst)
			c, ctx := client(d), context.Background()
			put, err := eachKey(len(keys), putConc, func(_, i int) error {
				// The payload from the row's slot, then the trailer, as
				// the driver sends them.
				body := io.NewSectionReader(joined{src[i], objs[i][len(src[i]):]}, 0, int64(len(objs[i])))
				_, err := c.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(opt.Bucket), Key: aws.String(keys[i]),
					Body: body, ContentLength: aws.Int64(int64(len(objs[i])))})
				return err
			})
			if err != nil {
				return plainTimes{}, err
			}
			tails := buffers(conc, plainTail)
			coldCaches()
			get, err := eachKey(len(keys), conc, func(g, i int) error {
				out, err := c.GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(opt.Bucket), Key: aws.String(keys[i])})
				if err != nil {
					return err
				}
				defer out.Body.Close()
				// The payload into the row's slot, the trailer after it
				// into a small buffer.
				if _, err = io.ReadFull(out.Body, dst[i]); err == nil {
					_, err = io.ReadFull(out.Body, tails[g][:len(objs[i])-len(dst[i])])
				}
				return err
			})
			return plainTimes{put: put, get: get}, err
		},
		stop: stop}, nil
}

// joined reads a followed by b, as one io.ReaderAt: a raw put's body of a
// row's slot and its trailer, without copying either.
type joined struct{ a, b []byte }

func (j joined) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	if off < int64(len(j.a)) {
		n = copy(p, j.a[off:])
	}
	if rest := off + int64(n) - int64(len(j.a)); n < len(p) && rest < int64(len(j.b)) {
		n += copy(p[n:], j.b[rest:])
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

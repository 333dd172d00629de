package s3_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	s3gen "github.com/kvblob/kvblob/generated/s3"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/driverkit"
	"github.com/kvblob/kvblob/stores/s3"
	"github.com/kvblob/kvblob/stores/trailer"
)

var rowKey = bytes.Repeat([]byte{0x42}, 32)

// keyedDriver is a driver with a row key over a fresh bucket, and its seam.
type keyedDriver struct {
	*s3.Driver
	seam *driverkit.Seam
}

func (k *keyedDriver) As(target any) bool {
	if p, ok := target.(**keyedDriver); ok {
		*p = k
		return true
	}
	return false
}

func keyed(t conformance.T) *keyedDriver {
	in, err := trailer.NewIntegrity(rowKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := gw.Value().Transport()
	t.Cleanup(tr.CloseIdleConnections)
	opt := gw.Value().Options(gw.Value().NewBucket(t), tr)
	opt.Integrity, opt.Seam = in, &driverkit.Seam{}
	d, err := s3.Open(opt)
	if err != nil {
		t.Fatal(err)
	}
	return &keyedDriver{Driver: d, seam: opt.Seam}
}

// plant stores obj under key with an unconditional PutObject: another
// writer who can write the bucket.
func plant(d *s3.Driver, key string, obj []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := d.Client().PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(d.Bucket()), Key: aws.String(key), Body: bytes.NewReader(obj)})
	return err
}

func fetch(t *testing.T, d *s3.Driver, key string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := d.Client().GetObject(ctx, &awss3.GetObjectInput{Bucket: aws.String(d.Bucket()), Key: aws.String(key)})
	require.NoError(t, err)
	defer out.Body.Close()
	var b bytes.Buffer
	_, err = b.ReadFrom(out.Body)
	require.NoError(t, err)
	return b.Bytes()
}

// foreign plants, as another writer without the row key would, payload
// with a valid unkeyed trailer under key.
func foreign(d driver.Driver, key string, payload []byte) error {
	var k *keyedDriver
	driver.As(d, &k)
	return plant(k.Driver, key, trailer.Encode(key, payload))
}

// integrity is TestConformance's integrity check: over drivers with a row
// key on versitygw, a row another writer stored with a valid unkeyed
// trailer is a FAULT, where before it was READY.
var integrity = &conformance.Integrity{Factory: func(t conformance.T) driver.Driver { return keyed(t) }, Plant: foreign}

// TestARowCopiedToAnotherKeyIsAFault copies tenant A's tagged object to
// tenant B's key, as is and with its trailer's name digest rewritten for
// B: a get of B is a FAULT (CORRUPT) with the destination untouched.
func TestARowCopiedToAnotherKeyIsAFault(t *testing.T) {
	gw.Need(t)
	d := keyed(t)
	f := storekit.NewFx(t, d, 10*time.Second)
	a, err := driver.Key("tenantA", []byte("block-0"))
	require.NoError(t, err)
	b, err := driver.Key("tenantB", []byte("block-0"))
	require.NoError(t, err)
	require.Equal(t, driver.Ready, f.Put(f.Row(a, 0, 1))[0].Status)
	obj := fetch(t, d.Driver, a)
	for name, copied := range map[string][]byte{"as is": obj, "name digest rewritten": trailer.Retarget(obj, b)} {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, plant(d.Driver, b, copied))
			dst := f.Row(b, 1, storekit.Dest)
			res := f.Get(dst)[0]
			assert.Equal(t, driver.Fault, res.Status, "%v", res)
			assert.Equal(t, int64(s3gen.Corrupt), res.Code, "%v", res)
			storekit.Untouched(t, dst)
		})
	}
}

// TestTheRowsWriterRepairsAPoisonedRow: another writer stores, under the
// row's key, an object that is no row for it (a valid unkeyed trailer under
// a row key; a torn object without one). A get is a FAULT; the row's own
// put, whose If-None-Match: * meets a 412, replaces that object (If-Match on
// its ETag) and answers READY, and a get then reads the row. Before, the
// put answered FAULT every time: the writer could never repair its row.
func TestTheRowsWriterRepairsAPoisonedRow(t *testing.T) {
	gw.Need(t)
	for _, c := range []struct {
		name   string
		open   func(t *testing.T) *s3.Driver
		poison func(key string, payload []byte) []byte
	}{
		{"unkeyed trailer under a row key", func(t *testing.T) *s3.Driver { return keyed(t).Driver },
			func(key string, p []byte) []byte { return trailer.Encode(key, p) }},
		{"torn object without a row key", func(t *testing.T) *s3.Driver {
			d, err := s3.Open(gw.Value().Options(gw.Value().NewBucket(t), nil))
			require.NoError(t, err)
			return d
		}, func(key string, p []byte) []byte { o := trailer.Encode(key, p); o[3] ^= 1; return o }},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := c.open(t)
			f := storekit.NewFx(t, d, 10*time.Second)
			k := key(t, "a")
			row := f.Row(k, 0, 1)
			require.NoError(t, plant(d, k, c.poison(k, bytes.Repeat([]byte{0xEB}, len(row.Spans[0].Bytes())))))
			dst := f.Row(k, 1, storekit.Dest)
			res := f.Get(dst)[0]
			require.Equal(t, driver.Fault, res.Status, "%v", res)
			storekit.Untouched(t, dst)

			res = f.Put(row)[0]
			require.Equal(t, driver.Ready, res.Status, "the row's writer repairs it: %v", res)
			res = f.Get(dst)[0]
			require.Equal(t, driver.Ready, res.Status, "%v", res)
			assert.Equal(t, row.Spans[0].Bytes(), dst.Spans[0].Bytes())
		})
	}
}

// TestAReplaceNeverOverwritesAnObjectStoredSince: the row's put finds a
// poisoned object and is held before its replace; another writer stores a
// row of its own under the key meanwhile. The replace's If-Match fails
// (412): the put is NOT_READY, and the other writer's object stays.
func TestAReplaceNeverOverwritesAnObjectStoredSince(t *testing.T) {
	gw.Need(t)
	d := keyed(t)
	f := storekit.NewFx(t, d, 10*time.Second)
	k := key(t, "a")
	row := f.Row(k, 0, 1)
	require.NoError(t, plant(d.Driver, k, trailer.Encode(k, bytes.Repeat([]byte{0xEB}, len(row.Spans[0].Bytes())))))
	entered, release := d.seam.Hold("replace", k)
	done := make(chan driver.Result, 1)
	go func() { done <- f.Put(row)[0] }()
	select {
	case <-entered:
	case res := <-done:
		release()
		t.Fatalf("the put never reached its replace: %v", res)
	}
	in, err := trailer.NewIntegrity(rowKey, nil)
	require.NoError(t, err)
	since := in.Encode(k, bytes.Repeat([]byte{0x5A}, len(row.Spans[0].Bytes())))
	require.NoError(t, plant(d.Driver, k, since))
	release()
	res := <-done
	assert.Equal(t, driver.NotReady, res.Status, "%v", res)
	assert.Equal(t, since, fetch(t, d.Driver, k), "the replace overwrote an object stored after its GET")
}

package s3_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/internal/witness"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/s3"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
)

// The witnesses of spec/s3-v1.109.yaml: the real driver and the AWS SDK
// over versitygw, through a witness.Proxy (the stream is TLS, so a fault
// is placed by its byte count: a row of 128 KiB puts byte 40000 of a
// request or reply inside the body whether or not a handshake came
// first), each run checked against the rule it reaches
// (internal/witness).

const (
	swRowBytes = 128 << 10
	// swBigBytes is a large row's: two ranged GETs of MinPartBytes.
	swBigBytes = s3.MinPartBytes + 1<<20
	swCanary   = 0xEE
	swMidBody  = 40000
)

type s3w struct {
	env    *s3kit.Env
	k      *s3kit.Driver
	proxy  *witness.Proxy
	region *hostmem.Mapping
	reg    driver.Registration
	n      int
}

func newS3w(t *testing.T, set func(*s3.Options)) *s3w {
	t.Helper()
	env := gw.Need(t)
	f := &s3w{env: env}
	var err error
	f.proxy, err = witness.StartProxy(strings.TrimPrefix(env.Endpoint, "https://"))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, f.proxy.Close()) })
	f.k = s3kit.OpenWith(t, env, func(o *s3.Options) {
		o.Endpoint = "https://" + f.proxy.Addr()
		// What ends a call over a stalled connection.
		o.Timeout = time.Second
		if set != nil {
			set(o)
		}
	})
	f.region, err = hostmem.Map("s3w", driver.Layout{SlotBytes: swBigBytes, Slots: 2})
	require.NoError(t, err)
	f.reg, err = f.k.Register(f.region.Region)
	require.NoError(t, err)
	t.Cleanup(func() {
		f.proxy.Disarm()
		assert.True(t, f.k.Drain(context.Background()))
		assert.NoError(t, f.k.Unregister(f.reg))
		assert.NoError(t, f.k.Close())
		assert.NoError(t, f.region.Close())
	})
	f.src(0x5A)
	return f
}

func (f *s3w) src(seed byte) {
	b := f.region.Slot(0).Bytes()
	for i := range b {
		b[i] = byte(i*37) ^ seed
	}
}

func (f *s3w) row(slot int, n ...int64) driver.Row {
	f.n++
	stem, err := driver.KeyStem("s3w")
	if err != nil {
		panic(err)
	}
	key, err := stem.Key([]byte{byte(f.n)})
	if err != nil {
		panic(err)
	}
	s := f.region.Slot(slot)
	s.Length = swRowBytes
	if len(n) > 0 {
		s.Length = n[0]
	}
	return driver.Row{Key: key, Spans: []driver.Span{s}}
}

func onSlot(r driver.Row, s driver.Span) driver.Row {
	s.Length = r.Spans[0].Length
	return driver.Row{Key: r.Key, Spans: []driver.Span{s}}
}

func (f *s3w) arm(t *testing.T, fault *witness.Fault) func() {
	if fault == nil {
		return func() {}
	}
	a := f.proxy.Arm(*fault)
	return func() {
		select {
		case <-a.Fired():
		default:
			t.Fatalf("the fault (%v) never fired: the witness staged nothing", a.Fault)
		}
	}
}

func (f *s3w) put(t *testing.T, row driver.Row, fault *witness.Fault) witness.Observed {
	t.Helper()
	before := bytes.Clone(row.Spans[0].Bytes())
	fired := f.arm(t, fault)
	op, err := f.k.Put(t.Context(), []driver.Row{row})
	require.NoError(t, err)
	res, done := op.Poll()
	require.True(t, done)
	o := witness.Observed{Result: res[0], AccessEnded: op.AccessEnded(), SourceWritten: !bytes.Equal(before, row.Spans[0].Bytes())}
	fired()
	// After the return: no byte of this may reach the server.
	f.src(0xA5)
	f.proxy.Disarm()
	f.proxy.Drop()
	if obj, err := f.k.Fetch(row.Key); err == nil && bytes.Contains(obj, row.Spans[0].Bytes()[:1024]) {
		o.LateRead = true
	}
	f.src(0x5A)
	return o
}

func (f *s3w) get(t *testing.T, row driver.Row, fault *witness.Fault) witness.Observed {
	t.Helper()
	dst := row.Spans[0].Bytes()
	for i := range dst {
		dst[i] = swCanary
	}
	fired := f.arm(t, fault)
	op, err := f.k.Get(t.Context(), []driver.Row{row}, driver.Hint{})
	require.NoError(t, err)
	res, done := op.Poll()
	require.True(t, done)
	o := witness.Observed{Result: res[0], AccessEnded: op.AccessEnded(),
		Written: bytes.Count(dst, []byte{swCanary}) != len(dst), Whole: bytes.Equal(dst, f.region.Slot(0).Bytes()[:len(dst)])}
	fired()
	f.proxy.Disarm()
	f.proxy.Drop()
	o.LateWritten = !o.Written && bytes.Count(dst, []byte{swCanary}) != len(dst)
	return o
}

// published puts a row of slot 0 and returns it read into slot 1.
func (f *s3w) published(t *testing.T, n ...int64) driver.Row {
	row := f.row(0, n...)
	require.Equal(t, driver.Ready, f.put(t, row, nil).Result.Status)
	return onSlot(row, f.region.Slot(1))
}

type s3Witness struct {
	rule, how string
	set       func(*s3.Options)
	run       func(t *testing.T, f *s3w) witness.Observed
}

func replyAt(a witness.Action) *witness.Fault {
	return &witness.Fault{Dir: witness.Reply, Action: a, At: swMidBody}
}

func requestAt(a witness.Action) *witness.Fault {
	return &witness.Fault{Dir: witness.Request, Action: a, At: swMidBody}
}

func getOtherwise(a witness.Action) func(t *testing.T, f *s3w) witness.Observed {
	return func(t *testing.T, f *s3w) witness.Observed { return f.get(t, f.published(t), replyAt(a)) }
}

func putFault(fault *witness.Fault) func(t *testing.T, f *s3w) witness.Observed {
	return func(t *testing.T, f *s3w) witness.Observed { return f.put(t, f.row(0), fault) }
}

func large(o *s3.Options) { o.MultipartBytes = 1 }

// full runs run once the tmpfs under the gateway is full (skipped where
// the kit cannot mount one).
func full(run func(t *testing.T, f *s3w) witness.Observed) func(t *testing.T, f *s3w) witness.Observed {
	return func(t *testing.T, f *s3w) witness.Observed {
		if !f.env.Tmpfs {
			t.Skip(s3kit.NoMount)
		}
		require.NoError(t, f.k.Fill())
		return run(t, f)
	}
}

// retries is the SDK's default of 3 attempts, with time for its back-off.
func retries(o *s3.Options) { o.MaxAttempts, o.Timeout = 3, 15*time.Second }

var s3Witnesses = []s3Witness{
	{"get.whole", "reply sliced into 1000-byte writes", nil, func(t *testing.T, f *s3w) witness.Observed {
		return f.get(t, f.published(t), &witness.Fault{Dir: witness.Reply, Action: witness.Slice, SliceBytes: 1000})
	}},
	// The SDK retries a request whose response never came (it cannot
	// retry a body that broke after its headers: getOtherwise).
	{"get.whole", "reply reset before its first byte, the SDK retrying (MaxAttempts 3)", retries, func(t *testing.T, f *s3w) witness.Observed {
		return f.get(t, f.published(t), &witness.Fault{Dir: witness.Reply, Action: witness.Reset})
	}},
	{"get.short", "an object of half the row's length", nil, func(t *testing.T, f *s3w) witness.Observed {
		half := f.published(t, swRowBytes/2)
		return f.get(t, onSlot(driver.Row{Key: half.Key, Spans: []driver.Span{f.region.Slot(1)}}, f.region.Slot(1)), nil)
	}},
	{"get.NO_SUCH_KEY", "no object", nil, func(t *testing.T, f *s3w) witness.Observed { return f.get(t, f.row(1), nil) }},
	{"get.CORRUPT", "an object's length of bytes that fail the trailer", nil, func(t *testing.T, f *s3w) witness.Observed {
		row := f.row(1)
		require.NoError(t, f.k.Plant(row.Key, bytes.Repeat([]byte{7}, swRowBytes+64)))
		return f.get(t, row, nil)
	}},
	{"get.NO_SUCH_BUCKET", "the bucket removed under the gateway", nil, func(t *testing.T, f *s3w) witness.Observed {
		row := f.published(t)
		require.NoError(t, f.k.DropBucket())
		return f.get(t, row, nil)
	}},
	{"get.otherwise", "stall the reply mid-body past the timeout", nil, getOtherwise(witness.Stall)},
	{"get.otherwise", "cut the reply mid-body", nil, getOtherwise(witness.Cut)},
	{"get.otherwise", "reset the reply mid-body", nil, getOtherwise(witness.Reset)},
	{"get.otherwise", "truncate the reply mid-body", nil, getOtherwise(witness.Truncate)},

	{"put.OK", "request sliced into 1000-byte writes", nil, putFault(&witness.Fault{Dir: witness.Request, Action: witness.Slice, SliceBytes: 1000})},
	{"put.PRECONDITION_FAILED", "the key holds this row's object", nil, func(t *testing.T, f *s3w) witness.Observed {
		row := f.row(0)
		require.Equal(t, driver.Ready, f.put(t, row, nil).Result.Status)
		o := f.put(t, row, nil)
		o.Branch = witness.Exists
		return o
	}},
	{"put.PRECONDITION_FAILED", "the key holds another row's whole object", nil, func(t *testing.T, f *s3w) witness.Observed {
		row := f.row(0)
		f.src(0x77)
		require.Equal(t, driver.Ready, f.put(t, row, nil).Result.Status)
		f.src(0x5A)
		o := f.put(t, row, nil)
		o.Branch = witness.Other
		return o
	}},
	{"put.NO_SUCH_BUCKET", "the bucket removed under the gateway", nil, func(t *testing.T, f *s3w) witness.Observed {
		require.NoError(t, f.k.DropBucket())
		return f.put(t, f.row(0), nil)
	}},
	{"put.INSUFFICIENT_STORAGE", "the gateway's disk full", nil, full(putFault(nil))},
	{"put.otherwise", "cut the request mid-body", nil, putFault(requestAt(witness.Cut))},
	{"put.otherwise", "reset the request mid-body", nil, putFault(requestAt(witness.Reset))},
	{"put.otherwise", "stall the request mid-body past the timeout", nil, putFault(requestAt(witness.Stall))},
	{"put.otherwise", "reset the reply", nil, putFault(&witness.Fault{Dir: witness.Reply, Action: witness.Reset})},
	{"replace.OK", "the key holds bytes that are no row", nil, func(t *testing.T, f *s3w) witness.Observed {
		row := f.row(0)
		require.NoError(t, f.k.Plant(row.Key, bytes.Repeat([]byte{7}, 100)))
		return f.put(t, row, nil)
	}},

	{"get.PRECONDITION_FAILED", "the object replaced while the first of a large row's ranged GETs is stalled", func(o *s3.Options) {
		o.MultipartBytes, o.PartBytes, o.Timeout = 1, s3.MinPartBytes, 20*time.Second
	}, func(t *testing.T, f *s3w) witness.Observed {
		dst := f.published(t, swBigBytes)
		a := f.proxy.Arm(witness.Fault{Dir: witness.Reply, Action: witness.Stall, At: swMidBody})
		// Once the first GET stalls, another writer's object goes under
		// the key; the first GET then goes on with the old one's bytes
		// and ETag.
		planted, returned := make(chan error, 1), make(chan struct{})
		go func() {
			select {
			case <-a.Fired():
				planted <- f.k.Plant(dst.Key, bytes.Repeat([]byte{9}, 1000))
				a.Release()
			case <-returned:
				planted <- errors.New("the get returned before its first range stalled")
			}
		}()
		o := f.get(t, dst, nil)
		close(returned)
		require.NoError(t, <-planted)
		return o
	}},
	{"create_upload.OK", "a large row, request sliced", large, putFault(&witness.Fault{Dir: witness.Request, Action: witness.Slice, SliceBytes: 1000})},
	{"upload_part.OK", "a large row", large, putFault(nil)},
	{"complete_upload.OK", "a large row", large, putFault(nil)},
	{"upload_part.otherwise", "cut the part's request mid-body", large, putFault(requestAt(witness.Cut))},
	{"create_upload.NO_SUCH_BUCKET", "the bucket removed under the gateway", large, func(t *testing.T, f *s3w) witness.Observed {
		require.NoError(t, f.k.DropBucket())
		return f.put(t, f.row(0), nil)
	}},
}

// s3Unreached are the rules of spec/s3-v1.109.yaml no witness here
// reaches, and why.
var s3Unreached = map[string]string{
	"get.ACCESS_DENIED":                    "credentials the gateway refuses: no wire fault makes a signed request AccessDenied",
	"get.SLOW_DOWN":                        "versitygw never sheds load with 503",
	"put.CONDITIONAL_CONFLICT":             "AWS S3 only: versitygw never answers 409",
	"put.SLOW_DOWN":                        "versitygw never sheds load with 503",
	"put.QUOTA_EXCEEDED":                   "a quota on the gateway's disk: not witnessed here",
	"put.ACCESS_DENIED":                    "credentials the gateway refuses: no wire fault makes a signed request AccessDenied",
	"replace.PRECONDITION_FAILED":          "another writer's object between put's GET and the replace: needs a write between two requests, not witnessed here yet",
	"replace.NO_SUCH_KEY":                  "the object removed between put's GET and the replace: not witnessed here yet",
	"replace.CONDITIONAL_CONFLICT":         "AWS S3 only: versitygw never answers 409",
	"replace.SLOW_DOWN":                    "versitygw never sheds load with 503",
	"replace.INSUFFICIENT_STORAGE":         "a full disk between put's GET and the replace: not witnessed here",
	"replace.QUOTA_EXCEEDED":               "a quota on the gateway's disk: not witnessed here",
	"replace.ACCESS_DENIED":                "credentials the gateway refuses: no wire fault makes a signed request AccessDenied",
	"replace.otherwise":                    "a cut between put's GET and the replace: not witnessed here yet",
	"create_upload.SLOW_DOWN":              "versitygw never sheds load with 503",
	"create_upload.INSUFFICIENT_STORAGE":   "a full disk under the gateway: not witnessed here yet",
	"create_upload.QUOTA_EXCEEDED":         "a quota on the gateway's disk: not witnessed here",
	"create_upload.ACCESS_DENIED":          "credentials the gateway refuses: no wire fault makes a signed request AccessDenied",
	"create_upload.otherwise":              "a cut of the upload's creation: not witnessed here yet",
	"upload_part.INSUFFICIENT_STORAGE":     "a full disk under the gateway: a run ends DECLINED, but a DECLINED row carries no code to tell the part's 507 from the creation's; not witnessed here",
	"upload_part.SLOW_DOWN":                "versitygw never sheds load with 503",
	"upload_part.QUOTA_EXCEEDED":           "a quota on the gateway's disk: not witnessed here",
	"upload_part.NO_SUCH_UPLOAD":           "the upload aborted under the driver between two parts: not witnessed here yet",
	"upload_part.ACCESS_DENIED":            "credentials the gateway refuses: no wire fault makes a signed request AccessDenied",
	"complete_upload.PRECONDITION_FAILED":  "two writers completing one key: not witnessed here yet",
	"complete_upload.CONDITIONAL_CONFLICT": "AWS S3 only: versitygw never answers 409",
	"complete_upload.SLOW_DOWN":            "versitygw never sheds load with 503",
	"complete_upload.INSUFFICIENT_STORAGE": "a full disk under the gateway: not witnessed here yet",
	"complete_upload.QUOTA_EXCEEDED":       "a quota on the gateway's disk: not witnessed here",
	"complete_upload.NO_SUCH_UPLOAD":       "the upload aborted under the driver before its completion: not witnessed here yet",
	"complete_upload.ACCESS_DENIED":        "credentials the gateway refuses: no wire fault makes a signed request AccessDenied",
	"complete_upload.otherwise":            "a cut of the completion: not witnessed here yet",
	"abort_upload.OK":                      "a cleanup: its answer never reaches a row's result",
	"abort_upload.otherwise":               "a cleanup: its answer never reaches a row's result",
}

func TestWitness(t *testing.T) {
	specs, err := witness.Specs()
	require.NoError(t, err)
	const stem = "s3-v1.109"
	var ids []string
	for _, w := range s3Witnesses {
		ids = append(ids, w.rule)
	}
	require.NoError(t, witness.Covered(specs, stem, ids, s3Unreached))
	gw.Need(t)
	for _, w := range s3Witnesses {
		rule, err := witness.Find(specs, stem, w.rule)
		require.NoError(t, err)
		t.Run(stem+"/"+w.rule+"/"+w.how, func(t *testing.T) {
			rule.Announce(t)
			f := newS3w(t, w.set)
			o := w.run(t, f)
			t.Logf("%v", o.Result)
			if err := rule.Check(o); err != nil {
				t.Error(err)
			}
		})
	}
}

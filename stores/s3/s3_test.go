package s3_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	s3gen "github.com/kvblob/kvblob/generated/s3"
	"github.com/kvblob/kvblob/runtime/backend"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/runtime/hostmem"
	"github.com/kvblob/kvblob/stores/s3"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
)

func key(t *testing.T, name string) string {
	k, err := driver.Key("s3-test", []byte(t.Name()+"/"+name))
	require.NoError(t, err)
	return k
}

// lateReader is a transport that reads the first bytes of a request's
// body, answers the request with an error while it is still reading, and
// goes on reading after the call returned from a goroutine of its own, as
// net/http allows a transport to. It reads both what the SDK handed it
// (req.Body) and the driver's own body below the SDK's wrappers (raw), as
// a client that wraps nothing would hand it on.
type lateReader struct {
	raw      func() io.Reader
	returned chan struct{} // closed by the test once Put returned
	done     chan struct{}
	first    int
	mu       sync.Mutex
	got      map[string][]byte
	errs     map[string]error
}

func (l *lateReader) RoundTrip(req *http.Request) (*http.Response, error) {
	raw := l.raw()
	head := make([]byte, 100)
	n, _ := io.ReadFull(req.Body, head)
	l.first = n
	go func() {
		defer close(l.done)
		<-l.returned
		l.mu.Lock()
		defer l.mu.Unlock()
		l.got, l.errs = map[string][]byte{}, map[string]error{}
		for name, r := range map[string]io.Reader{"req.Body": req.Body, "raw": raw} {
			l.got[name], l.errs[name] = io.ReadAll(r)
		}
	}()
	return nil, errors.New("lateReader: the transport gave up early")
}

// TestAPutsAccessEndsWhenItReturns makes the transport return early while
// it is still reading the body: a read after the put returned gets nothing
// of the slot, through the SDK's wrapper or the driver's body itself (the
// driver sealed it), so the call's access really ended on return, as
// spec/s3-v1.109.yaml's put says.
func TestAPutsAccessEndsWhenItReturns(t *testing.T) {
	gw.Need(t)
	var mu sync.Mutex
	var body io.Reader
	late := &lateReader{returned: make(chan struct{}), done: make(chan struct{})}
	late.raw = func() io.Reader { mu.Lock(); defer mu.Unlock(); return body }
	d, err := s3.Open(gw.Value().Options("unused", late))
	require.NoError(t, err)
	s3.OnBody(d, func(r io.Reader) { mu.Lock(); body = r; mu.Unlock() })
	f := storekit.NewFx(t, d, 10*time.Second)
	res := f.Put(f.Row(key(t, "a"), 0, 1))
	require.Equal(t, driver.Fault, res[0].Status, "the transport failed the request")
	assert.Equal(t, int64(s3gen.Conn), res[0].Code)
	require.Equal(t, 100, late.first, "the transport read the body's first bytes before it gave up")
	close(late.returned)
	<-late.done
	late.mu.Lock()
	defer late.mu.Unlock()
	for _, name := range []string{"req.Body", "raw"} {
		assert.Empty(t, late.got[name], "%s: the transport read %d bytes of the body after the put returned", name, len(late.got[name]))
	}
	assert.Error(t, late.errs["raw"], "a read of the driver's body after the put returned must fail")
}

// TestSignedHTTPS: every request is signed (SigV4) and goes over HTTPS; a
// client that does not trust the test CA, one with a wrong secret and one
// speaking plain HTTP all get FAULTs, never READY or MISS, and no result
// text holds the secret.
func TestSignedHTTPS(t *testing.T) {
	gw.Need(t)
	k := s3kit.Open(t, gw.Value())
	var mu sync.Mutex
	var auths []string
	rec := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		auths = append(auths, r.URL.Scheme+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		return k.Transport.RoundTrip(r)
	})
	d, err := s3.Open(gw.Value().Options(k.Bucket(), rec))
	require.NoError(t, err)
	f := storekit.NewFx(t, d, 10*time.Second)
	kk := key(t, "a")
	require.Equal(t, driver.Ready, f.Put(f.Row(kk, 0, 1))[0].Status)
	dst := f.Row(kk, 1, storekit.Dest)
	require.Equal(t, driver.Ready, f.Get(dst)[0].Status)
	mu.Lock()
	require.Len(t, auths, 2)
	for _, a := range auths {
		assert.True(t, strings.HasPrefix(a, "https AWS4-HMAC-SHA256 Credential="+gw.Value().AccessKey+"/"), "request %q is not SigV4 over HTTPS", a)
	}
	mu.Unlock()

	other := x509.NewCertPool() // trusts nothing the server shows
	untrusted := gw.Value().Transport()
	untrusted.TLSClientConfig.RootCAs = other
	wrong := gw.Value().Options(k.Bucket(), nil)
	wrong.SecretKey = "not-" + gw.Value().SecretKey
	plain := gw.Value().Options(k.Bucket(), nil)
	plain.Endpoint = strings.Replace(gw.Value().Endpoint, "https://", "http://", 1)
	for name, opt := range map[string]s3.Options{"untrusted CA": gw.Value().Options(k.Bucket(), untrusted), "wrong secret": wrong, "plain HTTP": plain} {
		t.Run(strings.ReplaceAll(name, " ", "_"), func(t *testing.T) {
			d, err := s3.Open(opt)
			require.NoError(t, err)
			g := storekit.NewFx(t, d, 10*time.Second)
			res := g.Put(g.Row(key(t, "b"), 0, 1))
			assert.Equal(t, driver.Fault, res[0].Status, "%v", res[0])
			dst := g.Row(kk, 1, storekit.Dest)
			res = append(res, g.Get(dst)...)
			assert.Equal(t, driver.Fault, res[1].Status, "%v", res[1])
			storekit.Untouched(t, dst)
			if name == "wrong secret" {
				assert.Equal(t, int64(s3gen.AccessDenied), res[0].Code, "%v", res[0])
			}
			for _, r := range res {
				assert.NotContains(t, r.Text, gw.Value().SecretKey)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTheServerKilledFrozenAndRestarted runs a gateway of its own through
// storekit: frozen (SIGSTOP), a put and a get are FAULTs once the request
// deadline passes and the destination is untouched; killed (also while a
// get is held in flight), the same; restarted on the same port and
// directory, every row that was READY before reads back whole and equal,
// and new puts are READY.
func TestTheServerKilledFrozenAndRestarted(t *testing.T) {
	gw.Need(t)
	e, err := s3kit.Setup()
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.Server.LoopbackOnly())
	k := s3kit.Open(t, e)
	f := storekit.NewFx(t, k, 10*time.Second)
	ready := []driver.Row{f.Row(key(t, "r0"), 0, 1), f.Row(key(t, "r1"), 1, 2)}
	for _, r := range f.Put(ready...) {
		require.Equal(t, driver.Ready, r.Status)
	}
	faulted := func(stage string) {
		t.Helper()
		res := f.Put(f.Row(key(t, stage), 2, 3))
		assert.Equal(t, driver.Fault, res[0].Status, "%s: put %v", stage, res[0])
		assert.Equal(t, int64(s3gen.Conn), res[0].Code, "%s: put %v", stage, res[0])
		dst := f.Row(ready[0].Key, 3, storekit.Dest)
		res = f.Get(dst)
		assert.Equal(t, driver.Fault, res[0].Status, "%s: get %v", stage, res[0])
		storekit.Untouched(t, dst)
	}

	require.NoError(t, e.Server.Freeze())
	faulted("frozen")
	require.NoError(t, e.Server.Thaw())

	// A get held inside the driver while the server dies.
	dst := f.Row(ready[1].Key, 4, storekit.Dest)
	entered, release := k.Seam.Hold("get", ready[1].Key)
	got := make(chan []driver.Result, 1)
	go func() {
		op, err := f.Driver.Get(context.Background(), []driver.Row{dst}, driver.Hint{})
		if err != nil {
			got <- nil
			return
		}
		res, _ := op.Poll()
		got <- res
	}()
	<-entered
	e.Server.Kill()
	release()
	res := <-got
	require.Len(t, res, 1)
	assert.Equal(t, driver.Fault, res[0].Status, "killed mid-get: %v", res[0])
	storekit.Untouched(t, dst)
	faulted("killed")

	require.NoError(t, e.Server.Restart())
	require.NoError(t, e.Server.LoopbackOnly())
	for i, r := range ready {
		dst := f.Row(r.Key, 5+i, storekit.Dest)
		require.Equal(t, driver.Ready, f.Get(dst)[0].Status)
		want := f.Row(r.Key, 7, byte(1+i)).Spans[0].Bytes()
		require.True(t, bytes.Equal(want, dst.Spans[0].Bytes()), "row %d read back other bytes after the restart", i)
	}
	assert.Equal(t, driver.Ready, f.Put(f.Row(key(t, "after"), 2, 3))[0].Status)
}

// TestAFullDiskDeclinesAndFreeingItAdmits fills the tmpfs under the
// gateway for real: a put is DECLINED (507 InsufficientStorage), a READY
// row still reads back, and once space is freed the key takes a put.
func TestAFullDiskDeclinesAndFreeingItAdmits(t *testing.T) {
	gw.Need(t)
	if !gw.Value().Tmpfs {
		t.Skip(s3kit.NoMount)
	}
	k := s3kit.Open(t, gw.Value())
	f := storekit.NewFx(t, k, 10*time.Second)
	old := f.Row(key(t, "old"), 0, 1)
	require.Equal(t, driver.Ready, f.Put(old)[0].Status)
	filler, err := storekit.FillFS(gw.Value().Root)
	require.NoError(t, err)
	kk := key(t, "new")
	res := f.Put(f.Row(kk, 1, 2))
	require.Equal(t, driver.Declined, res[0].Status, "%v", res[0])
	dst := f.Row(old.Key, 2, storekit.Dest)
	require.Equal(t, driver.Ready, f.Get(dst)[0].Status)
	require.NoError(t, removeFile(filler))
	require.Equal(t, driver.Ready, f.Put(f.Row(kk, 1, 2))[0].Status)
}

// TestBackendRoundTripBetweenTwoHosts publishes 64 rows through one
// backend and fetches them through another, over one bucket.
func TestBackendRoundTripBetweenTwoHosts(t *testing.T) {
	gw.Need(t)
	bucket := gw.Value().NewBucket(t)
	const rows = 64
	type host struct {
		be   *backend.Backend
		l    *hostmem.Lender
		hold *hostmem.Hold
		tr   *http.Transport
	}
	open := func() host {
		l, err := hostmem.NewLender("slots", driver.Layout{SlotBytes: 32 << 10, Slots: rows})
		require.NoError(t, err)
		hold, err := l.Hold()
		require.NoError(t, err)
		tr := gw.Value().Transport()
		d, err := s3.Open(gw.Value().Options(bucket, tr))
		require.NoError(t, err)
		bind, err := backend.Bind(t.Context(), hold.Regions(), d, hold)
		require.NoError(t, err)
		be, err := backend.New(bind, backend.Config{Workers: 4, RowsPerBatch: 8, Prefix: "s3-roundtrip"})
		require.NoError(t, err)
		return host{be, l, hold, tr}
	}
	pub, sub := open(), open()
	view := func(l *hostmem.Lender) backend.View {
		r := l.Regions()[0]
		v := make(backend.View, rows)
		for i := range v {
			v[i] = backend.ViewRow{Name: []byte(fmt.Sprint("block-", i)), Spans: []driver.Span{r.Slot(i)}}
		}
		return v
	}
	src, dst := view(pub.l), view(sub.l)
	for i, r := range src {
		b := r.Spans[0].Bytes()
		for j := range b {
			b[j] = byte(i*7 + j)
		}
	}
	outcome := func(a *backend.Attempt, err error) backend.Outcome {
		require.NoError(t, err)
		o, err := a.Wait(conformance.Within(conformance.DefaultDeadline))
		require.NoError(t, err)
		return o
	}
	assert.Equal(t, rows, outcome(pub.be.Publish(t.Context(), src)).InOrder)
	assert.Equal(t, rows, outcome(sub.be.Fetch(t.Context(), dst)).InOrder)
	for i := range src {
		require.True(t, bytes.Equal(src[i].Spans[0].Bytes(), dst[i].Spans[0].Bytes()), "row %d", i)
	}
	for _, h := range []host{pub, sub} {
		require.NoError(t, h.be.Shutdown(conformance.Within(conformance.DefaultDeadline)))
		require.True(t, h.hold.Released())
		require.NoError(t, h.l.Close())
		h.tr.CloseIdleConnections()
	}
}

// TestOpenRefusesWhatItCannotUse: no bucket, or not both credentials
// (every request is signed with the pair, so half of it is none).
func TestOpenRefusesWhatItCannotUse(t *testing.T) {
	for _, c := range []struct {
		name string
		opt  s3.Options
		want string
	}{
		{"no bucket", s3.Options{AccessKey: "a", SecretKey: "b"}, "no bucket"},
		{"no credentials", s3.Options{Bucket: "b"}, "no credentials"},
		{"no secret key", s3.Options{Bucket: "b", AccessKey: "a"}, "no credentials"},
		{"no access key", s3.Options{Bucket: "b", SecretKey: "b"}, "no credentials"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s3.Open(c.opt)
			assert.ErrorContains(t, err, c.want)
		})
	}
}

// TestOptionsNeverPrintTheSecret prints Options every way fmt can: a set
// secret shows as [redacted] (so a reader sees one is set), never itself;
// an unset one shows as nothing (so a reader sees none is).
func TestOptionsNeverPrintTheSecret(t *testing.T) {
	o := s3.Options{Bucket: "b", AccessKey: "AKIDEXAMPLE", SecretKey: "wJalrXUtnFEMI-secret"}
	unset := o
	unset.SecretKey = ""
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
		out := fmt.Sprintf(verb, o)
		assert.NotContains(t, out, o.SecretKey, verb)
		assert.Contains(t, out, "AKIDEXAMPLE", verb)
		assert.Contains(t, out, "SecretKey: [redacted]", verb)
		assert.Contains(t, fmt.Sprintf(verb, unset), "SecretKey: ,", verb)
	}
}

// closeCounter is a response body that counts, with its transport, how
// many bodies were handed out and how many closed.
type closeCounter struct {
	io.ReadCloser
	closed func()
	once   sync.Once
}

func (c *closeCounter) Close() error {
	c.once.Do(c.closed)
	return c.ReadCloser.Close()
}

// wholeAndLong opens a driver whose every GET answer passes through
// onGet, and stores two keys: whole, a row the driver put, and long, an
// object twice a row's length planted by another writer.
func wholeAndLong(t *testing.T, k *s3kit.Driver, onGet func(*http.Response)) (f *storekit.Fx, whole, long string) {
	rec := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := k.Transport.RoundTrip(r)
		if err == nil && r.Method == http.MethodGet {
			onGet(resp)
		}
		return resp, err
	})
	d, err := s3.Open(gw.Value().Options(k.Bucket(), rec))
	require.NoError(t, err)
	f = storekit.NewFx(t, d, 10*time.Second)
	whole, long = key(t, "whole"), key(t, "long")
	require.Equal(t, driver.Ready, f.Put(f.Row(whole, 0, 1))[0].Status)
	require.NoError(t, k.Plant(long, bytes.Repeat([]byte{7}, 2*len(f.Region.Slot(0).Bytes()))))
	return f, whole, long
}

// TestAGetClosesEveryBodyItOpened: a get closes the body of every answer
// it had, read to the end or not (an object too long for the row is
// refused unread): a body left open keeps its connection busy and, get
// after get, leaks one connection each. A transport that wraps every
// body and counts closes finds none open once the gets returned.
func TestAGetClosesEveryBodyItOpened(t *testing.T) {
	gw.Need(t)
	k := s3kit.Open(t, gw.Value())
	var mu sync.Mutex
	opened, closed := 0, 0
	f, whole, long := wholeAndLong(t, k, func(resp *http.Response) {
		if resp.Body != nil {
			mu.Lock()
			opened++
			mu.Unlock()
			resp.Body = &closeCounter{ReadCloser: resp.Body, closed: func() { mu.Lock(); closed++; mu.Unlock() }}
		}
	})
	for _, tc := range []struct {
		key  string
		want driver.Status
	}{{whole, driver.Ready}, {long, driver.Fault}, {whole, driver.Ready}, {long, driver.Fault}} {
		res := f.Get(f.Row(tc.key, 1, storekit.Dest))[0]
		require.Equal(t, tc.want, res.Status, "%v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, 4, opened, "each get had one answer with a body")
	assert.Equal(t, opened, closed, "bodies left open after the gets returned: %d of %d", opened-closed, opened)
}

// TestUnsetOptionsTakeTheirDefaults: an Options that leaves Timeout,
// MaxAttempts and Region unset gets 30 s, 3 attempts and us-east-1: a put
// is READY (a zero timeout would end every request at once), no request
// has more than 30 s left when it reaches the transport (tried: a default
// of 31 s), each request is signed for us-east-1, and a GET the transport
// fails is tried three times.
func TestUnsetOptionsTakeTheirDefaults(t *testing.T) {
	gw.Need(t)
	k := s3kit.Open(t, gw.Value())
	broken := key(t, "broken")
	var mu sync.Mutex
	var scopes []string
	var left []time.Duration
	tries := 0
	rec := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		scopes = append(scopes, r.Header.Get("Authorization"))
		if dl, ok := r.Context().Deadline(); ok {
			left = append(left, time.Until(dl))
		}
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/"+broken) {
			tries++
			return nil, errors.New("the transport fails this key")
		}
		return k.Transport.RoundTrip(r)
	})
	opt := gw.Value().Options(k.Bucket(), rec)
	opt.Timeout, opt.MaxAttempts, opt.Region = 0, 0, ""
	d, err := s3.Open(opt)
	require.NoError(t, err)
	f := storekit.NewFx(t, d, 10*time.Second)
	kk := key(t, "a")
	require.Equal(t, driver.Ready, f.Put(f.Row(kk, 0, 1))[0].Status, "a put under the default timeout")
	require.Equal(t, driver.Ready, f.Get(f.Row(kk, 1, storekit.Dest))[0].Status)
	res := f.Get(f.Row(broken, 1, storekit.Dest))[0]
	assert.Equal(t, driver.Fault, res.Status, "%v", res)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 3, tries, "attempts of a GET that fails")
	assert.Len(t, left, len(scopes), "every request is bounded")
	for _, l := range left {
		assert.LessOrEqual(t, l, 30*time.Second, "the default timeout is 30 s")
		assert.Greater(t, l, 20*time.Second, "the default timeout is 30 s")
	}
	for _, s := range scopes {
		assert.Contains(t, s, "/us-east-1/s3/aws4_request", "request signed for the default region")
	}
}

// TestAnAnswerWithoutALengthIsReadToTheRowsLimit: a GET answered without
// Content-Length (chunked) is read up to one byte past the row's object:
// a whole object is READY and equal, and a longer one is CORRUPT as too
// long for the row, found by reading that one byte, not by its trailer.
func TestAnAnswerWithoutALengthIsReadToTheRowsLimit(t *testing.T) {
	gw.Need(t)
	k := s3kit.Open(t, gw.Value())
	f, whole, long := wholeAndLong(t, k, func(resp *http.Response) {
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
	})
	dst := f.Row(whole, 1, storekit.Dest)
	res := f.Get(dst)[0]
	require.Equal(t, driver.Ready, res.Status, "%v", res)
	assert.Equal(t, f.Region.Slot(0).Bytes(), dst.Spans[0].Bytes())

	dst = f.Row(long, 1, storekit.Dest)
	res = f.Get(dst)[0]
	assert.Equal(t, driver.Fault, res.Status, "%v", res)
	assert.Equal(t, int64(s3gen.Corrupt), res.Code, "%v", res)
	assert.Contains(t, res.Text, "longer than the row's", "%v", res)
	storekit.Untouched(t, dst)
}

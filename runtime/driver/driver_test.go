package driver

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func hostRegion(name string, slotBytes int64, slots int) *Region {
	return &Region{Name: name, Kind: Host, Layout: Layout{SlotBytes: slotBytes, Slots: slots}, Mem: make([]byte, slotBytes*int64(slots))}
}

func TestValuesValidateThemselves(t *testing.T) {
	r := hostRegion("r", 64, 2)
	cases := []struct {
		name string
		err  error
		want string // "" means valid
	}{
		{"layout ok", Layout{SlotBytes: 1, Slots: 1}.Validate(), ""},
		{"layout zero slot size", Layout{SlotBytes: 0, Slots: 1}.Validate(), "slot size 0"},
		{"layout zero slots", Layout{SlotBytes: 8, Slots: 0}.Validate(), "slot count 0"},
		{"layout overflow", Layout{SlotBytes: 1 << 62, Slots: 4}.Validate(), "overflows"},
		{"layout just within an int", Layout{SlotBytes: math.MaxInt / 3, Slots: 3}.Validate(), ""}, // MaxInt-1 bytes fit (tried: > -> >=)
		{"region ok", r.Validate(), ""},
		{"region unknown kind", (&Region{Name: "x", Kind: 9, Layout: Layout{1, 1}}).Validate(), "memory kind 9"},
		{"region short memory", (&Region{Name: "x", Kind: Host, Layout: Layout{8, 2}, Mem: make([]byte, 8)}).Validate(), "needs 16"},
		{"device region without mem", (&Region{Name: "d", Kind: Device, Layout: Layout{8, 2}}).Validate(), ""},
		{"span ok", Span{r, 64, 64}.Validate(), ""},
		{"span negative offset", Span{r, -1, 8}.Validate(), "negative"},
		{"span negative length", Span{r, 0, -8}.Validate(), "length -8"},
		{"span empty", Span{r, 0, 0}.Validate(), "length 0"},
		{"span past end", Span{r, 100, 29}.Validate(), "ends past"},
		{"span no region", Span{nil, 0, 1}.Validate(), "no region"},
		{"row ok", Row{"k", []Span{{r, 0, 8}}}.Validate(), ""},
		{"row empty key", Row{"", []Span{{r, 0, 8}}}.Validate(), "key is empty"},
		{"row no span", Row{"k", nil}.Validate(), "no span"},
		{"result ok", Result{Status: Ready}.Validate(), ""},
		{"result fault ok", FaultResult(-1, "boom").Validate(), ""},
		{"result pending", Result{}.Validate(), "out of range"},
		{"result out of range", Result{Status: 42}.Validate(), "out of range"},
		{"fault without text", Result{Status: Fault, Code: -1}.Validate(), "must say"},
		{"code on ready", Result{Status: Ready, Code: 3}.Validate(), "only a FAULT or DECLINED"},
		{"code on miss", Result{Status: Miss, Code: 3}.Validate(), "only a FAULT or DECLINED"},
		{"declined with the store's answer", Result{Status: Declined, Code: -28, Text: "write answered ENOSPC (-28)"}.Validate(), ""},
		{"declined without one", Result{Status: Declined}.Validate(), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.want == "" {
				assert.NoError(t, c.err)
				return
			}
			require.Error(t, c.err)
			assert.Contains(t, c.err.Error(), c.want)
		})
	}
}

func TestCapabilitiesZeroValueSupportsNothing(t *testing.T) {
	v := reflect.ValueOf(Capabilities{})
	for i := 0; i < v.NumField(); i++ {
		assert.True(t, v.Field(i).IsZero(), "field %s", v.Type().Field(i).Name)
	}
	// Every field must be a bool or an int bound where 0 means "none":
	// a new capability of another type would need its own default rule.
	for i := 0; i < v.NumField(); i++ {
		k := v.Field(i).Kind()
		assert.Contains(t, []reflect.Kind{reflect.Bool, reflect.Int}, k, v.Type().Field(i).Name)
	}
}

func TestHintIsOpaqueAndImmutable(t *testing.T) {
	src := []byte("node-7")
	h := NewHint(src)
	src[0] = 'X'
	assert.Equal(t, []byte("node-7"), h.Bytes(), "changing the source changed the hint")
	b := h.Bytes()
	b[0] = 'Y'
	assert.Equal(t, []byte("node-7"), h.Bytes(), "changing Bytes' result changed the hint")
	assert.True(t, Hint{}.IsZero())
	assert.False(t, NewHint(nil).IsZero(), "an empty hint is still a hint")
	// Bytes answers nil for the zero Hint alone: a hint of no bytes is
	// still given (tried: dropping NewHint's c = []byte{} makes an empty
	// hint's Bytes nil).
	assert.Nil(t, Hint{}.Bytes())
	for _, b := range [][]byte{nil, {}} {
		got := NewHint(b).Bytes()
		assert.NotNil(t, got, "NewHint(%#v).Bytes()", b)
		assert.Empty(t, got)
	}
}

func TestRejectedErrorIsTheOnlyRejection(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", Reject(RuleRepeatedKey, "rows %d and %d", 0, 1))
	var re *RejectedError
	require.True(t, errors.As(err, &re))
	assert.Equal(t, RuleRepeatedKey, re.Rule)
	assert.True(t, IsRejected(err))
	assert.False(t, IsRejected(errors.New("store error")), "a plain error is not a rejection")
}

func TestStatusNames(t *testing.T) {
	for s := Ready; s <= Cancelled; s++ {
		got, ok := ParseStatus(s.String())
		assert.True(t, ok)
		assert.Equal(t, s, got)
	}
	_, ok := ParseStatus("PENDING")
	assert.False(t, ok, "PENDING is not a result a spec may name")
	// Past the names, a number (tried: < -> <= indexes past the table).
	for _, s := range []Status{Status(len(statusNames)), 200} {
		assert.Equal(t, fmt.Sprintf("Status(%d)", uint8(s)), s.String())
	}
}

// TestAResultPrintsAFaultsCodeAndText: a FAULT prints its code and text,
// what a log line needs to say what went wrong, and so does a DECLINED
// that carries either (the store's answer); every other result prints
// its status alone. (Tried: the DECLINED's Code != 0 || Text != "" as &&
// fails the declines carrying one of the two.)
func TestAResultPrintsAFaultsCodeAndText(t *testing.T) {
	assert.Equal(t, "DECLINED(-28: )", Result{Status: Declined, Code: -28}.String())
	assert.Equal(t, "DECLINED(0: the store is full)", Result{Status: Declined, Text: "the store is full"}.String())
	assert.Equal(t, "FAULT(-706: the object has a lease)", FaultResult(-706, "the object has a %s", "lease").String())
	assert.Equal(t, "READY", Result{Status: Ready, Code: 3, Text: "ignored"}.String())
	assert.Equal(t, "DECLINED(-28: write answered ENOSPC (-28))", Result{Status: Declined, Code: -28, Text: "write answered ENOSPC (-28)"}.String())
	assert.Equal(t, "DECLINED", Result{Status: Declined}.String())
}

// TestAResultIsAnErrorOnlyWhenItIsAFault: Err carries a FAULT's code and
// text on as a *FaultError, and every other status (an answer, not an
// error) is nil. No test of the package called it (tried: r.Status !=
// Fault as == fails here).
func TestAResultIsAnErrorOnlyWhenItIsAFault(t *testing.T) {
	err := FaultResult(-706, "the object has a lease").Err()
	var f *FaultError
	require.ErrorAs(t, err, &f)
	assert.Equal(t, FaultError{Code: -706, Text: "the object has a lease"}, *f)
	assert.EqualError(t, err, "FAULT(-706): the object has a lease")
	for _, s := range []Status{Ready, Miss, NotReady, Declined, Cancelled} {
		assert.NoError(t, Result{Status: s, Code: -28, Text: "an answer"}.Err(), "%v", s)
	}
}

// stubDriver and wrapDriver are drivers for As: wrapDriver reaches the
// driver it wraps through its own As.
type stubDriver struct{ Driver }

type wrapDriver struct {
	Driver
	inner Driver
}

func (w wrapDriver) As(target any) bool { return As(w.inner, target) }

// TestAsFillsOnlyAPointerToTheDriversType: As answers false, without
// panicking, for a nil driver, a target that is not a pointer and a nil
// pointer; it fills a pointer to the driver's own type, also through a
// wrapper's As. (Tried: the first || -> &&, which reaches IsNil of a
// non-pointer or the type of a nil driver, and panics.)
func TestAsFillsOnlyAPointerToTheDriversType(t *testing.T) {
	s := &stubDriver{}
	for _, c := range []struct {
		name   string
		d      Driver
		target func() (any, func() bool) // the target, and whether it holds s
		want   bool
	}{
		{"nil driver", nil, func() (any, func() bool) { var p *stubDriver; return &p, func() bool { return p == s } }, false},
		{"target not a pointer", s, func() (any, func() bool) { return 5, func() bool { return false } }, false},
		{"nil pointer", s, func() (any, func() bool) { return (**stubDriver)(nil), func() bool { return false } }, false},
		{"another type", s, func() (any, func() bool) { var w wrapDriver; return &w, func() bool { return false } }, false},
		{"its own type", s, func() (any, func() bool) { var p *stubDriver; return &p, func() bool { return p == s } }, true},
		{"through a wrapper", wrapDriver{inner: s}, func() (any, func() bool) { var p *stubDriver; return &p, func() bool { return p == s } }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			target, holds := c.target()
			var got bool
			require.NotPanics(t, func() { got = As(c.d, target) })
			assert.Equal(t, c.want, got)
			assert.Equal(t, c.want, holds())
		})
	}
}

func TestKeyStemRefusesBadPrefixes(t *testing.T) {
	for _, p := range []string{"", "/a", "a/", "a//b", "a b", "a/v1/ü"} {
		_, err := KeyStem(p)
		assert.Error(t, err, "prefix %q", p)
	}
	// "." and ".." are path traversal for a store that keeps objects as
	// paths; a segment that merely holds dots is a name.
	for _, p := range []string{".", "..", "kv/.", "kv/..", "../kv", "kv/../x", "./kv"} {
		_, err := KeyStem(p)
		assert.ErrorContains(t, err, "segment", "prefix %q", p)
		_, _, err = ParseKey(p + "/v1/ab")
		assert.Error(t, err, "key under prefix %q", p)
	}
	// A segment of the form of a key version ('v' and digits, each digit
	// at its range's ends too) is refused; one with another byte after the
	// 'v' is a name (tried: isKeyVersion's c > '9' as >= takes "v9" for a
	// name).
	for _, p := range []string{"v0", "v9", "kv/v1", "a/v09/b"} {
		_, err := KeyStem(p)
		assert.ErrorContains(t, err, "the form of a key version", "prefix %q", p)
	}
	for _, p := range []string{"v", "v1a", "va", "V1", "kv/vv1"} {
		_, err := KeyStem(p)
		assert.NoError(t, err, "prefix %q", p)
	}
	for _, p := range []string{"...", ".a", "a.", "kv/.hidden", "kv/..x"} {
		_, err := KeyStem(p)
		assert.NoError(t, err, "prefix %q", p)
	}
	stem, err := KeyStem("kv/model-a")
	require.NoError(t, err)
	k, err := stem.Key([]byte{0xab, 0x01})
	require.NoError(t, err)
	assert.Equal(t, "kv/model-a/v1/ab01", k)
	_, err = stem.Key(nil)
	assert.ErrorContains(t, err, "name is empty")
	_, err = Stem{}.Key([]byte("x"))
	assert.Error(t, err)
}

// TestKeyStemLeavesRoomForAName: a prefix is refused once no key under it
// (prefix/v1/ and two hex digits) fits MaxKeyBytes, and admitted while the
// shortest key fits exactly (tried: the bound off by one either way fails).
func TestKeyStemLeavesRoomForAName(t *testing.T) {
	room := MaxKeyBytes - len("/"+KeyVersion+"/") - 2
	stem, err := KeyStem(strings.Repeat("a", room))
	require.NoError(t, err)
	k, err := stem.Key([]byte{1})
	require.NoError(t, err)
	assert.Len(t, k, MaxKeyBytes)
	_, err = KeyStem(strings.Repeat("a", room+1))
	assert.ErrorContains(t, err, "MaxKeyBytes")
}

// A key is built in one allocation, and owns its bytes: the name it was
// built from may be reused at once.
func TestStemKeyAllocatesOnceAndOwnsItsBytes(t *testing.T) {
	stem, err := KeyStem("kv/model-a")
	require.NoError(t, err)
	name := []byte{0x00, 0x7f, 0xff, 'r'}
	k, err := stem.Key(name)
	require.NoError(t, err)
	assert.Equal(t, "kv/model-a/v1/007fff72", k)
	name[0] = 0xaa
	k2, err := stem.Key(name)
	require.NoError(t, err)
	assert.Equal(t, "kv/model-a/v1/007fff72", k, "a key must not alias its name")
	assert.Equal(t, "kv/model-a/v1/aa7fff72", k2)
	long := bytes.Repeat([]byte{0x5a}, 32) // a hash, say: past any stack buffer
	for _, n := range [][]byte{name, long} {
		allocs := testing.AllocsPerRun(100, func() { k, _ = stem.Key(n) })
		assert.Equal(t, 1.0, allocs, "allocations per key of a %d-byte name", len(n))
	}
}

// Property: distinct (prefix, name) pairs never encode alike, and every key
// parses back to its pair.
func TestDistinctNamesNeverEncodeAlike(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	prefixes := []string{"a", "a/b", "a/v1x", "v1a", "kv/model-a", "a.b", "a-b", "V1"}
	seen := map[string][2]string{}
	for i := 0; i < 20000; i++ {
		p := prefixes[rng.Intn(len(prefixes))]
		name := make([]byte, 1+rng.Intn(6))
		rng.Read(name)
		if rng.Intn(4) == 0 {
			name = []byte("/v1/" + string(name))
		}
		k, err := Key(p, name)
		require.NoError(t, err)
		pair := [2]string{p, string(name)}
		if prev, ok := seen[k]; ok && prev != pair {
			t.Fatalf("%q and %q both encode as %q", prev, pair, k)
		}
		seen[k] = pair
		gp, gn, err := ParseKey(k)
		require.NoError(t, err)
		require.Equal(t, p, gp)
		require.True(t, bytes.Equal(name, gn))
	}
}

func FuzzParseKey(f *testing.F) {
	f.Add("kv/v1/00ff")
	f.Add("a/v1/v1/ab")
	f.Add("/v1/")
	f.Fuzz(func(t *testing.T, key string) {
		p, name, err := ParseKey(key)
		if err != nil {
			return
		}
		back, err := Key(p, name)
		if err != nil || back != key {
			t.Fatalf("ParseKey(%q) = %q, %x; Key gives %q, %v", key, p, name, back, err)
		}
	})
}

// TestKeyStemTakesEveryAllowedCharacter: the ends of each allowed range
// are allowed, and the characters just past them are not.
func TestKeyStemTakesEveryAllowedCharacter(t *testing.T) {
	_, err := KeyStem("az/AZ/09/_.-")
	assert.NoError(t, err)
	for _, bad := range []string{"a{", "A[", "0:", "a`", "A@", "0/", "a b"} {
		_, err := KeyStem(bad)
		if bad == "0/" {
			assert.Error(t, err, "an empty segment")
			continue
		}
		assert.Error(t, err, "prefix %q", bad)
	}
}

// TestSpanBytesRefusesDeviceMemory: a device span has no host bytes.
func TestSpanBytesRefusesDeviceMemory(t *testing.T) {
	r := &Region{Name: "gpu", Kind: Device, Layout: Layout{SlotBytes: 8, Slots: 1}, Mem: make([]byte, 8)}
	assert.Panics(t, func() { _ = r.Slot(0).Bytes() })
}

// BenchmarkStemKey builds the key of a short name and of a 32-byte hash.
func BenchmarkStemKey(b *testing.B) {
	stem, err := KeyStem("kvblob")
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{8, 32} {
		name := bytes.Repeat([]byte{0xa5}, n)
		b.Run(fmt.Sprint("name=", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := stem.Key(name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestTenantPrefixesNeverNest: a prefix whose segment has a key version's
// form ("v1", "v2", "v10") is refused, naming it; of every two distinct
// prefixes KeyStem takes, neither's Pattern (the glob a Redis ACL or an
// S3 policy grants a tenant) matches a key of the other, even when one
// prefix starts the other ("kv", "kv/model-a"), and each matches its own
// keys. The prefixes are every path of up to three segments over a few
// names, key versions among them (tried: taking "v1" as a segment lets
// "kv"'s pattern match "kv/v1"'s keys).
func TestTenantPrefixesNeverNest(t *testing.T) {
	for _, p := range []string{"v1", "kv/v1", "kv/v1/model-a", "v2/kv", "kv/v10"} {
		_, err := KeyStem(p)
		assert.ErrorContains(t, err, "the form of a key version", "prefix %q", p)
	}
	for _, p := range []string{"v", "kv/v", "kv/v1a", "kv/V1", "kv/vv1", "kv/1"} {
		_, err := KeyStem(p)
		assert.NoError(t, err, "prefix %q", p)
	}
	assert.Equal(t, "kv/model-a/v1/*", mustStem(t, "kv/model-a").Pattern())
	assert.Empty(t, Stem{}.Pattern(), "the zero Stem matches nothing")

	segs := []string{"kv", "model-a", "v1", "v2", "a"}
	var prefixes []string
	var walk func(p string, depth int)
	walk = func(p string, depth int) {
		if depth == 3 {
			return
		}
		for _, s := range segs {
			q := s
			if p != "" {
				q = p + "/" + s
			}
			prefixes = append(prefixes, q)
			walk(q, depth+1)
		}
	}
	walk("", 0)
	// matches is a Redis ACL key pattern's (and an S3 policy resource's)
	// match of a pattern ending in its only '*'.
	matches := func(pattern, key string) bool {
		return strings.HasPrefix(key, strings.TrimSuffix(pattern, "*"))
	}
	type tenant struct {
		prefix, pattern string
		keys            []string
	}
	var tenants []tenant
	for _, p := range prefixes {
		stem, err := KeyStem(p)
		if err != nil {
			continue
		}
		tn := tenant{prefix: p, pattern: stem.Pattern()}
		for _, name := range [][]byte{{0}, {0xab, 0xcd}, []byte("/v1/x")} {
			k, err := stem.Key(name)
			require.NoError(t, err)
			tn.keys = append(tn.keys, k)
		}
		tenants = append(tenants, tn)
	}
	for _, a := range tenants {
		for _, b := range tenants {
			for _, k := range b.keys {
				if got := matches(a.pattern, k); got != (a.prefix == b.prefix) {
					t.Fatalf("tenant %q's pattern %q matches key %q of tenant %q: %v", a.prefix, a.pattern, k, b.prefix, got)
				}
			}
		}
	}
	assert.Equal(t, 3+9+27, len(tenants), "every path of up to three of the three names that are no key version")
}

func mustStem(t *testing.T, prefix string) Stem {
	t.Helper()
	s, err := KeyStem(prefix)
	require.NoError(t, err)
	return s
}

package s3_test

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/runtime/driver"
	"github.com/kvblob/kvblob/stores/s3"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
)

// docPolicy is the S3 policy docs/security.md gives a tenant: its one
// JSON block, for tenantA in BUCKET.
func docPolicy(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("../../docs/security.md")
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(b), "```json\n")
	require.True(t, ok, "docs/security.md has no json block")
	block, _, ok := strings.Cut(after, "```")
	require.True(t, ok)
	var p map[string]any
	require.NoError(t, json.Unmarshal([]byte(block), &p))
	return p
}

// TestNestedTenantPrefixesStayApart: tenants "kv" and "kv/model-a", one
// prefix the start of the other, share a bucket on versitygw, each a user
// of its own granted docs/security.md's policy (for its prefix, with the
// user as the statement's principal, in the bucket's policy). Each puts
// and gets its own rows; neither can read or overwrite the other's: a get
// or a put of the other's key is a FAULT, the destination untouched, and
// the row is still its owner's. With the resource BUCKET/PREFIX/* (the
// prefix alone), tenant "kv" read and overwrote "kv/model-a"'s rows (this
// test failed so).
func TestNestedTenantPrefixesStayApart(t *testing.T) {
	gw.Need(t)
	e, err := s3kit.SetupIAM()
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.Server.LoopbackOnly())
	bucket := e.NewBucket(t)

	tenants := []struct{ user, secret, prefix string }{
		{"tenant-kv", "secret-kv-" + fmt.Sprint(time.Now().UnixNano()), "kv"},
		{"tenant-kv-model-a", "secret-kvm-" + fmt.Sprint(time.Now().UnixNano()), "kv/model-a"},
	}
	var statements []any
	for _, tn := range tenants {
		require.NoError(t, e.CreateUser(tn.user, tn.secret))
		p := docPolicy(t)
		text, err := json.Marshal(p["Statement"])
		require.NoError(t, err)
		stem, err := driver.KeyStem(tn.prefix)
		require.NoError(t, err)
		require.Contains(t, string(text), `"arn:aws:s3:::BUCKET/tenantA/`)
		text = []byte(strings.ReplaceAll(string(text), "arn:aws:s3:::BUCKET/tenantA/", "arn:aws:s3:::"+bucket+"/"+tn.prefix+"/"))
		require.Contains(t, string(text), "arn:aws:s3:::"+bucket+"/"+stem.Pattern(), "the doc's resource is the tenant's pattern")
		var st []map[string]any
		require.NoError(t, json.Unmarshal(text, &st))
		for _, s := range st {
			s["Principal"] = tn.user
			statements = append(statements, s)
		}
	}
	policy, err := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": statements})
	require.NoError(t, err)
	require.NoError(t, e.PutBucketPolicy(bucket, string(policy)))

	type open struct {
		f    *storekit.Fx
		stem driver.Stem
	}
	var ts []open
	for _, tn := range tenants {
		opt := e.Options(bucket, nil)
		opt.AccessKey, opt.SecretKey = tn.user, tn.secret
		d, err := s3.Open(opt)
		require.NoError(t, err)
		stem, err := driver.KeyStem(tn.prefix)
		require.NoError(t, err)
		ts = append(ts, open{storekit.NewFx(t, d, 10*time.Second), stem})
	}
	for i, owner := range ts {
		other := ts[1-i]
		k, err := owner.stem.Key([]byte(t.Name()))
		require.NoError(t, err)
		res := owner.f.Put(owner.f.Row(k, 0, byte(i+1)))
		require.Equal(t, driver.Ready, res[0].Status, "%s puts its own row: %v", tenants[i].prefix, res[0])
		res = owner.f.Get(owner.f.Row(k, 1, storekit.Dest))
		require.Equal(t, driver.Ready, res[0].Status, "%s gets its own row: %v", tenants[i].prefix, res[0])

		who := fmt.Sprintf("%s on %s's key %s", tenants[1-i].prefix, tenants[i].prefix, k)
		dst := other.f.Row(k, 2, storekit.Dest)
		res = other.f.Get(dst)
		assert.Equal(t, driver.Fault, res[0].Status, "%s: get: %v", who, res[0])
		storekit.Untouched(t, dst)
		res = other.f.Put(other.f.Row(k, 0, 0x77))
		assert.Equal(t, driver.Fault, res[0].Status, "%s: put: %v", who, res[0])
		t.Logf("%s: put answered %v", who, res[0])

		res = owner.f.Get(owner.f.Row(k, 1, storekit.Dest))
		require.Equal(t, driver.Ready, res[0].Status, "%s's row after %s tried it: %v", tenants[i].prefix, tenants[1-i].prefix, res[0])
		assert.Equal(t, owner.f.Row(k, 3, byte(i+1)).Spans[0].Bytes(), owner.f.Region.Slot(1).Bytes(), "%s's row changed", tenants[i].prefix)
	}
}

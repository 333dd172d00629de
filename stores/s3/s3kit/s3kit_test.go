package s3kit_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvblob/kvblob/conformance"
	"github.com/kvblob/kvblob/conformance/storekit"
	"github.com/kvblob/kvblob/generated/s3/s3cases"
	"github.com/kvblob/kvblob/stores/s3/s3kit"
	"github.com/kvblob/kvblob/stores/trailer"
)

// gw is the package's versitygw on loopback, with its internal IAM so that
// CreateUser can be tried; a test takes it with Need.
var gw = storekit.Own(s3kit.Available, s3kit.SetupIAM, (*s3kit.Env).Close)

func TestMain(m *testing.M) { storekit.MainOwning(m, gw) }

// errCode is the S3 error code of err ("" for none).
func errCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// TestFetchReadsWhatPlantStored: Fetch answers the object Plant stored,
// byte for byte, and after Remove the gateway's NoSuchKey. (Tried: Fetch
// not reading the body answers nothing.)
func TestFetchReadsWhatPlantStored(t *testing.T) {
	k := s3kit.Open(t, gw.Need(t))
	obj := bytes.Repeat([]byte("plant"), 1000)
	require.NoError(t, k.Plant("p/v1/00", obj))
	got, err := k.Fetch("p/v1/00")
	require.NoError(t, err)
	assert.Equal(t, obj, got)
	require.NoError(t, k.Remove("p/v1/00"))
	_, err = k.Fetch("p/v1/00")
	assert.Equal(t, "NoSuchKey", errCode(err), "a fetch after Remove: %v", err)
}

// TestStageLeavesWhatEachCaseFinds: Stage leaves under the key what the
// case's answer finds there on the gateway itself, and arms the seam only
// for an answer no server gives on cue: a put's 412 over another length
// finds a row of the key with half the bytes, over the row's own bytes
// the whole row (its existence question answers yes), and a 412 whose
// object vanished (no server does that on cue) nothing, through one seam
// answer; a get's NoSuchKey finds no object, and its NoSuchBucket no
// bucket, neither through the seam. (Tried: Stage returning before it
// staged anything not planted; the 412 of another length also taken for
// the row's own planted half a row; every answer but OK and the 412s
// taken as the vanished 412 left the get's object and armed the seam.)
func TestStageLeavesWhatEachCaseFinds(t *testing.T) {
	planted := conformance.Filled(conformance.RowBytes, 5) // storekit.PlantCase's
	for _, tc := range []struct {
		id string
		// want is the object under the key after Stage (nil: none), and
		// code the error a fetch of it answers.
		want  func(key string) []byte
		code  string
		armed int
	}{
		{id: "put/PRECONDITION_FAILED/other", want: func(key string) []byte { return trailer.Encode(key, planted[:len(planted)/2]) }},
		{id: "put/PRECONDITION_FAILED/exists", want: func(key string) []byte {
			return trailer.Encode(key, conformance.Filled(conformance.RowBytes, conformance.CaseSeed))
		}},
		{id: "put/PRECONDITION_FAILED/absent", code: "NoSuchKey", armed: 1},
		{id: "get/NO_SUCH_KEY", code: "NoSuchKey"},
		{id: "get/NO_SUCH_BUCKET", code: "NoSuchBucket"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			k := s3kit.Open(t, gw.Need(t))
			h := &conformance.Harness{T: t, Ctx: context.Background(), D: k}
			const key = "p/v1/0a"
			require.NoError(t, s3kit.Stage(h, storekit.CaseOf(s3cases.S3V1109(), tc.id), key))
			got, err := k.Fetch(key)
			if tc.want != nil {
				require.NoError(t, err)
				assert.Equal(t, tc.want(key), got, "the object under the key")
			} else {
				assert.Equal(t, tc.code, errCode(err), "a fetch of the key: %v (%d bytes)", err, len(got))
			}
			assert.Equal(t, tc.armed, k.Seam.Armed(), "answers armed in the seam")
		})
	}
}

// TestSDKChecksPassOnTheGateway: every check of SDKChecks passes against
// the kit's versitygw, which gives what the spec relies on. (Tried: the
// absent bucket's GET dropped fails the check of NoSuchBucket.)
func TestSDKChecksPassOnTheGateway(t *testing.T) {
	e := gw.Need(t)
	for _, c := range s3kit.SDKChecks() {
		t.Run(c.Name, func(t *testing.T) {
			c.Run(&conformance.Harness{T: t, Ctx: context.Background(), D: s3kit.Open(t, e)})
		})
	}
}

// TestCreateUserAddsAUserTheGatewayKnows: a user CreateUser adds signs
// requests the gateway takes (a ListBuckets answers, with no bucket of its
// own), where keys it never added are refused. (Tried: CreateUser
// returning before its request fails the new user's list.)
func TestCreateUserAddsAUserTheGatewayKnows(t *testing.T) {
	e := gw.Need(t)
	list := func(access, secret string) (*awss3.ListBucketsOutput, error) {
		tr := e.Transport()
		defer tr.CloseIdleConnections()
		c := awss3.New(awss3.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(e.Endpoint), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(access, secret, ""), HTTPClient: &http.Client{Transport: tr},
		})
		cx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return c.ListBuckets(cx, &awss3.ListBucketsInput{})
	}
	_, err := list("kvblobnobody", "never-added-secret")
	require.Error(t, err, "keys the gateway never added")
	require.NoError(t, e.CreateUser("kvblobtenant", "tenant-secret-0123456789"))
	out, err := list("kvblobtenant", "tenant-secret-0123456789")
	require.NoError(t, err, "the user CreateUser added")
	assert.Empty(t, out.Buckets, "a new user owns no bucket")
}

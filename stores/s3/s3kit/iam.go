package s3kit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
)

// CreateUser adds a user of role "user" with keys access and secret to a
// gateway started by SetupIAM, through versitygw's admin API (PATCH
// /create-user, signed as the root user, as 'versitygw admin create-user'
// sends it). A new user owns no bucket: what it may touch is what a bucket
// policy grants it.
func (e *Env) CreateUser(access, secret string) error {
	type account struct {
		XMLName                    xml.Name `xml:"Account"`
		Access, Secret, Role       string
		UserID, GroupID, ProjectID int
	}
	body, err := xml.Marshal(account{Access: access, Secret: secret, Role: "user"})
	if err != nil {
		return err
	}
	cx, cancel := ctx()
	defer cancel()
	req, err := http.NewRequestWithContext(cx, http.MethodPatch, e.Endpoint+"/create-user", bytes.NewReader(body))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", payload)
	if err := v4.NewSigner().SignHTTP(cx, aws.Credentials{AccessKeyID: e.AccessKey, SecretAccessKey: e.SecretKey}, req, payload, "s3", "us-east-1", time.Now()); err != nil {
		return err
	}
	tr := e.Transport()
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("s3kit: create user %q: %w", access, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("s3kit: create user %q: %s: %s", access, resp.Status, b)
	}
	return nil
}

// PutBucketPolicy sets bucket's policy, as the root user.
func (e *Env) PutBucketPolicy(bucket, policy string) error {
	c, done := e.rootClient()
	defer done()
	cx, cancel := ctx()
	defer cancel()
	if _, err := c.PutBucketPolicy(cx, &awss3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(policy)}); err != nil {
		return fmt.Errorf("s3kit: put bucket policy on %s: %w", bucket, err)
	}
	return nil
}

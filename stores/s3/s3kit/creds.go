package s3kit

import "github.com/aws/aws-sdk-go-v2/credentials"

func staticCreds(e *Env) credentials.StaticCredentialsProvider {
	return credentials.NewStaticCredentialsProvider(e.AccessKey, e.SecretKey, "")
}

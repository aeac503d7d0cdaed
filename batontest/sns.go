package batontest

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
)

// SNSClient returns an SNS client of aws-sdk-go-v2 for the server, as
// Client returns an SQS one: the same endpoint, region, credentials and no
// retries. The server serves SNS over stores that keep topics (the memory
// and embedded stores).
func (s *Server) SNSClient() *awssns.Client {
	return s.snsClient(s.client.Options().Credentials)
}

// SNSClientFor returns an SNS client like SNSClient that signs with the
// given key, at the server clock's time.
func (s *Server) SNSClientFor(accessKeyID, secretAccessKey string) *awssns.Client {
	return s.snsClient(credentials.NewStaticCredentialsProvider(accessKeyID, secretAccessKey, ""))
}

func (s *Server) snsClient(creds aws.CredentialsProvider) *awssns.Client {
	return awssns.New(awssns.Options{
		BaseEndpoint:     aws.String(s.url),
		Region:           Region,
		Credentials:      creds,
		RetryMaxAttempts: 1,
		HTTPSignerV4:     clockSigner{signer: v4.NewSigner(), clock: s.clock},
	})
}

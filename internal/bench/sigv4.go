package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Credentials are the AWS access key a run signs with.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	// SessionToken, for temporary credentials, is sent as
	// X-Amz-Security-Token and signed.
	SessionToken string
}

const (
	targetPrefix = "AmazonSQS."
	// dummyAccessKeyID names the key of an unsigned run's placeholder
	// Authorization header.
	dummyAccessKeyID = "baton"
	// dummySignedHeaders is the SignedHeaders list of that placeholder.
	dummySignedHeaders = "content-type;host;x-amz-date;x-amz-target"
)

// The Content-Type of the JSON 1.0 (SQS) and Query (SNS) requests.
var (
	jsonContentType  = []string{"application/x-amz-json-1.0"}
	queryContentType = []string{"application/x-www-form-urlencoded; charset=utf-8"}
)

// signer computes AWS Signature Version 4 Authorization headers for the
// JSON 1.0 POSTs a run sends, with aws-sdk-go-v2's signer: content-type,
// host, x-amz-date, x-amz-target (and x-amz-security-token) are signed.
// A request's signature is reused within its second (Client.signed), so
// the signer runs about once a second per request. With no credentials it
// produces a well-formed header with a signature of zeros, which a server
// without authentication ignores, as the AWS CLI's requests carry one.
type signer struct {
	creds    *Credentials
	awsCreds aws.Credentials
	region   string
	endpoint *url.URL
	sdk      *v4.Signer
}

func newSigner(creds *Credentials, region string, endpoint *url.URL) *signer {
	s := &signer{creds: creds, region: region, endpoint: endpoint, sdk: v4.NewSigner()}
	if creds != nil {
		s.awsCreds = aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: creds.SessionToken}
	}
	return s
}

// sign returns the X-Amz-Date and Authorization values of a request sent at
// t with the given X-Amz-Target and hex SHA-256 of its body. A request
// without a target is an SNS Query request, signed for the service sns (the
// server tells SNS from SQS by it).
func (s *signer) sign(t time.Time, target []string, payloadHash string) (amzDate, authorization string, err error) {
	t = t.UTC()
	service, header := "sqs", http.Header{"Content-Type": jsonContentType, "X-Amz-Target": target}
	if target == nil {
		service, header = "sns", http.Header{"Content-Type": queryContentType}
	}
	if s.creds == nil {
		amzDate = t.Format("20060102T150405Z")
		scope := amzDate[:8] + "/" + s.region + "/" + service + "/aws4_request"
		signed := dummySignedHeaders
		if target == nil {
			signed = strings.TrimSuffix(signed, ";x-amz-target")
		}
		return amzDate, "AWS4-HMAC-SHA256 Credential=" + dummyAccessKeyID + "/" + scope +
			", SignedHeaders=" + signed + ", Signature=" + strings.Repeat("0", 64), nil
	}
	// The request as the signer needs to see it: the headers Caller sends
	// that are signed. Content-Length is left out, as ContentLength is 0.
	// The signer writes to the URL, which Caller's requests share: it gets
	// a copy.
	u := *s.endpoint
	req := &http.Request{
		Method: http.MethodPost,
		URL:    &u,
		Host:   u.Host,
		Header: header,
	}
	if err := s.sdk.SignHTTP(context.Background(), s.awsCreds, req, payloadHash, service, s.region, t); err != nil {
		return "", "", err
	}
	return req.Header.Get("X-Amz-Date"), req.Header.Get("Authorization"), nil
}

// payloadHash is the hex SHA-256 of a body.
func payloadHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

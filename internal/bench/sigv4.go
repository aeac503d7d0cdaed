package bench

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"time"
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
	amzDateFormat = "20060102T150405Z"
	contentType   = "application/x-amz-json-1.0"
	targetPrefix  = "AmazonSQS."
	// dummyAccessKeyID names the key of an unsigned run's placeholder
	// Authorization header.
	dummyAccessKeyID = "baton"
)

// signer computes AWS Signature Version 4 Authorization headers for the
// JSON 1.0 POSTs a run sends: content-type, host, x-amz-date, x-amz-target
// (and x-amz-security-token) are signed. Everything but the date and the
// payload is fixed for a run, so the canonical request's constant parts and
// the day's signing key are computed once. With no credentials it produces
// a well-formed header with a signature of zeros, which a server without
// authentication ignores, as the AWS CLI's requests carry one.
type signer struct {
	creds  *Credentials
	region string
	host   string
	// uri is the canonical URI of the endpoint's (escaped) path.
	uri string
	// signedHeaders is the SignedHeaders list.
	signedHeaders string

	mu     sync.Mutex
	keyDay string
	key    []byte
}

func newSigner(creds *Credentials, region, host, escapedPath string) *signer {
	s := &signer{creds: creds, region: region, host: host, uri: canonicalURI(escapedPath)}
	s.signedHeaders = "content-type;host;x-amz-date;x-amz-target"
	if creds != nil && creds.SessionToken != "" {
		s.signedHeaders = "content-type;host;x-amz-date;x-amz-security-token;x-amz-target"
	}
	return s
}

// sign returns the X-Amz-Date and Authorization values of a request sent at
// t with the given X-Amz-Target and hex SHA-256 of its body.
func (s *signer) sign(t time.Time, target, payloadHash string) (amzDate, authorization string) {
	t = t.UTC()
	amzDate = t.Format(amzDateFormat)
	day := amzDate[:8]
	scope := day + "/" + s.region + "/sqs/aws4_request"
	if s.creds == nil {
		return amzDate, "AWS4-HMAC-SHA256 Credential=" + dummyAccessKeyID + "/" + scope +
			", SignedHeaders=" + s.signedHeaders + ", Signature=" + strings.Repeat("0", 64)
	}
	var b strings.Builder
	b.Grow(256 + len(s.host) + len(target) + len(s.creds.SessionToken))
	b.WriteString("POST\n")
	b.WriteString(s.uri)
	b.WriteString("\n\ncontent-type:" + contentType + "\nhost:")
	b.WriteString(s.host)
	b.WriteString("\nx-amz-date:")
	b.WriteString(amzDate)
	if s.creds.SessionToken != "" {
		b.WriteString("\nx-amz-security-token:")
		b.WriteString(s.creds.SessionToken)
	}
	b.WriteString("\nx-amz-target:")
	b.WriteString(target)
	b.WriteString("\n\n")
	b.WriteString(s.signedHeaders)
	b.WriteByte('\n')
	b.WriteString(payloadHash)
	canonical := sha256.Sum256([]byte(b.String()))
	sts := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(canonical[:])
	sig := hmacSHA256(s.signingKey(day), sts)
	return amzDate, "AWS4-HMAC-SHA256 Credential=" + s.creds.AccessKeyID + "/" + scope +
		", SignedHeaders=" + s.signedHeaders + ", Signature=" + hex.EncodeToString(sig)
}

// signingKey derives (once a day) HMAC("AWS4"+secret, day, region, "sqs",
// "aws4_request").
func (s *signer) signingKey(day string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.keyDay != day {
		k := hmacSHA256([]byte("AWS4"+s.creds.SecretAccessKey), day)
		k = hmacSHA256(k, s.region)
		k = hmacSHA256(k, "sqs")
		s.key, s.keyDay = hmacSHA256(k, "aws4_request"), day
	}
	return s.key
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// payloadHash is the hex SHA-256 of a body.
func payloadHash(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// canonicalURI encodes each segment of the path as sent (escapedPath) once
// more, as SigV4 does for every service but S3; an empty path is "/".
func canonicalURI(escapedPath string) string {
	if escapedPath == "" {
		return "/"
	}
	segs := strings.Split(escapedPath, "/")
	for i, s := range segs {
		segs[i] = uriEncode(s)
	}
	return strings.Join(segs, "/")
}

// uriEncode percent-encodes every byte but the unreserved characters of RFC
// 3986, in upper-case hex.
func uriEncode(s string) string {
	const hexd = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexd[c>>4])
		b.WriteByte(hexd[c&15])
	}
	return b.String()
}

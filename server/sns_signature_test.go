package server_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

// envelopeFields reads an envelope's members.
func envelopeFields(tb testing.TB, m sqstypes.Message) map[string]any {
	tb.Helper()
	var f map[string]any
	if err := json.Unmarshal([]byte(*m.Body), &f); err != nil {
		tb.Fatalf("envelope is not JSON: %v: %s", err, *m.Body)
	}
	return f
}

func signatureOf(tb testing.TB, m sqstypes.Message) string {
	tb.Helper()
	s, _ := envelopeFields(tb, m)["Signature"].(string)
	return s
}

var certNameRE = regexp.MustCompile(`^https?://[^/]+/(SimpleNotificationService-[0-9a-f]{32}\.pem)$`)

// certName is the file name of an envelope's SigningCertURL, as AWS names
// its certificates.
func certName(tb testing.TB, m sqstypes.Message) string {
	tb.Helper()
	u, _ := envelopeFields(tb, m)["SigningCertURL"].(string)
	sm := certNameRE.FindStringSubmatch(u)
	if sm == nil {
		tb.Fatalf("SigningCertURL %q is not <server>/SimpleNotificationService-<32 hex>.pem", u)
	}
	return sm[1]
}

// certNameOf is certName of a message's body.
func certNameOf(tb testing.TB, body string) string {
	tb.Helper()
	sm := certNameRE.FindStringSubmatch(fields(tb, body)["SigningCertURL"])
	if sm == nil {
		tb.Fatalf("SigningCertURL of %s is not <server>/SimpleNotificationService-<32 hex>.pem", body)
	}
	return sm[1]
}

// verifySignature checks an envelope's signature as a subscriber does (the
// SNS Developer Guide's steps): the certificate fetched from
// SigningCertURL, the string to sign built from the members in their
// order, RSA PKCS #1 v1.5 over SHA1 (SignatureVersion 1) or SHA256 (2).
func verifySignature(tb testing.TB, m sqstypes.Message) {
	tb.Helper()
	verifySignatureAt(tb, m, "")
}

// verifySignatureAt is verifySignature with the certificate fetched from
// the server at base (one restarted on another port) if base is set.
func verifySignatureAt(tb testing.TB, m sqstypes.Message, base string) {
	tb.Helper()
	certURL := ""
	if base != "" {
		certURL = base + "/" + certName(tb, m)
	}
	verifyBody(tb, *m.Body, certURL)
}

// signedFields are the members a message's signature covers, by its Type,
// in the order of the string to sign.
var signedFields = map[string][]string{
	"Notification":             {"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"},
	"SubscriptionConfirmation": {"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"},
	"UnsubscribeConfirmation":  {"Message", "MessageId", "SubscribeURL", "Timestamp", "Token", "TopicArn", "Type"},
}

// verifyBody is verifySignature of a message's body (an HTTP/S endpoint's
// too), the certificate fetched from certURL if set, else from its
// SigningCertURL.
func verifyBody(tb testing.TB, body, certURL string) {
	tb.Helper()
	var f map[string]any
	if err := json.Unmarshal([]byte(body), &f); err != nil {
		tb.Fatalf("message is not JSON: %v: %s", err, body)
	}
	if certURL == "" {
		certURL, _ = f["SigningCertURL"].(string)
	}
	resp, err := http.Get(certURL)
	if err != nil {
		tb.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	block, _ := pem.Decode(b)
	if resp.StatusCode != 200 || block == nil {
		tb.Fatalf("GET %s: %d %q", certURL, resp.StatusCode, b)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		tb.Fatal(err)
	}
	var sts strings.Builder
	typ, _ := f["Type"].(string)
	if signedFields[typ] == nil {
		tb.Fatalf("Type %q", typ)
	}
	for _, k := range signedFields[typ] {
		if v, ok := f[k].(string); ok {
			sts.WriteString(k + "\n" + v + "\n")
		}
	}
	sig, err := base64.StdEncoding.DecodeString(f["Signature"].(string))
	if err != nil {
		tb.Fatal(err)
	}
	var h crypto.Hash
	var digest []byte
	switch f["SignatureVersion"] {
	case "1":
		sum := sha1.Sum([]byte(sts.String()))
		h, digest = crypto.SHA1, sum[:]
	case "2":
		sum := sha256.Sum256([]byte(sts.String()))
		h, digest = crypto.SHA256, sum[:]
	default:
		tb.Fatalf("SignatureVersion %v", f["SignatureVersion"])
	}
	if err := rsa.VerifyPKCS1v15(cert.PublicKey.(*rsa.PublicKey), h, digest, sig); err != nil {
		tb.Errorf("signature does not verify: %v", err)
	}
}

// TestSNSSignatureVersion2: a topic set to SignatureVersion 2 signs with
// SHA256, and the signature verifies; a tampered message does not; the
// certificate's URL with another name is 404.
func TestSNSSignatureVersion2(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "v2")
	if _, err := c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(topic),
		AttributeName: aws.String("SignatureVersion"), AttributeValue: aws.String("2")}); err != nil {
		t.Fatal(err)
	}
	qURL := srv.MustCreateQueue(t, "v2q", nil)
	mustSubscribe(t, c, topic, snsQueueARN("v2q"), nil)
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("signed"), Subject: aws.String("s")}); err != nil {
		t.Fatal(err)
	}
	m := receiveCopy(t, srv.Client, qURL)
	if v := envelopeFields(t, m)["SignatureVersion"]; v != "2" {
		t.Fatalf("SignatureVersion = %v, want 2", v)
	}
	verifySignature(t, m)
	tampered := strings.Replace(*m.Body, `"Message" : "signed"`, `"Message" : "signeD"`, 1)
	m.Body = &tampered
	bad := &recorder{}
	verifySignature(bad, m)
	if !bad.failed {
		t.Error("a tampered message verified")
	}
	resp, err := http.Get(srv.URL + "/SimpleNotificationService-00000000000000000000000000000000.pem")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("another certificate name: %d, want 404", resp.StatusCode)
	}
}

// recorder is a testing.TB whose Errorf records a failure instead of
// failing: verifySignature reports a signature that does not verify with
// Errorf. (Its other methods are the embedded nil TB's: calling them
// panics, failing the test.)
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }

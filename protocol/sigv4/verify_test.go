package sigv4_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/baton-sqs/baton"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// now is the verifier's fake time in these tests.
var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

var (
	alice = sigv4.Credential{AccessKeyID: "AKIDALICE", SecretAccessKey: "alice/secret+KEY", Account: "111111111111"}
	bob   = sigv4.Credential{AccessKeyID: "AKIDBOB", SecretAccessKey: "bob-secret", Account: "222222222222"}
)

// verifyServer runs a Verifier behind a real HTTP server on 127.0.0.1, so
// requests arrive as Go's server shapes them (Host moved out of the header
// map, the path as sent). It answers 200 with the signer's account, or the
// error's status with "code\nmessage".
func verifyServer(t *testing.T) (*httptest.Server, *clock.Fake) {
	t.Helper()
	clock := clock.NewFake(now)
	v, err := sigv4.NewVerifier(clock, []sigv4.Credential{alice, bob})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		cred, err := v.Verify(r, body)
		if err != nil {
			e := baton.AsError(err)
			w.WriteHeader(e.Code.Spec().Status)
			fmt.Fprintf(w, "%s\n%s", e.Code.Spec().QueryCode, e.Message)
			return
		}
		io.WriteString(w, cred.Account)
	}))
	t.Cleanup(srv.Close)
	return srv, clock
}

// result is what verifyServer answered.
type result struct {
	status  int
	code    string // empty on success
	message string // the account on success
}

func send(t *testing.T, r *http.Request) result {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusOK {
		return result{status: 200, message: string(b)}
	}
	code, msg, _ := strings.Cut(string(b), "\n")
	return result{status: resp.StatusCode, code: code, message: msg}
}

func hashOf(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// request builds a request to the server; headers are set before signing.
func request(t *testing.T, srv *httptest.Server, method, path, body string, headers map[string]string) *http.Request {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r, err := http.NewRequest(method, srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return r
}

// sign signs r in the Authorization header as aws-sdk-go-v2 does.
func sign(t *testing.T, r *http.Request, c sigv4.Credential, body string, at time.Time) {
	t.Helper()
	err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey},
		r, hashOf([]byte(body)), "sqs", "eu-west-1", at)
	if err != nil {
		t.Fatal(err)
	}
}

const jsonBody = `{"QueueUrl":"http://127.0.0.1/111111111111/orders","MessageBody":"hello ünïcode"}`

var jsonHeaders = map[string]string{
	"Content-Type": "application/x-amz-json-1.0",
	"X-Amz-Target": "AmazonSQS.SendMessage",
}

func TestVerifyAcceptsSDKSignatures(t *testing.T) {
	t.Parallel()
	srv, _ := verifyServer(t)
	form := url.Values{"Action": {"SendMessage"}, "MessageBody": {"a b+c&d=é~*"}, "Version": {"2012-11-05"}}.Encode()
	for _, tc := range []struct {
		name, method, path, body string
		headers                  map[string]string
		cred                     sigv4.Credential
	}{
		{"json", "POST", "/", jsonBody, jsonHeaders, alice},
		{"json second key", "POST", "/", jsonBody, jsonHeaders, bob},
		{"query form", "POST", "/111111111111/orders", form, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, alice},
		{"query get", "GET", "/?" + form + "&Attribute.1.Name=A&Attribute.1.Name=B&Empty=&Flag", "", nil, alice},
		{"escaped path", "GET", "/111111111111/a%20b%2Fc/%E2%82%AC?Action=GetQueueAttributes", "", nil, alice},
		{"empty json body", "POST", "/", "", jsonHeaders, alice},
		{"spaces in a signed header", "POST", "/", jsonBody, map[string]string{
			"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.SendMessage", "X-Custom": "  a   b  c ",
		}, alice},
		{"payload hash header", "POST", "/", jsonBody, map[string]string{
			"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.SendMessage", "X-Amz-Content-Sha256": hashOf([]byte(jsonBody)),
		}, alice},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := request(t, srv, tc.method, tc.path, tc.body, tc.headers)
			sign(t, r, tc.cred, tc.body, now)
			if got := send(t, r); got.status != 200 || got.message != tc.cred.Account {
				t.Errorf("got %d %s %q, want 200 and account %s", got.status, got.code, got.message, tc.cred.Account)
			}
		})
	}
}

func TestVerifyRefuses(t *testing.T) {
	t.Parallel()
	srv, _ := verifyServer(t)
	const (
		incomplete = "IncompleteSignature"
		mismatch   = "SignatureDoesNotMatch"
	)
	signed := func(t *testing.T) *http.Request {
		r := request(t, srv, "POST", "/", jsonBody, jsonHeaders)
		sign(t, r, alice, jsonBody, now)
		return r
	}
	withAuth := func(t *testing.T, auth string) *http.Request {
		r := signed(t)
		r.Header.Set("Authorization", auth)
		return r
	}
	for _, tc := range []struct {
		name    string
		req     func(t *testing.T) *http.Request
		status  int
		code    string
		message string // a prefix of the wanted message
	}{
		{"no signature", func(t *testing.T) *http.Request { return request(t, srv, "POST", "/", jsonBody, jsonHeaders) },
			403, "MissingAuthenticationToken", "Request is missing Authentication Token"},
		{"wrong secret", func(t *testing.T) *http.Request {
			r := request(t, srv, "POST", "/", jsonBody, jsonHeaders)
			sign(t, r, sigv4.Credential{AccessKeyID: alice.AccessKeyID, SecretAccessKey: "not-alices"}, jsonBody, now)
			return r
		}, 403, mismatch, "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.\n\nThe Canonical String for this request should have been\n'POST\n/\n\n"},
		{"unknown key", func(t *testing.T) *http.Request {
			r := request(t, srv, "POST", "/", jsonBody, jsonHeaders)
			sign(t, r, sigv4.Credential{AccessKeyID: "AKIDNOBODY", SecretAccessKey: "x"}, jsonBody, now)
			return r
		}, 403, "InvalidClientTokenId", "The security token included in the request is invalid."},
		{"tampered body", func(t *testing.T) *http.Request {
			r := signed(t)
			tampered := strings.Replace(jsonBody, "hello", "HELLO", 1)
			r.Body = io.NopCloser(strings.NewReader(tampered))
			return r
		}, 403, mismatch, "The request signature we calculated does not match"},
		{"changed signed header", func(t *testing.T) *http.Request {
			r := signed(t)
			r.Header.Set("X-Amz-Target", "AmazonSQS.PurgeQueue")
			return r
		}, 403, mismatch, "The request signature we calculated does not match"},
		{"changed query", func(t *testing.T) *http.Request {
			r := request(t, srv, "GET", "/?Action=ReceiveMessage", "", nil)
			sign(t, r, alice, "", now)
			r.URL.RawQuery = "Action=PurgeQueue"
			return r
		}, 403, mismatch, "The request signature we calculated does not match"},
		{"changed path", func(t *testing.T) *http.Request {
			r := request(t, srv, "GET", "/111111111111/a?Action=ReceiveMessage", "", nil)
			sign(t, r, alice, "", now)
			r.URL.Path = "/111111111111/b"
			return r
		}, 403, mismatch, "The request signature we calculated does not match"},
		{"16 minutes old", func(t *testing.T) *http.Request {
			r := request(t, srv, "POST", "/", jsonBody, jsonHeaders)
			sign(t, r, alice, jsonBody, now.Add(-16*time.Minute))
			return r
		}, 403, mismatch, "Signature expired: 20260102T024805Z is now earlier than 20260102T024905Z (20260102T030405Z - 15 min.)"},
		{"16 minutes ahead", func(t *testing.T) *http.Request {
			r := request(t, srv, "POST", "/", jsonBody, jsonHeaders)
			sign(t, r, alice, jsonBody, now.Add(16*time.Minute))
			return r
		}, 403, mismatch, "Signature not yet current: 20260102T032005Z is still later than 20260102T031905Z (20260102T030405Z + 15 min.)"},
		{"body hash header lies", func(t *testing.T) *http.Request {
			h := map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.SendMessage",
				"X-Amz-Content-Sha256": hashOf([]byte("{}"))}
			r := request(t, srv, "POST", "/", jsonBody, h)
			sign(t, r, alice, "{}", now)
			return r
		}, 403, mismatch, "The provided 'x-amz-content-sha256' header does not match what was computed."},
		{"unsigned payload in the header form", func(t *testing.T) *http.Request {
			h := map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": "AmazonSQS.SendMessage",
				"X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD"}
			r := request(t, srv, "POST", "/", jsonBody, h)
			if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: alice.AccessKeyID, SecretAccessKey: alice.SecretAccessKey},
				r, "UNSIGNED-PAYLOAD", "sqs", "us-east-1", now); err != nil {
				t.Fatal(err)
			}
			return r
		}, 403, mismatch, "X-Amz-Content-Sha256 is UNSIGNED-PAYLOAD"},
		{"wrong service", func(t *testing.T) *http.Request {
			r := request(t, srv, "POST", "/", jsonBody, jsonHeaders)
			if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: alice.AccessKeyID, SecretAccessKey: alice.SecretAccessKey},
				r, hashOf([]byte(jsonBody)), "s3", "us-east-1", now); err != nil {
				t.Fatal(err)
			}
			return r
		}, 403, mismatch, "Credential should be scoped to correct service: 'sqs'."},
		{"scope date differs", func(t *testing.T) *http.Request {
			return withAuth(t, "AWS4-HMAC-SHA256 Credential=AKIDALICE/20260101/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date, Signature=00")
		}, 403, mismatch, "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: '20260101' != '20260102', from '20260102T030405Z'."},
		{"bad terminator", func(t *testing.T) *http.Request {
			return withAuth(t, "AWS4-HMAC-SHA256 Credential=AKIDALICE/20260102/us-east-1/sqs/aws3_request, SignedHeaders=host, Signature=00")
		}, 403, mismatch, "Credential should be scoped with a valid terminator: 'aws4_request', not 'aws3_request'."},
		{"host not signed", func(t *testing.T) *http.Request {
			return withAuth(t, "AWS4-HMAC-SHA256 Credential=AKIDALICE/20260102/us-east-1/sqs/aws4_request, SignedHeaders=x-amz-date, Signature=00")
		}, 400, incomplete, "The host header must be signed; SignedHeaders is 'x-amz-date'."},
		{"other algorithm", func(t *testing.T) *http.Request { return withAuth(t, "AWS AKIDALICE:c2lnbmF0dXJl") },
			400, incomplete, "Unsupported AWS 'algorithm': 'AWS'."},
		{"no parameters", func(t *testing.T) *http.Request { return withAuth(t, "AWS4-HMAC-SHA256") },
			400, incomplete, "Authorization header requires 'Credential' parameter. Authorization header requires 'Signature' parameter. Authorization header requires 'SignedHeaders' parameter. Authorization=AWS4-HMAC-SHA256"},
		{"missing signature", func(t *testing.T) *http.Request {
			return withAuth(t, "AWS4-HMAC-SHA256 Credential=AKIDALICE/20260102/us-east-1/sqs/aws4_request, SignedHeaders=host;x-amz-date")
		}, 400, incomplete, "Authorization header requires 'Signature' parameter. Authorization="},
		{"no equal sign", func(t *testing.T) *http.Request {
			return withAuth(t, "AWS4-HMAC-SHA256 Credential AKIDALICE/20260102/us-east-1/sqs/aws4_request")
		}, 400, incomplete, "'Credential AKIDALICE/20260102/us-east-1/sqs/aws4_request' not a valid key=value pair (missing equal-sign) in Authorization header"},
		{"short credential", func(t *testing.T) *http.Request {
			return withAuth(t, "AWS4-HMAC-SHA256 Credential=AKIDALICE/20260102/us-east-1, SignedHeaders=host, Signature=00")
		}, 400, incomplete, "Credential must have exactly 5 slash-delimited elements, e.g. keyid/date/region/service/term, got 'AKIDALICE/20260102/us-east-1'"},
		{"no date", func(t *testing.T) *http.Request {
			r := signed(t)
			r.Header.Del("X-Amz-Date")
			return r
		}, 400, incomplete, "Authorization header requires existence of a 'X-Amz-Date' header."},
		{"bad date", func(t *testing.T) *http.Request {
			r := signed(t)
			r.Header.Set("X-Amz-Date", "2026-01-02T03:04:05Z")
			return r
		}, 400, incomplete, "Date must be in ISO-8601 'basic format'. Got '2026-01-02T03:04:05Z'."},
		{"two authorization headers", func(t *testing.T) *http.Request {
			r := signed(t)
			r.Header.Add("Authorization", r.Header.Get("Authorization"))
			return r
		}, 400, incomplete, "The request has more than one Authorization header."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := send(t, tc.req(t))
			if got.status != tc.status || got.code != tc.code || !strings.HasPrefix(got.message, tc.message) {
				t.Errorf("got %d %s %q\nwant %d %s %q…", got.status, got.code, got.message, tc.status, tc.code, tc.message)
			}
		})
	}
}

// TestVerifyWindow checks the 15-minute window on the fake clock: a request
// signed now is accepted until 15 minutes have passed, then refused.
func TestVerifyWindow(t *testing.T) {
	t.Parallel()
	srv, clock := verifyServer(t)
	signedAt := clock.Now()
	req := func() *http.Request {
		r := request(t, srv, "POST", "/", jsonBody, jsonHeaders)
		sign(t, r, alice, jsonBody, signedAt)
		return r
	}
	clock.Advance(15 * time.Minute)
	if got := send(t, req()); got.status != 200 {
		t.Fatalf("15 minutes later: got %d %s %q, want 200", got.status, got.code, got.message)
	}
	clock.Advance(time.Second)
	if got := send(t, req()); got.status != 403 || !strings.HasPrefix(got.message, "Signature expired: 20260102T030405Z is now earlier than") {
		t.Fatalf("15 minutes 1 second later: got %d %s %q, want 403 Signature expired", got.status, got.code, got.message)
	}
}

// presign returns a presigned URL, as aws-sdk-go-v2's PresignHTTP makes it.
func presign(t *testing.T, srv *httptest.Server, c sigv4.Credential, query string, expires time.Duration, at time.Time, payloadHash string) string {
	t.Helper()
	r, err := http.NewRequest("GET", srv.URL+"/111111111111/orders?"+query+"&X-Amz-Expires="+fmt.Sprint(int(expires/time.Second)), nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _, err := v4.NewSigner().PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey},
		r, payloadHash, "sqs", "us-east-1", at)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestVerifyPresigned(t *testing.T) {
	t.Parallel()
	srv, clock := verifyServer(t)
	const q = "Action=ReceiveMessage&MaxNumberOfMessages=10&AttributeName.1=All"
	get := func(t *testing.T, u string) result {
		r, err := http.NewRequest("GET", u, nil)
		if err != nil {
			t.Fatal(err)
		}
		return send(t, r)
	}
	unsigned := presign(t, srv, bob, q, 10*time.Minute, clock.Now(), sigv4.UnsignedPayload)
	bodyHashed := presign(t, srv, bob, q, 10*time.Minute, clock.Now(), hashOf(nil))
	for name, u := range map[string]string{"unsigned payload": unsigned, "empty body hash": bodyHashed} {
		if got := get(t, u); got.status != 200 || got.message != bob.Account {
			t.Errorf("%s: got %d %s %q, want 200 and account %s", name, got.status, got.code, got.message, bob.Account)
		}
	}
	wantRefused := func(t *testing.T, what, u string, status int, code, prefix string) {
		t.Helper()
		if got := get(t, u); got.status != status || got.code != code || !strings.HasPrefix(got.message, prefix) {
			t.Errorf("%s: got %d %s %q\nwant %d %s %q…", what, got.status, got.code, got.message, status, code, prefix)
		}
	}
	wantRefused(t, "tampered query", strings.Replace(unsigned, "MaxNumberOfMessages=10", "MaxNumberOfMessages=1", 1),
		403, "SignatureDoesNotMatch", "The request signature we calculated does not match")
	wantRefused(t, "wrong secret", presign(t, srv, sigv4.Credential{AccessKeyID: bob.AccessKeyID, SecretAccessKey: "nope"}, q, time.Minute, clock.Now(), sigv4.UnsignedPayload),
		403, "SignatureDoesNotMatch", "The request signature we calculated does not match")
	wantRefused(t, "no signature", strings.Split(unsigned, "&X-Amz-Signature=")[0],
		400, "IncompleteSignature", "Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters; X-Amz-Signature is missing.")
	wantRefused(t, "expires over a week", presign(t, srv, bob, q, 8*24*time.Hour, clock.Now(), sigv4.UnsignedPayload),
		400, "IncompleteSignature", "X-Amz-Expires must be a whole number of seconds from 1 to 604800 (one week); got '691200'.")
	wantRefused(t, "expires overflowing a duration", strings.Replace(unsigned, "X-Amz-Expires=600", "X-Amz-Expires=18446744074", 1),
		400, "IncompleteSignature", "X-Amz-Expires must be a whole number of seconds from 1 to 604800 (one week); got '18446744074'.")
	wantRefused(t, "signed in the future", presign(t, srv, bob, q, time.Hour, clock.Now().Add(20*time.Minute), sigv4.UnsignedPayload),
		403, "SignatureDoesNotMatch", "Signature not yet current:")

	// The URL lives 10 minutes on the fake clock.
	clock.Advance(10 * time.Minute)
	if got := get(t, unsigned); got.status != 200 {
		t.Errorf("at expiry: got %d %s %q, want 200", got.status, got.code, got.message)
	}
	clock.Advance(time.Second)
	wantRefused(t, "expired", unsigned, 403, "SignatureDoesNotMatch",
		"Signature expired: 20260102T030405Z is now earlier than 20260102T030406Z (20260102T031406Z - 600 sec.)")
}

func TestVerifyBothForms(t *testing.T) {
	t.Parallel()
	srv, clock := verifyServer(t)
	u := presign(t, srv, alice, "Action=ListQueues", time.Minute, clock.Now(), sigv4.UnsignedPayload)
	r, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	sign(t, r, alice, "", clock.Now())
	if got := send(t, r); got.status != 400 || got.code != "IncompleteSignature" || !strings.HasPrefix(got.message, "Only one authentication mechanism is allowed") {
		t.Errorf("got %d %s %q, want 400 IncompleteSignature", got.status, got.code, got.message)
	}
}

// TestVerifyLeavesBody checks that Verify reads only the body it is given.
func TestVerifyLeavesBody(t *testing.T) {
	t.Parallel()
	v, err := sigv4.NewVerifier(clock.NewFake(now), []sigv4.Credential{alice})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("POST", "http://127.0.0.1:9324/", strings.NewReader(jsonBody))
	for k, val := range jsonHeaders {
		r.Header.Set(k, val)
	}
	sign(t, r, alice, jsonBody, now)
	if _, err := v.Verify(r, []byte(jsonBody)); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	rest, _ := io.ReadAll(r.Body)
	if !bytes.Equal(rest, []byte(jsonBody)) {
		t.Errorf("body after Verify = %q, want it unread", rest)
	}
}

func TestNewVerifierRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		creds []sigv4.Credential
		want  string
	}{
		{"none", nil, "no credentials"},
		{"duplicate", []sigv4.Credential{alice, alice}, "listed twice"},
		{"empty key", []sigv4.Credential{{SecretAccessKey: "s", Account: "111111111111"}}, "access key id is empty"},
		{"slash in key", []sigv4.Credential{{AccessKeyID: "A/B", SecretAccessKey: "s", Account: "111111111111"}}, "has the character '/'"},
		{"empty secret", []sigv4.Credential{{AccessKeyID: "A", Account: "111111111111"}}, "secret access key of A is empty"},
		{"space in secret", []sigv4.Credential{{AccessKeyID: "A", SecretAccessKey: "a b", Account: "111111111111"}}, "space, control or non-ASCII"},
		{"short account", []sigv4.Credential{{AccessKeyID: "A", SecretAccessKey: "s", Account: "123"}}, "not 12 digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := sigv4.NewVerifier(nil, tc.creds)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewVerifier: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestVerifyPresignedBody checks that a presigned request's body and
// X-Amz-Target are accepted only when the URL signs them. aws-sdk-go-v2
// signs X-Amz-Target in the query string; the header repeats it.
func TestVerifyPresignedBody(t *testing.T) {
	t.Parallel()
	srv, clock := verifyServer(t)
	presignJSON := func(t *testing.T, target, body, payloadHash string) *http.Request {
		t.Helper()
		r := request(t, srv, "POST", "/?X-Amz-Expires=60", body, map[string]string{"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": target})
		u, _, err := v4.NewSigner().PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: alice.AccessKeyID, SecretAccessKey: alice.SecretAccessKey},
			r, payloadHash, "sqs", "us-east-1", clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		r.URL, _ = url.Parse(u)
		r.Body = io.NopCloser(strings.NewReader(body))
		return r
	}
	for _, tc := range []struct {
		name    string
		req     func(t *testing.T) *http.Request
		status  int
		message string // a prefix of the wanted message, or the account
	}{
		{"body and target signed", func(t *testing.T) *http.Request {
			return presignJSON(t, "AmazonSQS.SendMessage", jsonBody, hashOf([]byte(jsonBody)))
		}, 200, alice.Account},
		{"signed body replaced", func(t *testing.T) *http.Request {
			r := presignJSON(t, "AmazonSQS.SendMessage", jsonBody, hashOf([]byte(jsonBody)))
			purge := `{"QueueUrl":"http://127.0.0.1/111111111111/orders"}`
			r.Body, r.ContentLength = io.NopCloser(strings.NewReader(purge)), int64(len(purge))
			return r
		}, 403, "The request signature we calculated does not match"},
		{"signed target changed", func(t *testing.T) *http.Request {
			r := presignJSON(t, "AmazonSQS.SendMessage", jsonBody, hashOf([]byte(jsonBody)))
			r.Header.Set("X-Amz-Target", "AmazonSQS.PurgeQueue")
			return r
		}, 403, "The request has an X-Amz-Target header, but X-Amz-SignedHeaders does not name it"},
		{"unsigned payload with a body", func(t *testing.T) *http.Request {
			return presignJSON(t, "AmazonSQS.SendMessage", jsonBody, sigv4.UnsignedPayload)
		}, 403, "The URL is presigned with UNSIGNED-PAYLOAD, but the request has a body: a body must be signed."},
		{"target added", func(t *testing.T) *http.Request {
			r, err := http.NewRequest("GET", presign(t, srv, alice, "Action=ListQueues", time.Minute, clock.Now(), sigv4.UnsignedPayload), nil)
			if err != nil {
				t.Fatal(err)
			}
			r.Header.Set("X-Amz-Target", "AmazonSQS.ListQueues")
			return r
		}, 403, "The request has an X-Amz-Target header, but X-Amz-SignedHeaders does not name it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := send(t, tc.req(t))
			if got.status != tc.status || !strings.HasPrefix(got.message, tc.message) {
				t.Errorf("got %d %s %q\nwant %d %q…", got.status, got.code, got.message, tc.status, tc.message)
			}
		})
	}
}

// TestVerifyRefusesSessionToken checks that a request signed by a known key
// but carrying a session token is refused as AWS refuses a long-term key's
// request with a token beside it: 403 InvalidClientTokenId, "The security
// token included in the request is invalid." A Verifier's keys are
// long-term keys, so no token is valid, however well the request is signed
// (the token is signed too, as aws-sdk-go-v2 signs it).
func TestVerifyRefusesSessionToken(t *testing.T) {
	t.Parallel()
	srv, clock := verifyServer(t)
	const msg = "The security token included in the request is invalid."
	withToken := aws.Credentials{AccessKeyID: alice.AccessKeyID, SecretAccessKey: alice.SecretAccessKey, SessionToken: "FwoGZXIvYXdzEXAMPLE"}

	r := request(t, srv, "POST", "/", jsonBody, jsonHeaders)
	if err := v4.NewSigner().SignHTTP(context.Background(), withToken, r, hashOf([]byte(jsonBody)), "sqs", "eu-west-1", now); err != nil {
		t.Fatal(err)
	}
	if r.Header.Get("X-Amz-Security-Token") == "" {
		t.Fatal("the signer set no X-Amz-Security-Token header")
	}
	if got := send(t, r); got.status != 403 || got.code != "InvalidClientTokenId" || got.message != msg {
		t.Errorf("header-signed with a token: got %d %s %q, want 403 InvalidClientTokenId %q", got.status, got.code, got.message, msg)
	}

	pr, err := http.NewRequest("GET", srv.URL+"/111111111111/orders?Action=ReceiveMessage&X-Amz-Expires=60", nil)
	if err != nil {
		t.Fatal(err)
	}
	u, _, err := v4.NewSigner().PresignHTTP(context.Background(), withToken, pr, sigv4.UnsignedPayload, "sqs", "us-east-1", clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(u, "X-Amz-Security-Token=") {
		t.Fatalf("the presigned URL has no X-Amz-Security-Token: %s", u)
	}
	pr, err = http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := send(t, pr); got.status != 403 || got.code != "InvalidClientTokenId" || got.message != msg {
		t.Errorf("presigned with a token: got %d %s %q, want 403 InvalidClientTokenId %q", got.status, got.code, got.message, msg)
	}

	// An empty token header is no token: the request is served.
	r = request(t, srv, "POST", "/", jsonBody, jsonHeaders)
	sign(t, r, alice, jsonBody, now)
	r.Header.Set("X-Amz-Security-Token", "")
	if got := send(t, r); got.status != 200 {
		t.Errorf("empty token header: got %d %s %q, want 200", got.status, got.code, got.message)
	}
}

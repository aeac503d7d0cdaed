package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/server"
)

// Two keys of two accounts.
var (
	alice = sigv4.Credential{AccessKeyID: "AKIDALICE", SecretAccessKey: "alice-secret/+x", Account: "111111111111"}
	bob   = sigv4.Credential{AccessKeyID: "AKIDBOB", SecretAccessKey: "bob-secret", Account: "222222222222"}
)

func startAuthServer(t *testing.T) *testutil.Server {
	t.Helper()
	return testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{alice, bob}})
}

// fixedSigner signs as aws-sdk-go-v2 does, at a fixed time.
type fixedSigner struct{ at time.Time }

func (f fixedSigner) SignHTTP(ctx context.Context, c aws.Credentials, r *http.Request, hash, service, region string,
	_ time.Time, opts ...func(*v4.SignerOptions)) error {
	return v4.NewSigner().SignHTTP(ctx, c, r, hash, service, region, f.at, opts...)
}

// clientAt is an SDK client for srv signing with c at time at.
func clientAt(srv *testutil.Server, c sigv4.Credential, at time.Time) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint:     aws.String(srv.URL),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, ""),
		RetryMaxAttempts: 1,
		HTTPSignerV4:     fixedSigner{at},
		HTTPClient:       sdkhttp.Client(nil),
	})
}

// TestAuthSDK runs a queue's life through aws-sdk-go-v2 against a server
// that checks signatures.
func TestAuthSDK(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	ctx := context.Background()
	c := srv.Client
	u := srv.MustCreateQueue(t, "jobs", map[string]string{"VisibilityTimeout": "30"})
	if want := srv.URL + "/" + alice.Account + "/jobs"; u != want {
		t.Errorf("queue URL = %s, want %s (the signing key's account)", u, want)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &u, MessageBody: aws.String("hello ✓"),
		MessageAttributes: nil}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u, WaitTimeSeconds: 0, MaxNumberOfMessages: 10})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != "hello ✓" {
		t.Fatalf("ReceiveMessage: %+v, %v; want the message", got, err)
	}
	if _, err := c.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &u, ReceiptHandle: got.Messages[0].ReceiptHandle}); err != nil {
		t.Fatalf("DeleteMessage: %v", err)
	}
	// A lease test moves the clock by hours: the client signs on the same
	// fake clock, so its signatures stay current.
	srv.Clock.Advance(12 * time.Hour)
	if _, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &u}); err != nil {
		t.Fatalf("GetQueueAttributes 12 h later: %v", err)
	}
}

func TestAuthRefusesSDK(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	srv.MustCreateQueue(t, "jobs", nil)
	ctx := context.Background()
	list := func(c *sqs.Client) error {
		_, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
		return err
	}
	t.Run("wrong secret", func(t *testing.T) {
		wantAPIError(t, list(srv.ClientFor(alice.AccessKeyID, "not-the-secret")), "SignatureDoesNotMatch", 403)
	})
	t.Run("unknown key", func(t *testing.T) {
		wantAPIError(t, list(srv.ClientFor("AKIDMALLORY", alice.SecretAccessKey)), "InvalidClientTokenId", 403)
	})
	t.Run("16 minutes old", func(t *testing.T) {
		err := list(clientAt(srv, alice, srv.Clock.Now().Add(-16*time.Minute)))
		wantAPIError(t, err, "SignatureDoesNotMatch", 403)
		if err != nil && !strings.Contains(err.Error(), "Signature expired: 20260102T024805Z is now earlier than 20260102T024905Z (20260102T030405Z - 15 min.)") {
			t.Errorf("error %q lacks the expired text", err)
		}
	})
	t.Run("14 minutes old", func(t *testing.T) {
		if err := list(clientAt(srv, alice, srv.Clock.Now().Add(-14*time.Minute))); err != nil {
			t.Errorf("ListQueues: %v, want success within 15 minutes", err)
		}
	})
	t.Run("anonymous", func(t *testing.T) {
		c := sqs.New(sqs.Options{BaseEndpoint: aws.String(srv.URL), Region: "us-east-1",
			Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1})
		wantAPIError(t, list(c), "MissingAuthenticationToken", 403)
	})
}

// signedJSON builds a JSON 1.0 request signed by c at the server's time.
func signedJSON(t *testing.T, srv *testutil.Server, c sigv4.Credential, op, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+op)
	sum := sha256.Sum256([]byte(body))
	if err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey},
		req, hex.EncodeToString(sum[:]), "sqs", "us-east-1", srv.Clock.Now()); err != nil {
		t.Fatal(err)
	}
	return req
}

// wantJSONError checks a raw JSON 1.0 error response.
func wantJSONError(t *testing.T, resp *http.Response, status int, code string) {
	t.Helper()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body is not JSON: %q", b)
	}
	if resp.StatusCode != status || resp.Header.Get("x-amzn-query-error") != code+";Sender" ||
		e.Type != "com.amazon.coral.service#"+code || resp.Header.Get("x-amzn-RequestId") == "" {
		t.Errorf("got %d, x-amzn-query-error %q, __type %q (%s); want %d, %s;Sender, com.amazon.coral.service#%s and a request id",
			resp.StatusCode, resp.Header.Get("x-amzn-query-error"), e.Type, e.Message, status, code, code)
	}
}

func do(t *testing.T, req *http.Request) *http.Response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	return resp
}

func TestAuthRefusesRaw(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	u := srv.MustCreateQueue(t, "jobs", nil)
	body := `{"QueueUrl":"` + u + `","MessageBody":"pay 10"}`

	ok := do(t, signedJSON(t, srv, alice, "SendMessage", body))
	ok.Body.Close()
	if ok.StatusCode != 200 {
		t.Fatalf("signed SendMessage: status %d, want 200", ok.StatusCode)
	}

	tampered := signedJSON(t, srv, alice, "SendMessage", body)
	tampered.Body = io.NopCloser(strings.NewReader(strings.Replace(body, "pay 10", "pay 99", 1)))
	wantJSONError(t, do(t, tampered), 403, "SignatureDoesNotMatch")

	changed := signedJSON(t, srv, alice, "SendMessage", body)
	changed.Header.Set("X-Amz-Target", "AmazonSQS.PurgeQueue")
	wantJSONError(t, do(t, changed), 403, "SignatureDoesNotMatch")

	unsigned, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(body))
	unsigned.Header.Set("Content-Type", "application/x-amz-json-1.0")
	unsigned.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
	wantJSONError(t, do(t, unsigned), 403, "MissingAuthenticationToken")

	garbled := signedJSON(t, srv, alice, "SendMessage", body)
	garbled.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDALICE/20260102/us-east-1/sqs/aws4_request")
	wantJSONError(t, do(t, garbled), 400, "IncompleteSignature")

	// Query requests are refused in XML.
	form := url.Values{"Action": {"ListQueues"}}.Encode()
	q, _ := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(form))
	q.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp := do(t, q)
	defer resp.Body.Close()
	var x struct {
		Error struct{ Type, Code, Message string }
	}
	b, _ := io.ReadAll(resp.Body)
	if err := xml.Unmarshal(b, &x); err != nil || resp.StatusCode != 403 || x.Error.Code != "MissingAuthenticationToken" || x.Error.Type != "Sender" {
		t.Errorf("unsigned Query: %d %s (%v), want 403 MissingAuthenticationToken", resp.StatusCode, b, err)
	}

	// Nothing refused reached the queue.
	attrs, err := srv.Client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &u,
		AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
	if err != nil || attrs.Attributes["ApproximateNumberOfMessages"] != "1" {
		t.Errorf("messages in queue: %v, %v; want 1", attrs, err)
	}

	// The health check needs no signature.
	h := do(t, mustRequest(t, http.MethodGet, srv.URL+"/healthz"))
	h.Body.Close()
	if h.StatusCode != 200 {
		t.Errorf("GET /healthz: %d, want 200", h.StatusCode)
	}
}

func mustRequest(t *testing.T, method, u string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(method, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestAuthAccounts checks that each key sees only its own account's queues.
func TestAuthAccounts(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	ctx := context.Background()
	a, b := srv.ClientFor(alice.AccessKeyID, alice.SecretAccessKey), srv.ClientFor(bob.AccessKeyID, bob.SecretAccessKey)
	aliceURL := srv.MustCreateQueue(t, "orders", nil)
	if _, err := a.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &aliceURL, MessageBody: aws.String("alice's")}); err != nil {
		t.Fatal(err)
	}

	list, err := b.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(list.QueueUrls) != 0 {
		t.Errorf("bob's ListQueues = %v, %v; want no queues", list, err)
	}
	_, err = b.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	_, err = b.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("orders"), QueueOwnerAWSAccountId: aws.String(alice.Account)})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	_, err = b.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &aliceURL})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	_, err = b.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &aliceURL, MessageBody: aws.String("bob's")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	_, err = b.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &aliceURL})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	_, err = b.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &aliceURL})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)

	// Bob's own "orders" is another queue.
	created, err := b.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.URL + "/" + bob.Account + "/orders"; *created.QueueUrl != want {
		t.Errorf("bob's queue URL = %s, want %s", *created.QueueUrl, want)
	}
	// A bare queue name resolves in the caller's account.
	got, err := b.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String("orders")})
	if err != nil || len(got.Messages) != 0 {
		t.Errorf("bob's receive = %+v, %v; want an empty queue", got, err)
	}
	got, err = a.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String("orders")})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != "alice's" {
		t.Errorf("alice's receive = %+v, %v; want her message", got, err)
	}
	for c, want := range map[*sqs.Client]string{a: aliceURL, b: *created.QueueUrl} {
		list, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
		if err != nil || len(list.QueueUrls) != 1 || list.QueueUrls[0] != want {
			t.Errorf("ListQueues = %v, %v; want only %s", list, err, want)
		}
	}
}

// TestAuthPresigned sends a message with a URL presigned by the SDK, then
// checks that the URL stops working once it expires.
func TestAuthPresigned(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	srv.MustCreateQueue(t, "jobs", nil)
	q := url.Values{"Action": {"SendMessage"}, "MessageBody": {"presigned hello"}, "X-Amz-Expires": {"300"}}
	req := mustRequest(t, http.MethodGet, srv.URL+"/"+alice.Account+"/jobs?"+q.Encode())
	presigned, _, err := v4.NewSigner().PresignHTTP(context.Background(),
		aws.Credentials{AccessKeyID: alice.AccessKeyID, SecretAccessKey: alice.SecretAccessKey},
		req, sigv4.UnsignedPayload, "sqs", "us-east-1", srv.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	resp := do(t, mustRequest(t, http.MethodGet, presigned))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "<SendMessageResponse") {
		t.Fatalf("presigned SendMessage: %d %s, want 200", resp.StatusCode, b)
	}
	got, err := srv.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String("jobs")})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != "presigned hello" {
		t.Fatalf("receive = %+v, %v; want the presigned message", got, err)
	}

	srv.Clock.Advance(301 * time.Second)
	resp = do(t, mustRequest(t, http.MethodGet, presigned))
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "<Code>SignatureDoesNotMatch</Code>") || !strings.Contains(string(b), "Signature expired") {
		t.Errorf("expired presigned URL: %d %s, want 403 SignatureDoesNotMatch, Signature expired", resp.StatusCode, b)
	}
}

// TestAuthPresignedGrantsOnlyWhatIsSigned checks that a presigned URL is
// good for the request it signs and nothing else: whoever holds it may not
// pick another operation with an unsigned X-Amz-Target header, nor send a
// body the URL did not sign (a JSON request, or a form whose values override
// the signed query string).
func TestAuthPresignedGrantsOnlyWhatIsSigned(t *testing.T) {
	t.Parallel()
	srv := startAuthServer(t)
	u := srv.MustCreateQueue(t, "jobs", nil)
	presign := func(method, query string) string {
		t.Helper()
		req := mustRequest(t, method, srv.URL+"/"+alice.Account+"/jobs?"+query+"&X-Amz-Expires=300")
		presigned, _, err := v4.NewSigner().PresignHTTP(context.Background(),
			aws.Credentials{AccessKeyID: alice.AccessKeyID, SecretAccessKey: alice.SecretAccessKey},
			req, sigv4.UnsignedPayload, "sqs", "us-east-1", srv.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return presigned
	}
	receive := presign(http.MethodGet, "Action=ReceiveMessage")

	deleteQueue, _ := http.NewRequest(http.MethodGet, receive, strings.NewReader(`{"QueueUrl":"`+u+`"}`))
	deleteQueue.Header.Set("Content-Type", "application/x-amz-json-1.0")
	deleteQueue.Header.Set("X-Amz-Target", "AmazonSQS.DeleteQueue")
	wantJSONError(t, do(t, deleteQueue), 403, "SignatureDoesNotMatch")

	listQueues := mustRequest(t, http.MethodGet, receive)
	listQueues.Header.Set("Content-Type", "application/x-amz-json-1.0")
	listQueues.Header.Set("X-Amz-Target", "AmazonSQS.ListQueues")
	wantJSONError(t, do(t, listQueues), 403, "SignatureDoesNotMatch")

	post := presign(http.MethodPost, "Action=ReceiveMessage")
	purge, _ := http.NewRequest(http.MethodPost, post, strings.NewReader(url.Values{"Action": {"PurgeQueue"}}.Encode()))
	purge.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp := do(t, purge)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(b), "<Code>SignatureDoesNotMatch</Code>") {
		t.Errorf("presigned POST with an unsigned form body: %d %s, want 403 SignatureDoesNotMatch", resp.StatusCode, b)
	}

	// The queue is still there, and the URL still does what it signs.
	if _, err := srv.Client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &u}); err != nil {
		t.Errorf("GetQueueAttributes: %v, want the queue to exist", err)
	}
	resp = do(t, mustRequest(t, http.MethodGet, receive))
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "<ReceiveMessageResponse") {
		t.Errorf("presigned ReceiveMessage: %d %s, want 200", resp.StatusCode, b)
	}
}

// endlessBody is a request body that never ends and counts what was read
// of it.
type endlessBody struct{ n atomic.Int64 }

func (b *endlessBody) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'x'
	}
	b.n.Add(int64(len(p)))
	return len(p), nil
}

// A request that cannot be signed by a key the server holds (no signature,
// a malformed one, an unknown access key, a date out of the window) is
// refused before its body is read: else anyone who can reach the port makes
// the server read and hold up to 4 MiB per request, on as many connections
// at once as they care to open, before it says no.
func TestAuthRefusesBeforeReadingBody(t *testing.T) {
	t.Parallel()
	v, err := sigv4.NewVerifier(clock.NewFake(testutil.Epoch), []sigv4.Credential{alice})
	if err != nil {
		t.Fatal(err)
	}
	h := server.Authenticate(v, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("%s reached the handler", r.Header.Get("Authorization"))
	}))
	nobody := sigv4.Credential{AccessKeyID: "AKIDNOBODY", SecretAccessKey: "nobody-secret", Account: alice.Account}
	tests := []struct {
		name   string
		sign   func(r *http.Request)
		status int
		code   string
	}{
		{"no signature", func(r *http.Request) {}, 403, "MissingAuthenticationToken"},
		{"malformed", func(r *http.Request) { r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIDALICE") }, 400, "IncompleteSignature"},
		{"unknown key", func(r *http.Request) { signNoBody(t, r, nobody, testutil.Epoch) }, 403, "InvalidClientTokenId"},
		{"stale date", func(r *http.Request) { signNoBody(t, r, alice, testutil.Epoch.Add(-time.Hour)) }, 403, "SignatureDoesNotMatch"},
		{"unknown key, presigned", func(r *http.Request) {
			r.URL.RawQuery = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDNOBODY%2F20260102%2Fus-east-1%2Fsqs%2Faws4_request" +
				"&X-Amz-Date=20260102T030405Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host&X-Amz-Signature=00"
		}, 403, "InvalidClientTokenId"},
	}
	for _, tt := range tests {
		body := new(endlessBody)
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:9324/", io.LimitReader(body, 4<<20))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		tt.sign(r)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.status || !strings.Contains(w.Body.String(), "<Code>"+tt.code+"</Code>") {
			t.Errorf("%s: %d %.200s, want %d %s", tt.name, w.Code, w.Body, tt.status, tt.code)
		}
		if n := body.n.Load(); n > 0 {
			t.Errorf("%s: the server read %d bytes of the body before refusing it, want 0", tt.name, n)
		}
	}
}

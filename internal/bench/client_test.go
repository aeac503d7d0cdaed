package bench_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/baton-sqs/baton/internal/bench"
)

// captured is one request as a server saw it.
type captured struct {
	method, path, host string
	header             http.Header
	body               []byte
}

// captureServer records every request and answers with respond.
func captureServer(t *testing.T, respond func(w http.ResponseWriter)) (*httptest.Server, func() []captured) {
	t.Helper()
	var mu sync.Mutex
	var got []captured
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, captured{method: r.Method, path: r.URL.Path, host: r.Host, header: r.Header.Clone(), body: body})
		mu.Unlock()
		respond(w)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []captured {
		mu.Lock()
		defer mu.Unlock()
		return append([]captured(nil), got...)
	}
}

func ok(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	io.WriteString(w, `{"MessageId":"m"}`)
}

var signTime = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func mustClient(t *testing.T, cfg bench.ClientConfig) *bench.Client {
	t.Helper()
	c, err := bench.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestRequestIsJSON10(t *testing.T) {
	t.Parallel()
	srv, got := captureServer(t, ok)
	c := mustClient(t, bench.ClientConfig{Endpoint: srv.URL, NowFunc: func() time.Time { return signTime }})
	body := []byte(`{"QueueUrl":"q","MessageBody":"hello"}`)
	resp, err := c.NewCaller().Do(context.Background(), c.NewRequest("SendMessage", body))
	if err != nil {
		t.Fatal(err)
	}
	if string(resp) != `{"MessageId":"m"}` {
		t.Errorf("response body = %q", resp)
	}
	reqs := got()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.method != "POST" || r.path != "/" {
		t.Errorf("request line = %s %s, want POST /", r.method, r.path)
	}
	if string(r.body) != string(body) {
		t.Errorf("body = %q, want %q", r.body, body)
	}
	for name, want := range map[string]string{
		"Content-Type":   "application/x-amz-json-1.0",
		"X-Amz-Target":   "AmazonSQS.SendMessage",
		"X-Amz-Date":     "20260304T050607Z",
		"Content-Length": "38",
		"Authorization": "AWS4-HMAC-SHA256 Credential=baton/20260304/us-east-1/sqs/aws4_request, " +
			"SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=" + strings.Repeat("0", 64),
	} {
		if g := r.header.Get(name); g != want {
			t.Errorf("%s = %q, want %q", name, g, want)
		}
	}
}

func TestRequestSignatureFollowsTheClock(t *testing.T) {
	t.Parallel()
	srv, got := captureServer(t, ok)
	now := signTime
	c := mustClient(t, bench.ClientConfig{Endpoint: srv.URL, Region: "eu-west-1",
		Credentials: &bench.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"},
		NowFunc:     func() time.Time { return now }})
	req := c.NewRequest("SendMessage", []byte(`{}`))
	k := c.NewCaller()
	for _, d := range []time.Duration{0, 100 * time.Millisecond, time.Second, 24 * time.Hour} {
		now = signTime.Add(d)
		if _, err := k.Do(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	reqs := got()
	date := func(i int) string { return reqs[i].header.Get("X-Amz-Date") }
	auth := func(i int) string { return reqs[i].header.Get("Authorization") }
	if date(0) != date(1) || auth(0) != auth(1) {
		t.Errorf("within one second the date or signature changed: %q %q", date(1), auth(1))
	}
	if date(2) == date(1) || auth(2) == auth(1) {
		t.Errorf("a second later the date or signature is the same: %q", date(2))
	}
	if !strings.Contains(auth(3), "Credential=AKID/20260305/eu-west-1/sqs/aws4_request") {
		t.Errorf("next day's Authorization = %q, want the new day's scope", auth(3))
	}
}

// The signature is the one aws-sdk-go-v2's signer computes for the same
// request, with and without a session token.
func TestSignatureMatchesSDK(t *testing.T) {
	t.Parallel()
	for _, token := range []string{"", "session-token/with+odd=chars"} {
		srv, got := captureServer(t, ok)
		creds := &bench.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", SessionToken: token}
		c := mustClient(t, bench.ClientConfig{Endpoint: srv.URL + "/000000000000/q", Region: "us-west-2", Credentials: creds,
			NowFunc: func() time.Time { return signTime }})
		body := []byte(`{"QueueUrl":"http://x/000000000000/q","Entries":[{"Id":"0","ReceiptHandle":"a\"b"}]}`)
		if _, err := c.NewCaller().Do(context.Background(), c.NewRequest("DeleteMessageBatch", body)); err != nil {
			t.Fatal(err)
		}
		r := got()[0]
		if g := r.header.Get("X-Amz-Security-Token"); g != token {
			t.Errorf("X-Amz-Security-Token = %q, want %q", g, token)
		}
		want, err := http.NewRequest("POST", srv.URL+"/000000000000/q", nil)
		if err != nil {
			t.Fatal(err)
		}
		want.Header.Set("Content-Type", r.header.Get("Content-Type"))
		want.Header.Set("X-Amz-Target", r.header.Get("X-Amz-Target"))
		sum := sha256.Sum256(body)
		err = v4.NewSigner().SignHTTP(context.Background(),
			aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey, SessionToken: token},
			want, hex.EncodeToString(sum[:]), "sqs", "us-west-2", signTime)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := r.header.Get("Authorization"), want.Header.Get("Authorization"); g != w {
			t.Errorf("token %q: Authorization =\n%s\nwant (aws-sdk-go-v2)\n%s", token, g, w)
		}
	}
}

func TestErrorResponses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		header   string
		status   int
		body     string
		wantCode string
		wantMsg  string
	}{
		{"query error header wins", "AWS.SimpleQueueService.NonExistentQueue;Sender", 400,
			`{"__type":"com.amazonaws.sqs#QueueDoesNotExist","message":"gone"}`, "AWS.SimpleQueueService.NonExistentQueue", "gone"},
		{"__type without header", "", 400, `{"__type":"com.amazonaws.sqs#InvalidAddress","message":"bad"}`, "InvalidAddress", "bad"},
		{"Message spelled in capitals", "", 403, `{"__type":"AccessDeniedException","Message":"no"}`, "AccessDeniedException", "no"},
		{"no JSON at all", "", 502, `<html>bad gateway</html>`, "HTTP 502", ""},
	}
	for _, tc := range cases {
		srv, _ := captureServer(t, func(w http.ResponseWriter) {
			if tc.header != "" {
				w.Header().Set("x-amzn-query-error", tc.header)
			}
			w.WriteHeader(tc.status)
			io.WriteString(w, tc.body)
		})
		c := mustClient(t, bench.ClientConfig{Endpoint: srv.URL})
		_, err := c.NewCaller().Do(context.Background(), c.NewRequest("SendMessage", []byte(`{}`)))
		var ae *bench.APIError
		if !errors.As(err, &ae) {
			t.Fatalf("%s: error = %v, want an *APIError", tc.name, err)
		}
		if ae.Status != tc.status || ae.Code != tc.wantCode || ae.Message != tc.wantMsg {
			t.Errorf("%s: got %+v, want status %d code %q message %q", tc.name, ae, tc.status, tc.wantCode, tc.wantMsg)
		}
	}
}

func TestNewClientRefusesBadEndpoints(t *testing.T) {
	t.Parallel()
	for _, ep := range []string{"", "127.0.0.1:9324", "ftp://127.0.0.1/", "http://"} {
		if _, err := bench.NewClient(bench.ClientConfig{Endpoint: ep}); err == nil {
			t.Errorf("NewClient(%q) succeeded, want an error", ep)
		}
	}
}

// The echo answers every action the scenarios use with its shape.
func TestEchoShapes(t *testing.T) {
	t.Parallel()
	url, stop, err := bench.StartEcho(100)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	c := mustClient(t, bench.ClientConfig{Endpoint: url})
	k := c.NewCaller()
	call := func(action, body string, out any) {
		t.Helper()
		b, err := k.Do(context.Background(), c.NewRequest(action, []byte(body)))
		if err != nil {
			t.Fatalf("%s: %v", action, err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v in %s", action, err, b)
		}
	}
	var q struct{ QueueUrl string }
	call("CreateQueue", `{"QueueName":"q1"}`, &q)
	if want := url + "/000000000000/q1"; q.QueueUrl != want {
		t.Errorf("CreateQueue QueueUrl = %q, want %q", q.QueueUrl, want)
	}
	var recv struct {
		Messages []struct{ MessageId, ReceiptHandle, MD5OfBody, Body string }
	}
	call("ReceiveMessage", `{"QueueUrl":"q","MaxNumberOfMessages":7}`, &recv)
	if len(recv.Messages) != 7 || len(recv.Messages[0].Body) != 100 || recv.Messages[0].ReceiptHandle == "" {
		t.Errorf("ReceiveMessage = %+v, want 7 messages with 100-byte bodies and receipt handles", recv)
	}
	var batch struct {
		Successful []struct{ Id string }
		Failed     []struct{ Id string }
	}
	call("DeleteMessageBatch", `{"QueueUrl":"q","Entries":[{"Id":"a","ReceiptHandle":"x"},{"Id":"b","ReceiptHandle":"y"}]}`, &batch)
	if len(batch.Successful) != 2 || batch.Successful[1].Id != "b" || len(batch.Failed) != 0 {
		t.Errorf("DeleteMessageBatch = %+v", batch)
	}
	// A request that does not decode is a SerializationException.
	_, err = k.Do(context.Background(), c.NewRequest("SendMessage", []byte(`{"DelaySeconds":"x"}`)))
	var ae *bench.APIError
	if !errors.As(err, &ae) || ae.Code != "SerializationException" {
		t.Errorf("bad body: error = %v, want SerializationException", err)
	}
}

package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// Without credentials the SQS API acts on any request, so a page of any
// site the operator's browser visits could drive a Baton on localhost: a
// form posting Action=PurgeQueue, an <img> whose URL is
// ?Action=DeleteQueue, a text/plain fetch in no-cors mode. A request the
// browser marks as another site's or origin's (Sec-Fetch-Site, Origin) is
// refused with AccessDenied; SDKs and the AWS CLI send neither header.
func TestAPIRefusesCrossSite(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	u := srv.MustCreateQueue(t, "jobs", nil)
	mustSend(t, srv.Client, u, "keep me")
	evil := "https://evil.example"
	tests := []struct {
		name, method, path string
		header             http.Header
		body               string
	}{
		{"cross-site form", "POST", "/", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {evil}, "Sec-Fetch-Site": {"cross-site"}},
			"Action=PurgeQueue&QueueUrl=" + u},
		{"form without Sec-Fetch-Site", "POST", "/", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {evil}},
			"Action=PurgeQueue&QueueUrl=" + u},
		{"form to the queue URL", "POST", "/000000000000/jobs", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {evil}},
			"Action=SendMessage&MessageBody=forged"},
		{"text/plain with the action in the URL", "POST", "/?Action=SendMessage&QueueUrl=jobs&MessageBody=forged",
			http.Header{"Content-Type": {"text/plain"}, "Origin": {evil}}, "x"},
		{"sandboxed page", "POST", "/", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {"null"}},
			"Action=PurgeQueue&QueueUrl=jobs"},
		{"another port of localhost", "POST", "/", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}, "Origin": {"http://localhost:3000"}, "Sec-Fetch-Site": {"same-site"}},
			"Action=PurgeQueue&QueueUrl=jobs"},
		{"image GET", "GET", "/?Action=DeleteQueue&QueueUrl=jobs", http.Header{"Sec-Fetch-Site": {"cross-site"}}, ""},
	}
	for _, tt := range tests {
		code, h, body := fetch(t, tt.method, srv.URL+tt.path, tt.header, tt.body)
		if code != http.StatusForbidden || h.Get("x-amzn-query-error") != "AccessDenied;Sender" {
			t.Errorf("%s: %d %s %.300s, want 403 AccessDenied", tt.name, code, h.Get("x-amzn-query-error"), body)
		}
	}
	// Nothing reached the queue; the SDK, which sends no Origin, is served.
	checkCounts(t, srv.Client, u, 1, 0, 0)
	if _, err := srv.Client.PurgeQueue(context.Background(), &sqs.PurgeQueueInput{QueueUrl: &u}); err != nil {
		t.Errorf("SDK PurgeQueue: %v", err)
	}
	// A request of the server's own origin, as a browser marks it, is served.
	code, _, body := fetch(t, "POST", srv.URL+"/", http.Header{"Content-Type": {"application/x-www-form-urlencoded"},
		"Origin": {srv.URL}, "Sec-Fetch-Site": {"same-origin"}}, "Action=GetQueueUrl&QueueName=jobs")
	if code != http.StatusOK || !strings.Contains(body, u) {
		t.Errorf("same-origin GetQueueUrl: %d %.300s", code, body)
	}
}

// A server without credentials on a loopback address is within reach of
// any web page whose own name its author points at 127.0.0.1 (DNS
// rebinding): for the browser that page is then of the server's origin, so
// Origin and Sec-Fetch-Site tell nothing, and it could receive every
// message. Such a server (Config.LocalHostsOnly) answers only requests that
// name it by an IP address or a localhost name, as every client on the
// machine does.
func TestLocalHostsOnly(t *testing.T) {
	t.Parallel()
	eng, err := engine.New(engine.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	h := server.New(server.Config{Engine: eng, LocalHostsOnly: true})
	for host, want := range map[string]int{
		"127.0.0.1:9324":               http.StatusOK,
		"[::1]:9324":                   http.StatusOK,
		"localhost:9324":               http.StatusOK,
		"LocalHost":                    http.StatusOK,
		"sqs.us-east-1.localhost:9324": http.StatusOK,
		"rebind.evil.example:9324":     http.StatusForbidden,
		"localhost.evil.example:9324":  http.StatusForbidden,
		"127.0.0.1.nip.io:9324":        http.StatusForbidden,
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("Action=ListQueues"))
		r.Host = host
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want || want != http.StatusOK && !strings.Contains(w.Body.String(), "<Code>AccessDenied</Code>") {
			t.Errorf("Host %s: %d %.200s, want %d", host, w.Code, w.Body, want)
		}
	}
}

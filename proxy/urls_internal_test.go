package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// fakeUpstream answers ListQueues with listAnswer and records the body of
// every other request.
type fakeUpstream struct {
	listAnswer string
	mu         sync.Mutex
	bodies     []string
}

func (f *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	if r.Header.Get("X-Amz-Target") == "AmazonSQS.ListQueues" {
		io.WriteString(w, f.listAnswer)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, string(b))
	f.mu.Unlock()
	io.WriteString(w, `{}`)
}

func (f *fakeUpstream) last() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[len(f.bodies)-1]
}

// jsonCall sends one AWS JSON request to the proxy at base and returns
// its answer's body.
func jsonCall(t *testing.T, base, action, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS."+action)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %s", action, resp.StatusCode, b)
	}
	return string(b)
}

// An upstream that escapes '/' in its answers (valid JSON, as some
// encoders write it) and names its queues under two hosts, as SQS in
// us-east-1 may (sqs.us-east-1.amazonaws.com and the older
// queue.amazonaws.com): every queue URL handed out names the proxy, and
// each goes back to the host its own queue was named under, whichever the
// upstream named last.
func TestQueueURLsOfEveryHostAndSpelling(t *testing.T) {
	up := &fakeUpstream{listAnswer: `{"QueueUrls":["https:\/\/queue.amazonaws.com\/111\/a","https://sqs.us-east-1.amazonaws.com/111/b"]}`}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	p, err := New(Config{Upstream: upSrv.URL, Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	list := jsonCall(t, srv.URL, "ListQueues", `{}`)
	if want := `{"QueueUrls":["` + srv.URL + `/111/a","` + srv.URL + `/111/b"]}`; list != want {
		t.Errorf("ListQueues handed out\n%s\nwant\n%s", list, want)
	}
	for _, tt := range []struct{ name, upstream string }{
		{"a", "https://queue.amazonaws.com/111/a"},
		{"b", "https://sqs.us-east-1.amazonaws.com/111/b"},
	} {
		jsonCall(t, srv.URL, "SendMessage", `{"QueueUrl":"`+srv.URL+`/111/`+tt.name+`","MessageBody":"x"}`)
		if got, want := up.last(), `{"QueueUrl":"`+tt.upstream+`","MessageBody":"x"}`; got != want {
			t.Errorf("queue %s reached the upstream as\n%s\nwant\n%s", tt.name, got, want)
		}
	}
}

// The proxy's own session token goes upstream, under its signature: a
// request signed for its temporary credentials as the SDK signs one; the
// client's token, in a header or a presigned URL, stays behind.
func TestSignsWithASessionToken(t *testing.T) {
	creds := aws.Credentials{AccessKeyID: "ASIATEMP", SecretAccessKey: "temp-secret", SessionToken: "the-proxy's-token"}
	got := make(chan *http.Request, 1)
	upSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		// Signed again with the same credentials at the same time, the
		// request must carry the very same signature.
		at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
		if err != nil {
			t.Errorf("X-Amz-Date: %v", err)
		}
		again := r.Clone(context.Background())
		again.URL.Scheme, again.URL.Host = "http", r.Host
		again.Header.Del("Authorization")
		again.Header.Del("X-Amz-Security-Token")
		again.Header.Del("Accept-Encoding") // the transport's, after signing
		sum := sha256.Sum256(body)
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "sqs", "us-east-1", at); err != nil {
			t.Error(err)
		}
		if a, b := r.Header.Get("Authorization"), again.Header.Get("Authorization"); a != b {
			t.Errorf("the proxy's signature\n%s\nis not the SDK's for its temporary credentials\n%s", a, b)
		}
		got <- r
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		io.WriteString(w, `{"QueueUrls":[]}`)
	}))
	t.Cleanup(upSrv.Close)
	p, err := New(Config{Upstream: upSrv.URL, Region: "us-east-1", Credentials: credentials.StaticCredentialsProvider{Value: creds}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/?X-Amz-Security-Token=the-client's-token", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.ListQueues")
	req.Header.Set("X-Amz-Security-Token", "the-client's-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	r := <-got
	if tok := r.Header.Values("X-Amz-Security-Token"); len(tok) != 1 || tok[0] != creds.SessionToken {
		t.Errorf("the upstream got the session tokens %q, want only the proxy's", tok)
	}
	if r.URL.RawQuery != "" {
		t.Errorf("the upstream got the query %q, want none", r.URL.RawQuery)
	}
}

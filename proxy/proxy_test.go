package proxy_test

import (
	"bytes"
	"context"
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
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/clock"
	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/protocol/sigv4"
	"github.com/baton-sqs/baton/proxy"
)

const (
	upstreamKey    = "AKIDPROXYUPSTREAM"
	upstreamSecret = "upstream-secret-key-of-the-test"
)

// env is an upstream Baton with credentials and a fake clock, a tap that
// records what the upstream answered the proxy, and the proxy in front.
type env struct {
	up    *batontest.Server
	clock *clock.Fake
	tap   *tap
	front *front
	proxy *proxy.Proxy
	url   string // the proxy's
	// tapURL is the upstream's address as the proxy knows it.
	tapURL string
}

type option func(*proxy.Config)

func newEnv(t *testing.T, opts ...option) *env {
	t.Helper()
	up := batontest.New(t, batontest.WithCredentials(upstreamKey, upstreamSecret), batontest.WithFakeClock(time.Time{}))
	tp := &tap{target: up.URL()}
	tapSrv := httptest.NewServer(tp)
	t.Cleanup(tapSrv.Close)
	cfg := proxy.Config{
		Upstream: tapSrv.URL, Region: batontest.Region,
		Credentials: credentials.NewStaticCredentialsProvider(upstreamKey, upstreamSecret, ""),
		Clock:       up.Clock(),
	}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := proxy.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &front{proxy: p}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return &env{up: up, clock: up.Clock(), tap: tp, front: f, proxy: p, url: srv.URL, tapURL: tapSrv.URL}
}

// front serves the proxy, telling the test of each request from a client
// as it comes (came) and once the proxy is done with it (done).
type front struct {
	proxy      http.Handler
	mu         sync.Mutex
	came, done func(r *http.Request)
	// cut, if set and true of a request, cuts the client's connection as
	// the proxy writes its answer: every write of it fails, and the
	// client gets no answer.
	cut func(r *http.Request) bool
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	came, done, cut := f.came, f.done, f.cut
	f.mu.Unlock()
	if came != nil {
		came(r)
	}
	cutting := cut != nil && cut(r)
	if cutting {
		w = cutWriter{w}
	}
	f.proxy.ServeHTTP(w, r)
	if done != nil {
		done(r)
	}
	if cutting {
		panic(http.ErrAbortHandler) // the server closes the connection
	}
}

// cutWriter is the writer of an answer to a connection cut as it is
// written: its writes fail.
type cutWriter struct{ http.ResponseWriter }

func (cutWriter) WriteHeader(int) {}

func (cutWriter) Write([]byte) (int, error) { return 0, errors.New("the connection was cut") }

// watch sets the front's hooks (nil for none).
func (f *front) watch(came, done func(r *http.Request)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.came, f.done = came, done
}

// client returns an SDK client of the proxy signing with the given key.
func (e *env) client(key, secret string) *sqs.Client {
	return sqs.New(sqs.Options{
		BaseEndpoint: aws.String(e.url), Region: batontest.Region,
		Credentials:      credentials.NewStaticCredentialsProvider(key, secret, ""),
		RetryMaxAttempts: 1, HTTPSignerV4: clockSigner{v4.NewSigner(), e.clock},
		HTTPClient: sdkhttp.Client(nil),
	})
}

type clockSigner struct {
	s *v4.Signer
	c clock.Clock
}

func (c clockSigner) SignHTTP(ctx context.Context, creds aws.Credentials, r *http.Request, hash, service, region string,
	_ time.Time, opts ...func(*v4.SignerOptions)) error {
	return c.s.SignHTTP(ctx, creds, r, hash, service, region, c.c.Now(), opts...)
}

// tap forwards every request to target unchanged and records the last
// answer, to compare with what the proxy answered its client.
type tap struct {
	target string
	mu     sync.Mutex
	all    []recorded
	// afterAnswer, if set, runs once the upstream has answered a request
	// and before the proxy gets the answer (the answer's way back).
	afterAnswer func(r *http.Request)
	// loseAnswer, if set and true of a request, loses the upstream's
	// answer to it: the request was made upstream, and the proxy is
	// answered 503 (the outcome not known), as SQS answers when it fails
	// between its change and its answer.
	loseAnswer func(r *http.Request) bool
	// cutAnswer, if set and true of a request, cuts the connection once
	// the upstream has answered it: the proxy gets no answer at all.
	cutAnswer func(r *http.Request) bool
	// stall, if set and true of a request, sends the proxy the answer's
	// headers and then nothing more until the request is given up.
	stall func(r *http.Request) bool
}

type recorded struct {
	status int
	header http.Header
	body   []byte
	// request is the body and query string of the request answered.
	request string
}

func (t *tap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req, _ := http.NewRequest(r.Method, t.target+r.URL.RequestURI(), bytes.NewReader(body))
	req.Header = r.Header.Clone()
	req.Host = r.Host
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	t.mu.Lock()
	t.all = append(t.all, recorded{resp.StatusCode, resp.Header.Clone(), answer, string(body) + "?" + r.URL.RawQuery})
	after, lose, cut, stall := t.afterAnswer, t.loseAnswer, t.cutAnswer, t.stall
	t.mu.Unlock()
	if after != nil {
		after(r)
	}
	if cut != nil && cut(r) {
		panic(http.ErrAbortHandler) // the server closes the connection
	}
	if stall != nil && stall(r) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"Messages":`)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	}
	if lose != nil && lose(r) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"__type":"com.amazonaws.sqs#ServiceUnavailable","message":"the answer was lost"}`)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// answers returns how many answers the tap has recorded.
func (t *tap) answers() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.all)
}

// answer returns the i-th answer the tap recorded.
func (t *tap) answer(i int) recorded {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.all[i]
}

func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// A client signing with a secret the upstream does not know works through
// a proxy that checks no signature: the proxy signs with its own key.
func TestResignsWithItsOwnCredentials(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.up.ClientFor("AKIDWRONG", "wrong").ListQueues(ctx, &sqs.ListQueuesInput{}); errCode(err) == "" {
		t.Fatalf("direct with a wrong key: %v, want a refusal", err)
	}
	c := e.client("AKIDWRONG", "wrong")
	q, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
	if err != nil {
		t.Fatalf("CreateQueue through the proxy: %v", err)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("hello")}); err != nil {
		t.Fatalf("SendMessage through the proxy: %v", err)
	}
	out, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl})
	if err != nil || len(out.Messages) != 1 || *out.Messages[0].Body != "hello" {
		t.Fatalf("ReceiveMessage through the proxy: %v %+v", err, out)
	}
}

// The upstream refuses a proxy whose own key is wrong, and its error
// reaches the client as it was.
func TestUpstreamRefusalPassesThrough(t *testing.T) {
	e := newEnv(t, func(c *proxy.Config) {
		c.Credentials = credentials.NewStaticCredentialsProvider(upstreamKey, "not-the-secret", "")
	})
	_, err := e.client(upstreamKey, upstreamSecret).ListQueues(context.Background(), &sqs.ListQueuesInput{})
	if got := errCode(err); got != "SignatureDoesNotMatch" {
		t.Fatalf("through a proxy with a wrong secret: %v (code %q), want SignatureDoesNotMatch", err, got)
	}
	_, direct := e.up.ClientFor(upstreamKey, "not-the-secret").ListQueues(context.Background(), &sqs.ListQueuesInput{})
	if errCode(direct) != errCode(err) {
		t.Fatalf("direct: %v, through the proxy: %v", direct, err)
	}
}

// With --credentials-file the proxy checks its clients' signatures as
// `baton serve` does, and refuses a wrong one itself.
func TestVerifiesClients(t *testing.T) {
	e := newEnv(t, func(c *proxy.Config) {
		v, err := sigv4.NewVerifier(c.Clock, []sigv4.Credential{{AccessKeyID: "AKIDAPP", SecretAccessKey: "app-secret", Account: batontest.Account}})
		if err != nil {
			t.Fatal(err)
		}
		c.Verifier = v
	})
	ctx := context.Background()
	if _, err := e.client("AKIDAPP", "app-secret").ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatalf("a known key: %v", err)
	}
	before := e.tap.answers()
	_, err := e.client("AKIDAPP", "wrong-secret").ListQueues(ctx, &sqs.ListQueuesInput{})
	if got := errCode(err); got != "SignatureDoesNotMatch" {
		t.Fatalf("a wrong secret: %v, want SignatureDoesNotMatch", err)
	}
	_, err = e.client("AKIDUNKNOWN", "app-secret").ListQueues(ctx, &sqs.ListQueuesInput{})
	if got := errCode(err); got != "InvalidClientTokenId" {
		t.Fatalf("an unknown key: %v, want InvalidClientTokenId", err)
	}
	if after := e.tap.answers(); after != before {
		t.Fatal("a refused request reached the upstream")
	}
	// The admin API, /metrics and the dashboard want a signature too, or
	// Basic credentials, as on baton serve: without, a challenge.
	for _, path := range []string{"/metrics", "/admin/api/queues/jobs/leases", "/", "/ui/queues/jobs"} {
		resp, err := http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("unsigned GET %s: %s, want 401 with a Basic challenge", path, resp.Status)
		}
	}
	for secret, want := range map[string]int{"app-secret": http.StatusOK, "wrong-secret": http.StatusUnauthorized} {
		req, _ := http.NewRequest(http.MethodGet, e.url+"/", nil)
		req.SetBasicAuth("AKIDAPP", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("the dashboard signed in with secret %q: %s, want %d", secret, resp.Status, want)
		}
	}
}

// An upstream that cannot be reached is an SQS error, not a broken
// connection.
func TestUnreachableUpstream(t *testing.T) {
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	p, err := proxy.New(proxy.Config{Upstream: dead.URL, Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKIDX", "x", "")})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	c := sqs.New(sqs.Options{BaseEndpoint: aws.String(srv.URL), Region: "us-east-1", RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDX", "x", ""), HTTPClient: sdkhttp.Client(nil)})
	_, err = c.ListQueues(context.Background(), &sqs.ListQueuesInput{})
	if got := errCode(err); got != "ServiceUnavailable" || !strings.Contains(err.Error(), "upstream") {
		t.Fatalf("unreachable upstream: %v (code %q)", err, got)
	}
}

func TestNewNeedsARegion(t *testing.T) {
	creds := credentials.NewStaticCredentialsProvider("AKIDX", "x", "")
	if _, err := proxy.New(proxy.Config{Upstream: "http://127.0.0.1:1", Credentials: creds}); err == nil {
		t.Fatal("no region: no error")
	}
	if got := proxy.RegionOf("sqs.eu-west-3.amazonaws.com"); got != "eu-west-3" {
		t.Fatalf("RegionOf = %q", got)
	}
	if _, err := proxy.New(proxy.Config{Upstream: "ftp://x", Region: "us-east-1", Credentials: creds}); err == nil {
		t.Fatal("an ftp upstream: no error")
	}
}

// Bad input gets an SQS error, from the proxy when it refuses the request
// itself, else from the upstream; the admin API answers a queue that does
// not exist with 404.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	big := bytes.Repeat([]byte("x"), 5<<20)
	req, _ := http.NewRequest(http.MethodPost, e.url+"/", bytes.NewReader(big))
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.HasPrefix(resp.Header.Get("x-amzn-query-error"), "RequestEntityTooLarge") {
		t.Errorf("a 5 MiB body: %s %v", resp.Status, resp.Header)
	}
	for _, body := range []string{"%zz", "Action=ReceiveMessage&QueueUrl=%00", "Action=DeleteMessageBatch&DeleteMessageBatchRequestEntry.0.Id=x", ""} {
		resp, err := http.Post(e.url+"/", "application/x-www-form-urlencoded", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%q: %s, want 400", body, resp.Status)
		}
	}
	resp, err = http.Get(e.url + "/admin/api/queues/nosuch/leases")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the report of a missing queue: %s, want 404", resp.Status)
	}
}

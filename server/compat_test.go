package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/engine"
	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/server"
	"github.com/baton-sqs/baton/store/memstore"
)

// localStackClient is an SDK client configured as a LocalStack user's is,
// with the endpoint sqs.us-east-1.localhost.localstack.cloud:4566, whose
// connections a custom dialer sends to addr (public DNS would give
// 127.0.0.1, and a test needs no DNS).
func localStackClient(addr string) *sqs.Client {
	dialer := &net.Dialer{}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return dialer.DialContext(ctx, network, addr)
	}}}
	return sqs.New(sqs.Options{
		BaseEndpoint:     aws.String("http://sqs.us-east-1.localhost.localstack.cloud:4566"),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:       sdkhttp.Client(hc),
		RetryMaxAttempts: 1,
	})
}

// LocalStack's users have its host names in their endpoints and queue
// URLs. A loopback server without credentials refuses them, as it refuses
// every name but localhost's (the DNS-rebinding check), and says how to
// answer them; with --allow-host localhost.localstack.cloud (AllowHosts)
// it serves them, and hands out queue URLs in LocalStack's own shape.
func TestLocalStackHostNames(t *testing.T) {
	t.Parallel()
	start := func(allow []string) *httptest.Server {
		eng, err := engine.New(engine.Config{Store: memstore.New()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(eng.Close)
		ts := httptest.NewServer(server.New(server.Config{Engine: eng, LocalHostsOnly: true, AllowHosts: allow}))
		t.Cleanup(ts.Close)
		return ts
	}
	ctx := context.Background()

	strict := start(nil)
	_, err := localStackClient(strict.Listener.Addr().String()).CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err == nil || !strings.Contains(err.Error(), "--allow-host localhost.localstack.cloud") {
		t.Fatalf("without --allow-host: %v, want AccessDenied naming --allow-host", err)
	}
	wantAPIError(t, err, "AccessDenied", http.StatusForbidden)

	ts := start([]string{"LocalHost.LocalStack.Cloud."})
	c := localStackClient(ts.Listener.Addr().String())
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders")})
	if err != nil {
		t.Fatal(err)
	}
	const want = "http://sqs.us-east-1.localhost.localstack.cloud:4566/000000000000/orders"
	if *out.QueueUrl != want {
		t.Errorf("queue URL %s, want LocalStack's %s", *out.QueueUrl, want)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String("hi")}); err != nil {
		t.Fatal(err)
	}
	got, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: out.QueueUrl})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != "hi" {
		t.Fatalf("receive through LocalStack's host name: %v %v", got, err)
	}
	// Only that domain and its subdomains: a name merely containing it
	// is another domain's, and still refused.
	for host, want := range map[string]int{
		"localhost.localstack.cloud:4566":                 http.StatusOK,
		"sqs.eu-west-1.localhost.localstack.cloud:4566":   http.StatusOK,
		"localhost.localstack.cloud.evil.example:4566":    http.StatusForbidden,
		"evillocalhost.localstack.cloud:4566":             http.StatusForbidden,
		"localstack.cloud:4566":                           http.StatusForbidden,
		"sqs.us-east-1.amazonaws.com.evil.example:4566":   http.StatusForbidden,
		"s3.localhost.localstack.cloud.rebind.example:80": http.StatusForbidden,
	} {
		req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader("Action=ListQueues"))
		req.Host = host
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Host %s: %d, want %d", host, resp.StatusCode, want)
		}
	}
}

// Compose files health-check LocalStack at /_localstack/health (often
// grepping for "sqs": "running") and goaws at /health (its image with
// wget --spider, a HEAD); both answer as /healthz does, 503 while the
// store cannot be reached.
func TestHealthWhereOtherEmulatorsAreChecked(t *testing.T) {
	t.Parallel()
	eng, err := engine.New(engine.Config{Store: memstore.New()})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var down error
	srv := server.New(server.Config{Engine: eng, Ready: func(context.Context) error { return down }})
	get := func(method, path string) (int, string) {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, body := get(http.MethodGet, "/_localstack/health"); code != http.StatusOK || body != `{"services": {"sqs": "running"}}`+"\n" {
		t.Errorf("/_localstack/health: %d %q", code, body)
	}
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		if code, _ := get(m, "/health"); code != http.StatusOK {
			t.Errorf("%s /health: %d, want 200", m, code)
		}
	}
	down = errors.New("database unreachable")
	if code, body := get(http.MethodGet, "/_localstack/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, `"sqs": "error"`) {
		t.Errorf("/_localstack/health with the store down: %d %q", code, body)
	}
	if code, body := get(http.MethodGet, "/health"); code != http.StatusServiceUnavailable || !strings.Contains(body, "database unreachable") {
		t.Errorf("/health with the store down: %d %q", code, body)
	}
	// /health with an Action is the SQS API's, on a queue named health.
	down = nil
	if code, body := get(http.MethodGet, "/000000000000/health?Action=GetQueueAttributes"); code != http.StatusBadRequest || !strings.Contains(body, "NonExistentQueue") {
		t.Errorf("SQS request on queue health: %d %.200s", code, body)
	}
	if code, body := get(http.MethodGet, "/health?Action=ListQueues"); code != http.StatusBadRequest {
		t.Errorf("/health?Action=ListQueues: %d %.200s, want the SQS API's refusal", code, body)
	}
}

// LocalStack's peek endpoint, /_aws/sqs/messages, lists a queue's messages
// in ReceiveMessage's shape without leasing or changing them: by curl
// (XML, or JSON for Accept: application/json), by a form POST, by the
// path form, and by an SDK whose endpoint is the peek URL.
func TestPeekEndpoint(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	u := srv.MustCreateQueue(t, "peek", map[string]string{"VisibilityTimeout": "30"})
	mustSend(t, srv.Client, u, "leased")
	mustSend(t, srv.Client, u, "waiting")
	if _, err := srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &u, MessageBody: aws.String("later"), DelaySeconds: 60,
		MessageAttributes: map[string]types.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String("slow")}}}); err != nil {
		t.Fatal(err)
	}
	if m := receiveOne(t, srv.Client, u, nil); *m.Body != "leased" {
		t.Fatalf("received %q first", *m.Body)
	}

	peek := srv.URL + "/_aws/sqs/messages?QueueUrl=" + url.QueryEscape(u)
	code, _, body := fetch(t, "GET", peek, nil, "")
	if code != http.StatusOK || !strings.Contains(body, "<ReceiveMessageResponse") || !strings.Contains(body, "<Body>waiting</Body>") ||
		strings.Contains(body, "leased") || strings.Contains(body, "later") || !strings.Contains(body, "<ReceiptHandle>SQS/BACKDOOR/ACCESS</ReceiptHandle>") {
		t.Errorf("GET peek: %d %.600s", code, body)
	}
	code, _, body = fetch(t, "GET", peek+"&ShowInvisible=true&ShowDelayed=true", http.Header{"Accept": {"application/json"}}, "")
	var doc struct {
		ReceiveMessageResponse struct {
			ReceiveMessageResult struct {
				Messages []struct {
					Body       string
					Attributes map[string]string
				} `json:"messages"`
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &doc); code != http.StatusOK || err != nil {
		t.Fatalf("GET peek, JSON: %d %v %.600s", code, err, body)
	}
	got := map[string]string{}
	for _, m := range doc.ReceiveMessageResponse.ReceiveMessageResult.Messages {
		got[m.Body] = m.Attributes["IsVisible"] + "/" + m.Attributes["IsDelayed"]
	}
	if want := map[string]string{"leased": "false/false", "waiting": "true/false", "later": "false/true"}; !maps.Equal(got, want) {
		t.Errorf("ShowInvisible and ShowDelayed: IsVisible/IsDelayed %v, want %v (%.600s)", got, want, body)
	}
	code, _, body = fetch(t, "POST", srv.URL+"/_aws/sqs/messages", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}},
		"QueueUrl="+url.QueryEscape(u)+"&ShowInvisible=1")
	if code != http.StatusOK || !strings.Contains(body, "leased") || !strings.Contains(body, "waiting") || strings.Contains(body, "later") {
		t.Errorf("POST form peek: %d %.600s", code, body)
	}
	code, _, body = fetch(t, "GET", srv.URL+"/_aws/sqs/messages/us-east-1/000000000000/peek?ShowDelayed=true", nil, "")
	if code != http.StatusOK || !strings.Contains(body, "waiting") || !strings.Contains(body, "later") || strings.Contains(body, "leased") ||
		!strings.Contains(body, "<Name>kind</Name>") {
		t.Errorf("path peek: %d %.600s", code, body)
	}

	// An SDK pointed at the peek URL calls ReceiveMessage as usual.
	peeker := sqs.New(sqs.Options{BaseEndpoint: aws.String(srv.URL + "/_aws/sqs/messages"), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""), RetryMaxAttempts: 1})
	out, err := peeker.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u})
	if err != nil || len(out.Messages) != 1 || *out.Messages[0].Body != "waiting" || *out.Messages[0].ReceiptHandle != "SQS/BACKDOOR/ACCESS" ||
		out.Messages[0].Attributes["ApproximateReceiveCount"] != "0" {
		t.Fatalf("SDK peek: %+v %v", out, err)
	}
	_, err = peeker.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &u, MessageBody: aws.String("x")})
	wantAPIError(t, err, "InvalidAction", http.StatusBadRequest)
	_, err = peeker.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(srv.URL + "/000000000000/nope")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", http.StatusBadRequest)

	// Nothing was leased or counted: the waiting message is received for
	// the first time now.
	checkCounts(t, srv.Client, u, 1, 1, 1)
	if m := receiveOne(t, srv.Client, u, nil); *m.Body != "waiting" || m.Attributes["ApproximateReceiveCount"] != "1" {
		t.Errorf("after the peeks: %q received with count %s, want waiting, 1", *m.Body, m.Attributes["ApproximateReceiveCount"])
	}
}

// --allow-host takes names a page of any site cannot get under: one label
// (com) would admit every .com site, a wildcard or port is no host name.
func TestCheckAllowHosts(t *testing.T) {
	t.Parallel()
	if err := server.CheckAllowHosts([]string{"localhost.localstack.cloud", "Dev.Example.Com."}); err != nil {
		t.Errorf("valid names refused: %v", err)
	}
	for _, bad := range []string{"com", "cloud.", "*.localstack.cloud", "localhost.localstack.cloud:4566", "http://x.example", "", ".example.com"} {
		if err := server.CheckAllowHosts([]string{bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// LocalStack with SQS_ENDPOINT_STRATEGY=path hands out queue URLs of the
// form http://localhost:4566/queue/<region>/<account>/<name>, and its users
// paste them into their configuration. Each names the queue
// /<account>/<name> of that region, as a QueueUrl parameter and as the path
// a Query request is sent to (older SDKs send it there); a request of
// another region, or for another account, finds no such queue.
func TestLocalStackPathQueueURLs(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	ctx := context.Background()
	inRegion := func(region string) func(*sqs.Options) {
		return func(o *sqs.Options) { o.Region = region }
	}
	local := srv.MustCreateQueue(t, "orders", nil)
	if _, err := srv.Client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"),
		Attributes: map[string]string{"VisibilityTimeout": "77"}}, inRegion("eu-west-1")); err != nil {
		t.Fatal(err)
	}

	const pasted = "http://localhost:4566/queue/us-east-1/000000000000/orders"
	if _, err := srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(pasted), MessageBody: aws.String("by path")}); err != nil {
		t.Fatalf("SendMessage to %s: %v", pasted, err)
	}
	got, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(local)})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != "by path" {
		t.Fatalf("receive from %s: %v %v, want the message sent to %s", local, got, err, pasted)
	}

	eu, err := srv.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String("http://localhost:4566/queue/eu-west-1/000000000000/orders"),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameVisibilityTimeout},
	}, inRegion("eu-west-1"))
	if err != nil || eu.Attributes["VisibilityTimeout"] != "77" {
		t.Fatalf("eu-west-1's orders by its path URL: %v %v, want VisibilityTimeout 77", eu, err)
	}

	for _, other := range []string{
		"http://localhost:4566/queue/eu-west-1/000000000000/orders", // signed for us-east-1
		"http://localhost:4566/queue/us-east-1/111111111111/orders", // another account
	} {
		_, err := srv.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(other), MessageBody: aws.String("x")})
		wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", http.StatusBadRequest)
	}

	// A Query request sent to the path-style URL, without QueueUrl.
	resp, err := http.Post(srv.URL+"/queue/us-east-1/000000000000/orders", "application/x-www-form-urlencoded",
		strings.NewReader("Action=SendMessage&MessageBody=to+the+path"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "<SendMessageResponse") {
		t.Fatalf("Query SendMessage to the path-style URL: %d %s", resp.StatusCode, body)
	}
	got, err = srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(local)})
	if err != nil || len(got.Messages) != 1 || *got.Messages[0].Body != "to the path" {
		t.Fatalf("receive from %s: %v %v, want the message the Query request sent", local, got, err)
	}
}

// LocalStack's internal endpoints that Baton does not serve answer 404
// saying so, and where Baton has the same, instead of SQS's bare
// <UnknownOperationException/>; the ones it serves (health, message peek)
// still answer, and an SQS call with an Action is still one.
func TestLocalStackInternalPathsNotServed(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	for _, tt := range []struct{ method, path, want string }{
		{http.MethodGet, "/_aws/sns/sms-messages", "/admin/api/sns/deliveries?protocol=sms"},
		{http.MethodGet, "/_aws/sns/sms-messages?region=us-east-1", "/admin/api/sns/deliveries?protocol=sms"},
		{http.MethodGet, "/_aws/sns/subscription-tokens/arn:aws:sns:us-east-1:000000000000:t:1", "type=SubscriptionConfirmation"},
		{http.MethodGet, "/_localstack/init/ready", "run-init.sh"},
		{http.MethodGet, "/_localstack/init", "run-init.sh"},
		{http.MethodGet, "/_localstack/info", "Baton does not serve LocalStack's /_localstack/info."},
		{http.MethodPost, "/_aws/sns/phone-opt-outs", "Baton does not serve LocalStack's /_aws/sns/phone-opt-outs."},
	} {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(`{"phoneNumber": "+15555550100"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), tt.want) {
			t.Errorf("%s %s: %d %q, want 404 saying %q", tt.method, tt.path, resp.StatusCode, body, tt.want)
		}
	}

	// The health path Baton serves to GET does not say it is not served
	// when LocalStack's POST (restart, kill) or PUT reaches it.
	for _, method := range []string{http.MethodPost, http.MethodPut} {
		req, _ := http.NewRequest(method, srv.URL+"/_localstack/health", strings.NewReader(`{"action": "restart"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := "Baton answers GET and HEAD /_localstack/health, LocalStack's health, not " + method + ": it has no restart or kill action."
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" || strings.TrimSpace(string(body)) != want {
			t.Errorf("%s /_localstack/health: %d Allow %q %q, want 405 Allow \"GET, HEAD\" %q", method, resp.StatusCode, resp.Header.Get("Allow"), body, want)
		}
	}

	u := srv.MustCreateQueue(t, "_aws", nil)
	if _, err := srv.Client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(u), MessageBody: aws.String("x")}); err != nil {
		t.Fatalf("a queue named _aws: %v", err)
	}
	for path, want := range map[string]string{
		"/_localstack/health":                 `"sqs": "running"`,
		"/_aws/sqs/messages?QueueUrl=" + u:    "<Body>x</Body>",
		"/_aws/sqs/messages?QueueUrl=/x/nope": "NonExistentQueue",
	} {
		_, body := httpGetBody(t, srv.URL+path)
		if !strings.Contains(body, want) {
			t.Errorf("GET %s: %q, want %q in it", path, body, want)
		}
	}
}

func httpGetBody(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

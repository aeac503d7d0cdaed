package proxy_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/internal/sdkhttp"
	"github.com/baton-sqs/baton/proxy"
)

// queueClient returns a client that sends a queue's requests to its queue
// URL's host, as the AWS SDK for JavaScript v3 does by default (and the
// SDKs for Ruby and PHP): it signs with a key the upstream does not know,
// so a call that goes around the proxy is refused.
func (e *env) queueClient(queueURL string) *sqs.Client {
	u, err := url.Parse(queueURL)
	if err != nil {
		panic(err)
	}
	return sqs.New(sqs.Options{
		BaseEndpoint: aws.String(u.Scheme + "://" + u.Host), Region: batontest.Region,
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDAPP", "app-secret", ""),
		RetryMaxAttempts: 1, HTTPSignerV4: clockSigner{v4.NewSigner(), e.clock},
		HTTPClient: sdkhttp.Client(nil),
	})
}

// postForm sends a Query request to base+path and returns its status and
// body.
func postForm(t *testing.T, rawURL, form, accept string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, rawURL, strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Every queue URL the proxy hands out (CreateQueue, GetQueueUrl,
// ListQueues, ListDeadLetterSourceQueues; AWS JSON, Query XML and the
// Query protocol's JSON form) names the proxy, so a client that sends a
// queue's requests to its queue URL's host stays on the proxy; a QueueUrl
// naming the proxy (single and batch calls, in a form's body or query
// string) reaches the upstream as the upstream's, and one of the upstream
// passes as it came.
func TestQueueURLsNameTheProxy(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	c := e.client("AKIDAPP", "app-secret")
	onProxy := func(what, u string) {
		t.Helper()
		if !strings.HasPrefix(u, e.url+"/") {
			t.Fatalf("%s handed out %q, not a queue URL of the proxy %s", what, u, e.url)
		}
	}
	dlq, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("urls-dlq")})
	if err != nil {
		t.Fatal(err)
	}
	onProxy("CreateQueue", *dlq.QueueUrl)
	attrs, err := e.queueClient(*dlq.QueueUrl).GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: dlq.QueueUrl, AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("GetQueueAttributes by the queue URL's host: %v", err)
	}
	redrive := `{"deadLetterTargetArn":"` + attrs.Attributes["QueueArn"] + `","maxReceiveCount":"5"}`
	src, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("urls"), Attributes: map[string]string{"RedrivePolicy": redrive}})
	if err != nil {
		t.Fatal(err)
	}
	q := *src.QueueUrl
	onProxy("CreateQueue", q)
	got, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("urls")})
	if err != nil || *got.QueueUrl != q {
		t.Fatalf("GetQueueUrl: %v %v, want %s", err, got, q)
	}
	listed, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("urls")})
	if err != nil || len(listed.QueueUrls) != 2 {
		t.Fatalf("ListQueues: %v %+v", err, listed)
	}
	for _, u := range listed.QueueUrls {
		onProxy("ListQueues", u)
	}
	sources, err := e.queueClient(*dlq.QueueUrl).ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: dlq.QueueUrl})
	if err != nil || len(sources.QueueUrls) != 1 || sources.QueueUrls[0] != q {
		t.Fatalf("ListDeadLetterSourceQueues: %v %+v, want [%s]", err, sources, q)
	}

	// A message's life by the queue URL's host, batches included.
	qc := e.queueClient(q)
	if _, err := qc.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &q, Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("one")}, {Id: aws.String("b"), MessageBody: aws.String("two")}}}); err != nil {
		t.Fatalf("SendMessageBatch by the queue URL's host: %v", err)
	}
	out, err := qc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &q, MaxNumberOfMessages: 10, VisibilityTimeout: 30})
	if err != nil || len(out.Messages) != 2 {
		t.Fatalf("ReceiveMessage by the queue URL's host: %v, %d messages", err, len(out.Messages))
	}
	var changes []types.ChangeMessageVisibilityBatchRequestEntry
	var deletes []types.DeleteMessageBatchRequestEntry
	for i, m := range out.Messages {
		id := aws.String(string(rune('a' + i)))
		changes = append(changes, types.ChangeMessageVisibilityBatchRequestEntry{Id: id, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 60})
		deletes = append(deletes, types.DeleteMessageBatchRequestEntry{Id: id, ReceiptHandle: m.ReceiptHandle})
	}
	if ch, err := qc.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &q, Entries: changes}); err != nil || len(ch.Successful) != 2 {
		t.Fatalf("ChangeMessageVisibilityBatch: %v %+v", err, ch)
	}
	if del, err := qc.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &q, Entries: deletes}); err != nil || len(del.Successful) != 2 {
		t.Fatalf("DeleteMessageBatch: %v %+v", err, del)
	}

	// The Query protocol: its answers in XML and in JSON, a QueueUrl in the
	// body and in the query string, and the queue named by the path.
	const v = "&Version=2012-11-05"
	if status, body := postForm(t, e.url+"/", "Action=GetQueueUrl&QueueName=urls"+v, ""); status != 200 || !strings.Contains(body, "<QueueUrl>"+q+"</QueueUrl>") {
		t.Fatalf("Query GetQueueUrl: %d %s, want %s", status, body, q)
	}
	if status, body := postForm(t, e.url+"/", "Action=ListQueues&QueueNamePrefix=urls"+v, "application/json"); status != 200 || !strings.Contains(body, `"`+q+`"`) || strings.Contains(body, e.tapURL) {
		t.Fatalf("Query ListQueues in JSON: %d %s, want %s", status, body, q)
	}
	if status, body := postForm(t, e.url+"/", "Action=SendMessage&QueueUrl="+url.QueryEscape(q)+"&MessageBody=body"+v, ""); status != 200 {
		t.Fatalf("Query SendMessage: %d %s", status, body)
	}
	if status, body := postForm(t, e.url+"/?QueueUrl="+url.QueryEscape(q), "Action=SendMessage&MessageBody=query"+v, ""); status != 200 {
		t.Fatalf("Query SendMessage, QueueUrl in the query string: %d %s", status, body)
	}
	if status, body := postForm(t, e.url+"/"+batontest.Account+"/urls", "Action=ReceiveMessage&MaxNumberOfMessages=10"+v, ""); status != 200 || strings.Count(body, "<Message>") != 2 {
		t.Fatalf("Query ReceiveMessage by the queue's path: %d %s", status, body)
	}
	// A queue URL of the upstream's, as the proxy knows it, passes as it is.
	upstreamURL := e.tapURL + "/" + batontest.Account + "/urls"
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &upstreamURL, MessageBody: aws.String("direct")}); err != nil {
		t.Fatalf("SendMessage naming the upstream's queue URL: %v", err)
	}

	for i := range e.tap.answers() {
		if r := e.tap.answer(i).request; strings.Contains(r, e.url) || strings.Contains(r, url.QueryEscape(e.url)) {
			t.Errorf("the upstream was asked with a queue URL of the proxy: %s", r)
		}
	}
	// Every lease passed the proxy.
	viaProxy, upstream := e.reports(t, "urls")
	if viaProxy.LeasesStarted != 4 || viaProxy.LeasesStarted != upstream.LeasesStarted {
		t.Errorf("leases begun: %d seen by the proxy, %d on the upstream, want 4", viaProxy.LeasesStarted, upstream.LeasesStarted)
	}
}

// With an advertise URL the proxy hands out queue URLs on it, whatever
// host the client called, and maps them back.
func TestAdvertiseURL(t *testing.T) {
	const adv = "http://baton-proxy.example:9325"
	e := newEnv(t, func(c *proxy.Config) { c.AdvertiseURL = adv + "/" })
	ctx := context.Background()
	c := e.client("AKIDAPP", "app-secret")
	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("adv")})
	if err != nil || *out.QueueUrl != adv+"/"+batontest.Account+"/adv" {
		t.Fatalf("CreateQueue: %v %v, want a queue URL on %s", err, out, adv)
	}
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	last := e.tap.answer(e.tap.answers() - 1).request
	if !strings.Contains(last, e.tapURL+"/"+batontest.Account+"/adv") {
		t.Fatalf("the upstream was asked %s, want its own queue URL", last)
	}
}

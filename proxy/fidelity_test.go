package proxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/baton-sqs/baton/batontest"
)

// wireCall is one raw SQS request.
type wireCall struct {
	name   string
	query  bool   // the Query protocol; else AWS JSON
	action string // X-Amz-Target's or the Action parameter
	body   string // JSON, or the form without Action and Version
	accept string
	// same: the answer does not depend on when or where it is asked (no
	// message ids), so a direct request answers the same bytes.
	same bool
}

func (c wireCall) request(t *testing.T, base string) *http.Request {
	t.Helper()
	body, ctype := c.body, "application/x-amz-json-1.0"
	if c.query {
		body, ctype = "Action="+c.action+"&Version=2012-11-05", "application/x-www-form-urlencoded"
		if c.body != "" {
			body += "&" + c.body
		}
	}
	req, err := http.NewRequest(http.MethodPost, base+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	if !c.query {
		req.Header.Set("X-Amz-Target", "AmazonSQS."+c.action)
	}
	if c.accept != "" {
		req.Header.Set("Accept", c.accept)
	}
	return req
}

// answer is what the test compares of a response.
type wireAnswer struct {
	Status      int
	ContentType string
	RequestID   string
	QueryError  string
	Body        string
}

func do(t *testing.T, req *http.Request) wireAnswer {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return wireAnswer{resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("x-amzn-RequestId"), resp.Header.Get("x-amzn-query-error"), string(b)}
}

// masked is a with its request id taken out, for comparing two requests.
func (a wireAnswer) masked() wireAnswer {
	if a.RequestID != "" {
		a.Body = strings.ReplaceAll(a.Body, a.RequestID, "REQUEST-ID")
	}
	a.RequestID = ""
	return a
}

// The proxy answers what the upstream answered, byte for byte but for the
// queue URLs it hands out, which name the proxy, over both protocols and
// the Query protocol's JSON form, errors included; and
// where the answer does not depend on the request, what the upstream
// answers a direct request, but for the request id.
func TestAnswersAsTheUpstream(t *testing.T) {
	e := newEnv(t)
	q := e.up.Queue(t, "fidelity?VisibilityTimeout=30")
	e.up.Queue(t, "fidelity2")
	qj, _ := json.Marshal(q)
	qf := "QueueUrl=" + url.QueryEscape(q)
	missing := strings.Replace(q, "fidelity", "nosuchqueue", 1)
	// Each call's answer through the proxy is the one the upstream gave it
	// (the tap); calls marked same, whose answer cannot depend on the state
	// the call before left, are also asked directly and must read alike.
	calls := []wireCall{
		{name: "json CreateQueue existing", action: "CreateQueue", body: `{"QueueName":"fidelity","Attributes":{"VisibilityTimeout":"30"}}`, same: true},
		{name: "json GetQueueUrl", action: "GetQueueUrl", body: `{"QueueName":"fidelity"}`, same: true},
		{name: "json GetQueueUrl missing", action: "GetQueueUrl", body: `{"QueueName":"nosuchqueue"}`, same: true},
		{name: "json GetQueueAttributes", action: "GetQueueAttributes", body: `{"QueueUrl":` + string(qj) + `,"AttributeNames":["VisibilityTimeout","DelaySeconds"]}`, same: true},
		{name: "json ListQueues", action: "ListQueues", body: `{}`, same: true},
		{name: "json SendMessage", action: "SendMessage", body: `{"QueueUrl":` + string(qj) + `,"MessageBody":"one"}`},
		{name: "json ReceiveMessage", action: "ReceiveMessage", body: `{"QueueUrl":` + string(qj) + `,"MessageSystemAttributeNames":["All"]}`},
		{name: "json DeleteMessage bad handle", action: "DeleteMessage", body: `{"QueueUrl":` + string(qj) + `,"ReceiptHandle":"garbage"}`, same: true},
		{name: "json ChangeMessageVisibility out of range", action: "ChangeMessageVisibility", body: `{"QueueUrl":` + string(qj) + `,"ReceiptHandle":"garbage","VisibilityTimeout":50000}`, same: true},
		{name: "json DeleteMessageBatch empty", action: "DeleteMessageBatch", body: `{"QueueUrl":` + string(qj) + `,"Entries":[]}`, same: true},
		{name: "json SendMessageBatch", action: "SendMessageBatch", body: `{"QueueUrl":` + string(qj) + `,"Entries":[{"Id":"a","MessageBody":"b1"},{"Id":"b","MessageBody":""}]}`},
		{name: "json ChangeMessageVisibilityBatch bad handles", action: "ChangeMessageVisibilityBatch", body: `{"QueueUrl":` + string(qj) + `,"Entries":[{"Id":"a","ReceiptHandle":"garbage","VisibilityTimeout":5}]}`, same: true},
		{name: "json SetQueueAttributes", action: "SetQueueAttributes", body: `{"QueueUrl":` + string(qj) + `,"Attributes":{"DelaySeconds":"0"}}`, same: true},
		{name: "json SetQueueAttributes invalid", action: "SetQueueAttributes", body: `{"QueueUrl":` + string(qj) + `,"Attributes":{"DelaySeconds":"9999"}}`, same: true},
		{name: "json TagQueue", action: "TagQueue", body: `{"QueueUrl":` + string(qj) + `,"Tags":{"team":"a"}}`, same: true},
		{name: "json ListQueueTags", action: "ListQueueTags", body: `{"QueueUrl":` + string(qj) + `}`, same: true},
		{name: "json UntagQueue", action: "UntagQueue", body: `{"QueueUrl":` + string(qj) + `,"TagKeys":["team"]}`, same: true},
		{name: "json AddPermission", action: "AddPermission", body: `{"QueueUrl":` + string(qj) + `,"Label":"l","AWSAccountIds":["111111111111"],"Actions":["SendMessage"]}`},
		{name: "json RemovePermission", action: "RemovePermission", body: `{"QueueUrl":` + string(qj) + `,"Label":"l"}`},
		{name: "json ListDeadLetterSourceQueues", action: "ListDeadLetterSourceQueues", body: `{"QueueUrl":` + string(qj) + `}`, same: true},
		{name: "json ListMessageMoveTasks", action: "ListMessageMoveTasks", body: `{"SourceArn":"arn:aws:sqs:us-east-1:000000000000:nosuchqueue"}`, same: true},
		{name: "json StartMessageMoveTask not a DLQ", action: "StartMessageMoveTask", body: `{"SourceArn":"arn:aws:sqs:us-east-1:000000000000:fidelity"}`, same: true},
		{name: "json CancelMessageMoveTask unknown", action: "CancelMessageMoveTask", body: `{"TaskHandle":"garbage"}`, same: true},
		{name: "json PurgeQueue", action: "PurgeQueue", body: `{"QueueUrl":` + string(qj) + `}`},
		{name: "json malformed", action: "ReceiveMessage", body: `{"QueueUrl":`, same: true},
		{name: "json unknown action", action: "Frobnicate", body: `{}`, same: true},
		{name: "json missing queue", action: "ReceiveMessage", body: `{"QueueUrl":"` + missing + `"}`, same: true},
		{name: "query GetQueueUrl", query: true, action: "GetQueueUrl", body: "QueueName=fidelity", same: true},
		{name: "query GetQueueUrl missing", query: true, action: "GetQueueUrl", body: "QueueName=nosuchqueue", same: true},
		{name: "query GetQueueAttributes", query: true, action: "GetQueueAttributes", body: qf + "&AttributeName.1=All", same: true},
		{name: "query ListQueues", query: true, action: "ListQueues", same: true},
		{name: "query SendMessage", query: true, action: "SendMessage", body: qf + "&MessageBody=two"},
		{name: "query ReceiveMessage", query: true, action: "ReceiveMessage", body: qf + "&AttributeName.1=All"},
		{name: "query DeleteMessage bad handle", query: true, action: "DeleteMessage", body: qf + "&ReceiptHandle=garbage", same: true},
		{name: "query missing parameter", query: true, action: "ChangeMessageVisibility", body: qf, same: true},
		{name: "query unknown action", query: true, action: "Frobnicate", same: true},
		{name: "query json ListQueues", query: true, action: "ListQueues", accept: "application/json", same: true},
		{name: "query json SendMessage", query: true, action: "SendMessage", body: qf + "&MessageBody=three", accept: "application/json"},
		{name: "query json ReceiveMessage", query: true, action: "ReceiveMessage", body: qf, accept: "application/json"},
		{name: "query json missing queue", query: true, action: "GetQueueUrl", body: "QueueName=nosuchqueue", accept: "application/json", same: true},
		{name: "query SendMessageBatch", query: true, action: "SendMessageBatch", body: qf + "&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=q1"},
		{name: "query ListQueueTags", query: true, action: "ListQueueTags", body: qf, same: true},
		{name: "query PurgeQueue again", query: true, action: "PurgeQueue", body: qf, same: true},
		{name: "query DeleteQueue", query: true, action: "DeleteQueue", body: "QueueUrl=" + url.QueryEscape(strings.Replace(q, "fidelity", "fidelity2", 1))},
		{name: "json DeleteQueue gone", action: "DeleteQueue", body: `{"QueueUrl":"` + strings.Replace(q, "fidelity", "fidelity2", 1) + `"}`, same: true},
	}
	sawError := false
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			n := e.tap.answers()
			got := do(t, c.request(t, e.url))
			// The first the upstream answered after n: the proxy may ask
			// it for the queue's VisibilityTimeout after the call.
			up := e.tap.answer(n)
			want := wireAnswer{up.status, up.header.Get("Content-Type"), up.header.Get("x-amzn-RequestId"), up.header.Get("x-amzn-query-error"),
				strings.ReplaceAll(string(up.body), e.tapURL+"/", e.url+"/")}
			if got != want {
				t.Fatalf("through the proxy:\n%+v\nthe upstream answered it:\n%+v", got, want)
			}
			sawError = sawError || got.Status >= 400
			if !c.same {
				return
			}
			req := c.request(t, e.up.URL())
			b, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(b))
			sum := sha256.Sum256(b)
			creds := aws.Credentials{AccessKeyID: upstreamKey, SecretAccessKey: upstreamSecret}
			if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "sqs", batontest.Region, e.clock.Now()); err != nil {
				t.Fatal(err)
			}
			direct := do(t, req)
			// The upstream names its queues by the host it was asked at,
			// the proxy by its own.
			got.Body = strings.ReplaceAll(got.Body, e.url+"/", e.up.URL()+"/")
			if got.masked() != direct.masked() {
				t.Fatalf("through the proxy:\n%+v\ndirect:\n%+v", got.masked(), direct.masked())
			}
		})
	}
	if !sawError {
		t.Fatal("no call answered an error")
	}
	// A queue the upstream said does not exist is not remembered.
	metrics := do(t, must(http.NewRequest(http.MethodGet, e.url+"/metrics", nil)))
	if !strings.Contains(metrics.Body, `queue="fidelity"`) || strings.Contains(metrics.Body, "nosuchqueue") {
		t.Errorf("/metrics:\n%s", metrics.Body)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

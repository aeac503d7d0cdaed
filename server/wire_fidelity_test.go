package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// These tests pin wire details in which Baton once answered otherwise than
// Amazon SQS: which members a response leaves out, how an empty XML result
// is spelled.

// TestBatchOutputLeavesOutEmptyLists checks that a batch answer in JSON
// carries only the lists it has entries for: an all-success answer has no
// Failed member and an all-failure one no Successful member, as SQS
// answers, where Baton wrote "Failed":[] and "Successful":[]. The three
// batch actions share the shape (SendMessageBatchResult,
// DeleteMessageBatchResult, ChangeMessageVisibilityBatchResult in the SQS
// API Reference).
func TestBatchOutputLeavesOutEmptyLists(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	ctx := context.Background()
	q := srv.MustCreateQueue(t, "batches", nil)

	members := func(op string, body map[string]any) map[string]any {
		t.Helper()
		resp, out := rawJSON(t, srv.URL, op, body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: HTTP %d %v", op, resp.StatusCode, out)
		}
		return out
	}
	only := func(op string, out map[string]any, want string) {
		t.Helper()
		if len(out) != 1 {
			t.Errorf("%s: members %v, want only %s", op, out, want)
		}
		if l, ok := out[want].([]any); !ok || len(l) == 0 {
			t.Errorf("%s: %s = %v, want a non-empty list", op, want, out[want])
		}
	}

	out := members("SendMessageBatch", map[string]any{"QueueUrl": q, "Entries": []map[string]any{
		{"Id": "a", "MessageBody": "one"}, {"Id": "b", "MessageBody": "two"},
	}})
	only("SendMessageBatch all sent", out, "Successful")
	out = members("SendMessageBatch", map[string]any{"QueueUrl": q, "Entries": []map[string]any{
		{"Id": "a", "MessageBody": "x", "DelaySeconds": 901},
	}})
	only("SendMessageBatch none sent", out, "Failed")

	recv, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q), MaxNumberOfMessages: 2, VisibilityTimeout: 60})
	if err != nil || len(recv.Messages) != 2 {
		t.Fatalf("receive: %v, %d messages, want 2", err, len(recv.Messages))
	}
	h0, h1 := *recv.Messages[0].ReceiptHandle, *recv.Messages[1].ReceiptHandle

	out = members("ChangeMessageVisibilityBatch", map[string]any{"QueueUrl": q, "Entries": []map[string]any{
		{"Id": "a", "ReceiptHandle": h0, "VisibilityTimeout": 30},
	}})
	only("ChangeMessageVisibilityBatch all changed", out, "Successful")
	out = members("ChangeMessageVisibilityBatch", map[string]any{"QueueUrl": q, "Entries": []map[string]any{
		{"Id": "a", "ReceiptHandle": "not-a-handle", "VisibilityTimeout": 30},
	}})
	only("ChangeMessageVisibilityBatch none changed", out, "Failed")

	out = members("DeleteMessageBatch", map[string]any{"QueueUrl": q, "Entries": []map[string]any{
		{"Id": "a", "ReceiptHandle": h0}, {"Id": "b", "ReceiptHandle": h1},
	}})
	only("DeleteMessageBatch all deleted", out, "Successful")
	out = members("DeleteMessageBatch", map[string]any{"QueueUrl": q, "Entries": []map[string]any{
		{"Id": "a", "ReceiptHandle": "not-a-handle"},
	}})
	only("DeleteMessageBatch none deleted", out, "Failed")

	// Through the SDK the absent list is a nil slice, and a mixed answer
	// still carries both.
	mixed, err := srv.Client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q), Entries: []types.SendMessageBatchRequestEntry{
		{Id: aws.String("ok"), MessageBody: aws.String("fine")},
		{Id: aws.String("bad"), MessageBody: aws.String("late"), DelaySeconds: 901},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(mixed.Successful) != 1 || len(mixed.Failed) != 1 {
		t.Errorf("mixed batch: %d successful, %d failed; want 1 and 1", len(mixed.Successful), len(mixed.Failed))
	}
}

// TestQueryEmptyResultIsSelfClosed checks that a Query result without
// members is written <OpResult/>, as SQS writes an empty ReceiveMessage or
// ListQueues result, not <OpResult></OpResult>.
func TestQueryEmptyResultIsSelfClosed(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	q := c.createQueue("quiet")
	for _, tc := range []struct {
		action string
		kv     []string
	}{
		{"ReceiveMessage", []string{"Action", "ReceiveMessage", "QueueUrl", q, "WaitTimeSeconds", "0"}},
		{"ListQueues", []string{"Action", "ListQueues", "QueueNamePrefix", "nothing-by-this-name"}},
		{"ListQueueTags", []string{"Action", "ListQueueTags", "QueueUrl", q}},
		{"ListDeadLetterSourceQueues", []string{"Action", "ListDeadLetterSourceQueues", "QueueUrl", q}},
	} {
		r := c.post("/", tc.kv...)
		r.result(t, tc.action)
		if want := "<" + tc.action + "Result/>"; !strings.Contains(string(r.body), want) {
			t.Errorf("%s: %s, want %s", tc.action, r.body, want)
		}
	}
	// A result with members is written in full.
	r := c.post("/", "Action", "GetQueueUrl", "QueueName", "quiet")
	if !strings.Contains(string(r.body), "<GetQueueUrlResult><QueueUrl>") || !strings.Contains(string(r.body), "</GetQueueUrlResult>") {
		t.Errorf("GetQueueUrl: %s", r.body)
	}
}

// TestSessionTokenIsRefused checks that an SDK client signing with a
// configured key and a session token (a stale AWS_SESSION_TOKEN beside
// permanent keys) gets AWS's answer: 403 InvalidClientTokenId, "The security
// token included in the request is invalid." Baton's keys are long-term
// keys and have no session token, so any token is invalid.
func TestSessionTokenIsRefused(t *testing.T) {
	t.Parallel()
	key := sigv4.Credential{AccessKeyID: "AKIDTOKEN", SecretAccessKey: "token-test-secret", Account: testutil.Account}
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{key}})
	ctx := context.Background()
	if _, err := srv.Client.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatalf("without a token: %v", err)
	}
	opts := srv.Client.Options()
	opts.Credentials = credentials.NewStaticCredentialsProvider(key.AccessKeyID, key.SecretAccessKey, "FwoGZXIvYXdzEXAMPLETOKEN")
	_, err := sqs.New(opts).ListQueues(ctx, &sqs.ListQueuesInput{})
	wantAPIError(t, err, "InvalidClientTokenId", 403)
	var ae smithy.APIError
	if errors.As(err, &ae) && ae.ErrorMessage() != "The security token included in the request is invalid." {
		t.Errorf("message = %q", ae.ErrorMessage())
	}
}

// TestOversizeRequestIs413 checks that a request body over the server's cap
// is answered HTTP 413, as AWS answers a request larger than it reads (the
// AWS SDK for Java reports "Status Code: 413; Error Code: 413 Request Entity
// Too Large"), where Baton answered 400. Baton writes the error in the
// request's protocol as RequestEntityTooLarge, with or without
// authentication (which reads the body to check its hash).
func TestOversizeRequestIs413(t *testing.T) {
	t.Parallel()
	key := sigv4.Credential{AccessKeyID: "AKIDBIG", SecretAccessKey: "big-secret", Account: testutil.Account}
	for name, srv := range map[string]*testutil.Server{
		"open":          testutil.StartServer(t),
		"authenticated": testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{key}}),
	} {
		q := srv.MustCreateQueue(t, "big", nil)
		var entries []types.SendMessageBatchRequestEntry
		for i := range 5 {
			entries = append(entries, types.SendMessageBatchRequestEntry{
				Id: aws.String(strings.Repeat("e", i+1)), MessageBody: aws.String(strings.Repeat("x", 1<<20)),
			})
		}
		_, err := srv.Client.SendMessageBatch(context.Background(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(q), Entries: entries})
		t.Run(name, func(t *testing.T) { wantAPIError(t, err, "RequestEntityTooLarge", 413) })
	}
}

// TestJSONContentTypeRequired checks that an operation named in X-Amz-Target
// is run only when the body is declared AWS JSON (application/x-amz-json-1.0
// or 1.1, parameters ignored, as the Smithy AWS JSON protocol tests
// require). In any other media type AWS finds no operation and answers 404
// <UnknownOperationException/>, as an AWS JSON service was seen answering
// a request sent as application/octet-stream; Baton used to run it.
func TestJSONContentTypeRequired(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	q := srv.MustCreateQueue(t, "typed", nil)
	body := `{"QueueUrl":"` + q + `","MessageBody":"typed"}`
	post := func(ctype string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.Header.Set("X-Amz-Target", "AmazonSQS.SendMessage")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
	}
	for _, ct := range []string{"", "application/json", "application/x-www-form-urlencoded", "text/plain", "application/octet-stream", "application/x-amz-json-1.0x", "not a media type"} {
		status, ctype, b := post(ct)
		if status != 404 || ctype != "text/xml" || b != "<UnknownOperationException/>" {
			t.Errorf("Content-Type %q: %d %s %q, want 404 text/xml <UnknownOperationException/>", ct, status, ctype, b)
		}
	}
	sent := 0
	for _, ct := range []string{"application/x-amz-json-1.0", "application/x-amz-json-1.0; charset=utf-8", "application/x-amz-json-1.1", "Application/X-Amz-Json-1.0"} {
		status, ctype, b := post(ct)
		if status != 200 || ctype != "application/x-amz-json-1.0" {
			t.Errorf("Content-Type %q: %d %s %q, want 200", ct, status, ctype, b)
			continue
		}
		sent++
	}
	attrs, err := srv.Client.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q), AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := attrs.Attributes["ApproximateNumberOfMessages"], strconv.Itoa(sent); got != want {
		t.Errorf("queue holds %s messages, want %s: only JSON-typed requests may send", got, want)
	}
}

// TestQueryMisnumberedBatchIsRefused checks, end to end, that a Query batch
// whose entries skip a number is refused whole with 400
// InvalidParameterValue naming the missing entry, and sends nothing. Baton
// used to send the entries before the gap, drop the rest and answer 200.
func TestQueryMisnumberedBatchIsRefused(t *testing.T) {
	t.Parallel()
	c := newQueryClient(t)
	q := c.createQueue("gaps")
	msg := c.post("/", "Action", "SendMessageBatch", "QueueUrl", q,
		"SendMessageBatchRequestEntry.1.Id", "a", "SendMessageBatchRequestEntry.1.MessageBody", "one",
		"SendMessageBatchRequestEntry.3.Id", "c", "SendMessageBatchRequestEntry.3.MessageBody", "three",
	).fail(t, 400, "InvalidParameterValue")
	if !strings.Contains(msg, "SendMessageBatchRequestEntry.2 is missing") {
		t.Errorf("message %q does not name the missing entry", msg)
	}
	msg = c.post("/", "Action", "SendMessageBatch", "QueueUrl", q,
		"SendMessageBatchRequestEntry.0.Id", "z", "SendMessageBatchRequestEntry.0.MessageBody", "zero",
		"SendMessageBatchRequestEntry.1.Id", "a", "SendMessageBatchRequestEntry.1.MessageBody", "one",
	).fail(t, 400, "InvalidParameterValue")
	if !strings.Contains(msg, "SendMessageBatchRequestEntry.0") {
		t.Errorf("message %q does not name the entry numbered 0", msg)
	}
	if n := c.counts(q); n != [3]int{} {
		t.Errorf("queue counts %v after refused batches, want none sent", n)
	}
}

// queryJSON sends a Query request (GET with the parameters in the query
// string, else a form POST) with the given Accept header and returns the
// status, Content-Type and body.
func queryJSON(t *testing.T, base, method, accept string, kv ...string) (int, string, []byte) {
	t.Helper()
	form := queryForm(kv...).Encode()
	var req *http.Request
	var err error
	if method == http.MethodGet {
		req, err = http.NewRequest(method, base+"/?"+form, nil)
	} else {
		req, err = http.NewRequest(method, base+"/", strings.NewReader(form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), b
}

// TestQueryAcceptJSON checks that a Query request accepting
// application/json is answered in the JSON SQS writes for it, which mirrors
// the XML document rather than following the AWS JSON protocol: the
// <Action>Response object holding <Action>Result (every member, null when
// absent, lists named as SQS names them there) and ResponseMetadata, or an
// Error object and RequestId. These are the shapes SQS gives API Gateway's
// SQS integrations, for example
// {"SendMessageResponse":{"ResponseMetadata":{"RequestId":"…"},"SendMessageResult":{"MD5OfMessageAttributes":null,"MD5OfMessageBody":"…","MD5OfMessageSystemAttributes":null,"MessageId":"…","SequenceNumber":null}}}
// and {"Error":{"Code":"AccessDenied","Message":"…","Type":"Sender"},"RequestId":"…"}.
// Baton answered XML whatever the request accepted.
func TestQueryAcceptJSON(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	q := srv.MustCreateQueue(t, "json-accepted", nil)
	const accept = "application/json"
	uuid := `[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`
	md5 := `[0-9a-f]{32}`
	check := func(what string, status int, ctype string, body []byte, wantStatus int, pattern string) {
		t.Helper()
		if status != wantStatus || ctype != "application/json" {
			t.Errorf("%s: HTTP %d %s, want %d application/json: %s", what, status, ctype, wantStatus, body)
		}
		if !regexp.MustCompile(`^` + pattern + `$`).Match(body) {
			t.Errorf("%s: body\n%s\ndoes not match\n%s", what, body, pattern)
		}
	}
	meta := `"ResponseMetadata":\{"RequestId":"` + uuid + `"\}`

	status, ctype, body := queryJSON(t, srv.URL, http.MethodGet, accept, "Action", "ReceiveMessage", "QueueUrl", q, "WaitTimeSeconds", "0")
	check("empty ReceiveMessage", status, ctype, body, 200,
		`\{"ReceiveMessageResponse":\{"ReceiveMessageResult":\{"messages":null\},`+meta+`\}\}`)

	status, ctype, body = queryJSON(t, srv.URL, http.MethodPost, accept, "Action", "SendMessage", "QueueUrl", q, "MessageBody", "hello <json> & \"you\"")
	check("SendMessage", status, ctype, body, 200,
		`\{"SendMessageResponse":\{`+meta+`,"SendMessageResult":\{"MD5OfMessageAttributes":null,"MD5OfMessageBody":"`+md5+
			`","MD5OfMessageSystemAttributes":null,"MessageId":"`+uuid+`","SequenceNumber":null\}\}\}`)

	status, ctype, body = queryJSON(t, srv.URL, http.MethodGet, accept, "Action", "ReceiveMessage", "QueueUrl", q, "VisibilityTimeout", "0")
	check("ReceiveMessage", status, ctype, body, 200,
		`\{"ReceiveMessageResponse":\{"ReceiveMessageResult":\{"messages":\[\{"Attributes":null,"Body":"hello <json> & \\"you\\"","MD5OfBody":"`+md5+
			`","MD5OfMessageAttributes":null,"MessageAttributes":null,"MessageId":"`+uuid+`","ReceiptHandle":"[^"]+"\}\]\},`+meta+`\}\}`)

	status, ctype, body = queryJSON(t, srv.URL, http.MethodGet, accept, "Action", "ListQueues")
	check("ListQueues", status, ctype, body, 200,
		`\{"ListQueuesResponse":\{"ListQueuesResult":\{"NextExclusiveStartQueueName":null,"NextToken":null,"queueUrls":\["`+regexp.QuoteMeta(q)+`"\]\},`+meta+`\}\}`)

	status, ctype, body = queryJSON(t, srv.URL, http.MethodGet, accept, "Action", "ListQueues", "QueueNamePrefix", "none-such")
	check("empty ListQueues", status, ctype, body, 200,
		`\{"ListQueuesResponse":\{"ListQueuesResult":\{"NextExclusiveStartQueueName":null,"NextToken":null,"queueUrls":null\},`+meta+`\}\}`)

	status, ctype, body = queryJSON(t, srv.URL, http.MethodPost, accept, "Action", "TagQueue", "QueueUrl", q, "Tag.1.Key", "empty", "Tag.1.Value", "")
	check("TagQueue (no output)", status, ctype, body, 200, `\{"TagQueueResponse":\{`+meta+`\}\}`)
	status, ctype, body = queryJSON(t, srv.URL, http.MethodGet, accept, "Action", "ListQueueTags", "QueueUrl", q)
	check("ListQueueTags", status, ctype, body, 200, `\{"ListQueueTagsResponse":\{"ListQueueTagsResult":\{"Tags":\{"empty":""\}\},`+meta+`\}\}`)

	// Errors, from the operation and from parsing the request.
	status, ctype, body = queryJSON(t, srv.URL, http.MethodGet, accept, "Action", "GetQueueUrl", "QueueName", "missing")
	check("GetQueueUrl of a missing queue", status, ctype, body, 400,
		`\{"Error":\{"Code":"AWS.SimpleQueueService.NonExistentQueue","Message":"The specified queue does not exist for this wsdl version.","Type":"Sender"\},"RequestId":"`+uuid+`"\}`)
	status, ctype, body = queryJSON(t, srv.URL, http.MethodPost, accept, "Action", "SendPigeon")
	check("unknown action", status, ctype, body, 400,
		`\{"Error":\{"Code":"InvalidAction","Message":"The action SendPigeon is not valid for this endpoint.","Type":"Sender"\},"RequestId":"`+uuid+`"\}`)

	// Which Accept headers ask for JSON.
	for _, tc := range []struct {
		accept string
		json   bool
	}{
		{"", false},
		{"*/*", false},
		{"text/xml", false},
		{"application/json", true},
		{"Application/JSON; charset=utf-8", true},
		{"application/json, text/xml, application/xml, */*", true},
		{"text/xml, application/json", false},
		{"text/xml;q=0.5, application/json", true},
		{"application/json;q=0.5, application/xml", false},
		{"application/json;q=0", false},
		{"application/json;q=bogus, text/html", false},
	} {
		_, ctype, body := queryJSON(t, srv.URL, http.MethodGet, tc.accept, "Action", "GetQueueUrl", "QueueName", "json-accepted")
		if got := ctype == "application/json"; got != tc.json {
			t.Errorf("Accept %q: Content-Type %s, want JSON %v: %s", tc.accept, ctype, tc.json, body)
		}
	}
}

// TestQueryAcceptJSONAuthenticated checks that an authentication failure of
// a Query request accepting JSON is answered in JSON too.
func TestQueryAcceptJSONAuthenticated(t *testing.T) {
	t.Parallel()
	key := sigv4.Credential{AccessKeyID: "AKIDJSON", SecretAccessKey: "json-secret", Account: testutil.Account}
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{key}})
	status, ctype, body := queryJSON(t, srv.URL, http.MethodGet, "application/json", "Action", "ListQueues")
	if status != 403 || ctype != "application/json" ||
		!regexp.MustCompile(`^\{"Error":\{"Code":"MissingAuthenticationToken","Message":"[^"]+","Type":"Sender"\},"RequestId":"[0-9a-f-]{36}"\}$`).Match(body) {
		t.Errorf("unsigned ListQueues: %d %s %s", status, ctype, body)
	}
}

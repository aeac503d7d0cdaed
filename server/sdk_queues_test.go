package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/internal/testutil"
)

var ctx = context.Background()

func TestCreateQueue(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client

	out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String("orders"),
		Attributes: map[string]string{"VisibilityTimeout": "45", "DelaySeconds": "2"},
		Tags:       map[string]string{"team": "billing"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := *out.QueueUrl, srv.URL+"/000000000000/orders"; got != want {
		t.Errorf("QueueUrl = %q, want %q", got, want)
	}

	// Same name with equal supplied attributes (or none) returns the queue.
	for _, attrs := range []map[string]string{nil, {"VisibilityTimeout": "45"}, {"DelaySeconds": "2", "VisibilityTimeout": "45"}} {
		again, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: attrs})
		if err != nil {
			t.Fatalf("idempotent create with %v: %v", attrs, err)
		}
		if *again.QueueUrl != *out.QueueUrl {
			t.Errorf("idempotent create URL = %q, want %q", *again.QueueUrl, *out.QueueUrl)
		}
	}
	_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders"), Attributes: map[string]string{"VisibilityTimeout": "46"}})
	wantAPIError(t, err, "QueueAlreadyExists", http.StatusBadRequest)

	tags, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: out.QueueUrl})
	if err != nil {
		t.Fatal(err)
	}
	if tags.Tags["team"] != "billing" {
		t.Errorf("tags = %v, want team=billing", tags.Tags)
	}
}

func TestCreateQueueErrors(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	tests := []struct {
		name   string
		queue  string
		attrs  map[string]string
		code   string
		status int
	}{
		{"empty name", "", nil, "MissingParameter", 400},
		{"bad character", "a b", nil, "InvalidParameterValue", 400},
		{"too long", strings.Repeat("a", 81), nil, "InvalidParameterValue", 400},
		{"FifoQueue on standard", "std", map[string]string{"FifoQueue": "false"}, "InvalidAttributeName", 400},
		{"ContentBasedDeduplication on standard", "std", map[string]string{"ContentBasedDeduplication": "true"}, "InvalidAttributeName", 400},
		{"DeduplicationScope on standard", "std", map[string]string{"DeduplicationScope": "queue"}, "InvalidAttributeName", 400},
		{"unknown attribute", "std", map[string]string{"Colour": "blue"}, "InvalidAttributeName", 400},
		{"read-only attribute", "std", map[string]string{"QueueArn": "x"}, "InvalidAttributeName", 400},
		{"visibility too long", "std", map[string]string{"VisibilityTimeout": "43201"}, "InvalidAttributeValue", 400},
		{"delay not a number", "std", map[string]string{"DelaySeconds": "soon"}, "InvalidAttributeValue", 400},
		{"message size too small", "std", map[string]string{"MaximumMessageSize": "1023"}, "InvalidAttributeValue", 400},
		{"retention too short", "std", map[string]string{"MessageRetentionPeriod": "59"}, "InvalidAttributeValue", 400},
		{"wait too long", "std", map[string]string{"ReceiveMessageWaitTimeSeconds": "21"}, "InvalidAttributeValue", 400},
		{"policy not JSON", "std", map[string]string{"Policy": "{"}, "InvalidAttributeValue", 400},
		{"redrive count out of range", "std", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":0}`}, "InvalidParameterValue", 400},
		{"redrive target missing", "std", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:nope","maxReceiveCount":3}`}, "InvalidParameterValue", 400},
		{"fifo name without FifoQueue", "q.fifo", nil, "InvalidParameterValue", 400},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := srv.Client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(tt.queue), Attributes: tt.attrs})
			wantAPIError(t, err, tt.code, tt.status)
		})
	}
	t.Run("reserved tag", func(t *testing.T) {
		t.Parallel()
		_, err := srv.Client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("tagged"), Tags: map[string]string{"aws:x": "y"}})
		wantAPIError(t, err, "InvalidParameterValue", 400)
	})
}

func TestDeleteQueueAndRecreate(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "short-lived", nil)
	if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &url}); err != nil {
		t.Fatal(err)
	}
	_, err := c.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("short-lived")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	_, err = c.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &url})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
	_, err = c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)

	_, err = c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("short-lived")})
	wantAPIError(t, err, "AWS.SimpleQueueService.QueueDeletedRecently", 400)
	srv.Clock.Advance(61 * time.Second)
	srv.MustCreateQueue(t, "short-lived", nil)
	attrs, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := attrs.Attributes["ApproximateNumberOfMessages"]; got != "0" {
		t.Errorf("recreated queue holds %s messages, want 0", got)
	}
}

func TestGetQueueURLResolution(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	url := srv.MustCreateQueue(t, "lookup", nil)
	out, err := srv.Client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("lookup")})
	if err != nil {
		t.Fatal(err)
	}
	if *out.QueueUrl != url {
		t.Errorf("GetQueueUrl = %q, want %q", *out.QueueUrl, url)
	}
	// The host of a queue URL is ignored and a bare name is accepted.
	for _, u := range []string{"http://elsewhere.example:4566/000000000000/lookup", "lookup", "/000000000000/lookup"} {
		if _, err := srv.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u)}); err != nil {
			t.Errorf("QueueUrl %q: %v", u, err)
		}
	}
	_, err = srv.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String("http://h/a/b/c")})
	wantAPIError(t, err, "InvalidAddress", 404)
	// A URL without a path names no queue, and SQS says so: QueueDoesNotExist
	// (Query code AWS.SimpleQueueService.NonExistentQueue, 400), the error
	// the SQS API Reference lists for an unknown QueueUrl.
	for _, u := range []string{"http://h", "http://h/", "https://sqs.us-east-1.amazonaws.com"} {
		_, err = srv.Client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(u)})
		wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
		var nq *types.QueueDoesNotExist
		if !errors.As(err, &nq) {
			t.Errorf("QueueUrl %q: %v, want a *types.QueueDoesNotExist", u, err)
		}
	}
}

func TestListQueues(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	empty, err := c.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if empty.QueueUrls != nil || empty.NextToken != nil {
		t.Errorf("empty list = %v / %v, want nothing", empty.QueueUrls, empty.NextToken)
	}
	var want []string
	for i := range 7 {
		want = append(want, srv.MustCreateQueue(t, "app-"+strconv.Itoa(i), nil))
	}
	srv.MustCreateQueue(t, "other", nil)
	all, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("app-")})
	if err != nil {
		t.Fatal(err)
	}
	if !equalStrings(all.QueueUrls, want) || all.NextToken != nil {
		t.Errorf("prefix list = %v (token %v), want %v and no token", all.QueueUrls, all.NextToken, want)
	}
	var pages [][]string
	var token *string
	for {
		page, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("app-"), MaxResults: aws.Int32(3), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, page.QueueUrls)
		if token = page.NextToken; token == nil {
			break
		}
	}
	var got []string
	for _, p := range pages {
		got = append(got, p...)
	}
	if len(pages) != 3 || !equalStrings(got, want) {
		t.Errorf("pages = %v, want 3 pages of %v", pages, want)
	}
	_, err = c.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1001)})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	_, err = c.ListQueues(ctx, &sqs.ListQueuesInput{MaxResults: aws.Int32(1), NextToken: aws.String("!!!")})
	wantAPIError(t, err, "InvalidParameterValue", 400)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	a, b = append([]string(nil), a...), append([]string(nil), b...)
	sort.Strings(a)
	sort.Strings(b)
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestQueueAttributes(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "attrs", nil)

	all, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	created := strconv.FormatInt(testutil.Epoch.Unix(), 10)
	want := map[string]string{
		"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesDelayed": "0",
		"ApproximateNumberOfMessagesNotVisible": "0", "CreatedTimestamp": created,
		"DelaySeconds": "0", "LastModifiedTimestamp": created, "MaximumMessageSize": "1048576",
		"MessageRetentionPeriod": "345600", "QueueArn": "arn:aws:sqs:us-east-1:000000000000:attrs",
		"ReceiveMessageWaitTimeSeconds": "0", "SqsManagedSseEnabled": "true", "VisibilityTimeout": "30",
	}
	if !maps.Equal(all.Attributes, want) {
		t.Errorf("All = %v, want %v", all.Attributes, want)
	}
	none, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url})
	if err != nil {
		t.Fatal(err)
	}
	if len(none.Attributes) != 0 {
		t.Errorf("no names = %v, want nothing", none.Attributes)
	}

	srv.Clock.Advance(10 * time.Second)
	policy := `{"Version":"2012-10-17","Statement":[]}`
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: map[string]string{
		"VisibilityTimeout": "5", "Policy": policy,
	}}); err != nil {
		t.Fatal(err)
	}
	some, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"VisibilityTimeout", "Policy", "LastModifiedTimestamp"}})
	if err != nil {
		t.Fatal(err)
	}
	want = map[string]string{"VisibilityTimeout": "5", "Policy": policy, "LastModifiedTimestamp": strconv.FormatInt(testutil.Epoch.Unix()+10, 10)}
	if !maps.Equal(some.Attributes, want) {
		t.Errorf("after set = %v, want %v", some.Attributes, want)
	}
	// An empty Policy removes it.
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: map[string]string{"Policy": ""}}); err != nil {
		t.Fatal(err)
	}
	after, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := after.Attributes["Policy"]; ok {
		t.Errorf("Policy still present after removal: %v", after.Attributes)
	}

	_, err = c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"Colour"}})
	wantAPIError(t, err, "InvalidAttributeName", 400)
	_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: map[string]string{"QueueArn": "x"}})
	wantAPIError(t, err, "InvalidAttributeName", 400)
	_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: map[string]string{"DelaySeconds": "901"}})
	wantAPIError(t, err, "InvalidAttributeValue", 400)
	_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: map[string]string{"FifoQueue": "true"}})
	wantAPIError(t, err, "InvalidAttributeName", 400)
	// The SDK refuses to send a request without Attributes; send it raw.
	resp, _ := rawJSON(t, srv.URL, "SetQueueAttributes", map[string]string{"QueueUrl": url})
	if got := resp.Header.Get("x-amzn-query-error"); got != "MissingParameter;Sender" {
		t.Errorf("set without attributes: %q, want MissingParameter;Sender", got)
	}
}

func TestApproximateCounts(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "counts", nil)
	for _, delay := range []int32{0, 0, 0, 10} {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("m"), DelaySeconds: delay}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url}); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, c, url, 2, 1, 1)
	srv.Clock.Advance(30 * time.Second) // lease and delay both over
	checkCounts(t, c, url, 4, 0, 0)
}

func checkCounts(tb testing.TB, c *sqs.Client, url string, visible, inFlight, delayed int) {
	tb.Helper()
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []types.QueueAttributeName{"All"}})
	if err != nil {
		tb.Fatal(err)
	}
	got := [3]string{out.Attributes["ApproximateNumberOfMessages"], out.Attributes["ApproximateNumberOfMessagesNotVisible"], out.Attributes["ApproximateNumberOfMessagesDelayed"]}
	want := [3]string{strconv.Itoa(visible), strconv.Itoa(inFlight), strconv.Itoa(delayed)}
	if got != want {
		tb.Errorf("visible/in flight/delayed = %v, want %v", got, want)
	}
}

func TestPurgeQueue(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "purge", nil)
	for _, delay := range []int32{0, 0, 30} {
		if _, err := c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("m"), DelaySeconds: delay}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &url}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &url}); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, c, url, 0, 0, 0)
	_, err := c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &url})
	wantAPIError(t, err, "AWS.SimpleQueueService.PurgeQueueInProgress", 403)
	srv.Clock.Advance(60 * time.Second)
	if _, err := c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &url}); err != nil {
		t.Errorf("purge after 60 s: %v", err)
	}
	_, err = c.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String("missing")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
}

func TestTags(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "tags", nil)
	out, err := c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: &url})
	if err != nil {
		t.Fatal(err)
	}
	if out.Tags != nil {
		t.Errorf("tags of a new queue = %v, want none", out.Tags)
	}
	if _, err := c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: &url, Tags: map[string]string{"env": "prod", "team": "a", "empty": ""}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: &url, Tags: map[string]string{"team": "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: &url, TagKeys: []string{"env", "never-set"}}); err != nil {
		t.Fatal(err)
	}
	out, err = c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: &url})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"team": "b", "empty": ""}; !maps.Equal(out.Tags, want) {
		t.Errorf("tags = %v, want %v", out.Tags, want)
	}
	_, err = c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: &url, Tags: map[string]string{strings.Repeat("k", 129): "v"}})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	_, err = c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: &url, Tags: map[string]string{"k": strings.Repeat("v", 257)}})
	wantAPIError(t, err, "InvalidParameterValue", 400)
	// The limits count characters, not bytes: 128 and 256 two-byte ones fit.
	wide := map[string]string{strings.Repeat("é", 128): strings.Repeat("ü", 256)}
	if _, err := c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: &url, Tags: wide}); err != nil {
		t.Errorf("tag of 128 and 256 two-byte characters: %v", err)
	}
	// The SDK refuses to send these without the required member; send raw.
	for _, op := range []string{"TagQueue", "UntagQueue"} {
		resp, _ := rawJSON(t, srv.URL, op, map[string]string{"QueueUrl": url})
		if got := resp.Header.Get("x-amzn-query-error"); got != "MissingParameter;Sender" {
			t.Errorf("%s without tags: %q, want MissingParameter;Sender", op, got)
		}
	}
	_, err = c.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String("missing")})
	wantAPIError(t, err, "AWS.SimpleQueueService.NonExistentQueue", 400)
}

// The JSON protocol's error body and headers, seen without an SDK.
func TestJSONErrorShape(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	tests := []struct {
		op, typ, header string
		body            any
		status          int
	}{
		{"GetQueueUrl", "com.amazonaws.sqs#QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue;Sender", map[string]string{"QueueName": "nope"}, 400},
		{"SendMessage", "com.amazon.coral.service#MissingRequiredParameterException", "MissingParameter;Sender", map[string]string{"QueueUrl": "nope2"}, 400},
		{"NoSuchAction", "com.amazon.coral.service#UnknownOperationException", "UnknownOperationException;Sender", map[string]string{}, 400},
		{"ListQueues", "com.amazon.coral.service#SerializationException", "SerializationException;Sender", map[string]any{"MaxResults": "ten"}, 400},
	}
	srv.MustCreateQueue(t, "nope2", nil)
	for _, tt := range tests {
		resp, body := rawJSON(t, srv.URL, tt.op, tt.body)
		if resp.StatusCode != tt.status {
			t.Errorf("%s: status %d, want %d", tt.op, resp.StatusCode, tt.status)
		}
		if body["__type"] != tt.typ {
			t.Errorf("%s: __type %v, want %s", tt.op, body["__type"], tt.typ)
		}
		if msg, _ := body["message"].(string); msg == "" {
			t.Errorf("%s: empty message in %v", tt.op, body)
		}
		if got := resp.Header.Get("x-amzn-query-error"); got != tt.header {
			t.Errorf("%s: x-amzn-query-error %q, want %q", tt.op, got, tt.header)
		}
		if resp.Header.Get("x-amzn-RequestId") == "" {
			t.Errorf("%s: no x-amzn-RequestId", tt.op)
		}
	}
	// Success: absent members are omitted and the request id is set.
	resp, body := rawJSON(t, srv.URL, "ReceiveMessage", map[string]string{"QueueUrl": "nope2"})
	if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("x-amzn-RequestId") == "" {
		t.Errorf("empty receive: status %d body %v request id %q, want 200 {} and an id", resp.StatusCode, body, resp.Header.Get("x-amzn-RequestId"))
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/x-amz-json-1.0" {
		t.Errorf("Content-Type = %q", ct)
	}
}

// policyWith is a queue Policy of n statements, each granting actions to
// principals accounts, with conditions conditions in the first.
func policyWith(n, actions, principals, conditions int) string {
	var stmts []map[string]any
	for i := range n {
		acts := make([]string, actions)
		for j := range acts {
			acts[j] = fmt.Sprintf("sqs:Action%d", j)
		}
		accts := make([]string, principals)
		for j := range accts {
			accts[j] = fmt.Sprintf("%012d", j+1)
		}
		st := map[string]any{"Sid": fmt.Sprintf("s%d", i), "Effect": "Allow",
			"Principal": map[string]any{"AWS": accts}, "Action": acts, "Resource": "*"}
		if i == 0 && conditions > 0 {
			keys := map[string]string{}
			for j := range conditions {
				keys[fmt.Sprintf("aws:Key%d", j)] = "v"
			}
			st["Condition"] = map[string]any{"StringEquals": keys}
		}
		stmts = append(stmts, st)
	}
	b, _ := json.Marshal(map[string]any{"Version": "2012-10-17", "Statement": stmts})
	return string(b)
}

// A Policy within SQS's limits is kept; one beyond them is refused, and
// AddPermission cannot grow one past them.
func TestPolicyLimits(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	url := srv.MustCreateQueue(t, "policies", nil)
	set := func(policy string) error {
		_, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: map[string]string{"Policy": policy}})
		return err
	}
	for name, policy := range map[string]string{
		"20 statements":              policyWith(20, 1, 1, 0),
		"7 actions":                  policyWith(1, 7, 1, 0),
		"50 principals":              policyWith(2, 1, 25, 0),
		"10 conditions":              policyWith(1, 1, 1, 10),
		"one statement, not in list": `{"Statement":{"Effect":"Allow","Principal":"*","Action":"sqs:*","Resource":"*"}}`,
	} {
		if err := set(policy); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for name, policy := range map[string]string{
		"21 statements":  policyWith(21, 1, 1, 0),
		"8 actions":      policyWith(1, 8, 1, 0),
		"51 principals":  policyWith(3, 1, 17, 0),
		"11 conditions":  policyWith(1, 1, 1, 11),
		"9 actions, one": `{"Statement":{"Effect":"Allow","Principal":"*","Action":["a","b","c","d","e","f","g","h","i"],"Resource":"*"}}`,
	} {
		err := set(policy)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		wantAPIError(t, err, "InvalidAttributeValue", 400)
	}
	err := set(policyWith(22, 1, 1, 0))
	var ae smithy.APIError
	if errors.As(err, &ae); ae == nil || ae.ErrorMessage() != "22 statements were found in the submitted policy, max allowed is 20" {
		t.Errorf("22 statements: %v", err)
	}

	if err := set(policyWith(20, 1, 1, 0)); err != nil {
		t.Fatal(err)
	}
	_, err = c.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: &url, Label: aws.String("more"),
		AWSAccountIds: []string{"111122223333"}, Actions: []string{"SendMessage"}})
	wantAPIError(t, err, "OverLimit", 403)
}

// SSE-SQS and SSE-KMS exclude each other in one request.
func TestSSEExclusive(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c := srv.Client
	both := map[string]string{"SqsManagedSseEnabled": "true", "KmsMasterKeyId": "alias/aws/sqs"}
	_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("sse"), Attributes: both})
	wantAPIError(t, err, "InvalidAttributeName", 400)
	var ae smithy.APIError
	if errors.As(err, &ae); ae == nil || ae.ErrorMessage() != "You can use one type of server-side encryption (SSE) at one time. You can either enable KMS SSE or SQS SSE." {
		t.Errorf("both SSE types: %v", err)
	}
	url := srv.MustCreateQueue(t, "sse", nil)
	_, err = c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url, Attributes: both})
	wantAPIError(t, err, "InvalidAttributeName", 400)
	// Turning SSE-SQS off while naming a key is one type, and fine.
	if _, err := c.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &url,
		Attributes: map[string]string{"SqsManagedSseEnabled": "false", "KmsMasterKeyId": "alias/aws/sqs"}}); err != nil {
		t.Errorf("SSE-KMS alone: %v", err)
	}
}

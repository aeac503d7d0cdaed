package server_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/internal/testutil"
)

// wantMessage checks that err is an API error whose message is want.
func wantMessage(tb testing.TB, what string, err error, want string) {
	tb.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		tb.Fatalf("%s: got %v, want an API error %q", what, err, want)
	}
	if ae.ErrorMessage() != want {
		tb.Errorf("%s: message %q, want %q", what, ae.ErrorMessage(), want)
	}
}

// TestTooManyTagsOneMessage: more than 50 tags is refused with one message
// whether CreateQueue gives them or TagQueue brings the queue past 50.
func TestTooManyTagsOneMessage(t *testing.T) { onEveryStore(t, tooManyTagsOneMessage) }

func tooManyTagsOneMessage(t *testing.T, srv *testutil.Server) {
	c := srv.Client
	tags := func(n int, prefix string) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("%s%d", prefix, i)] = "v"
		}
		return m
	}
	_, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("big"), Tags: tags(51, "k")})
	wantAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
	wantMessage(t, "CreateQueue with 51 tags", err, "Too many tags added for queue big.")

	url := srv.MustCreateQueue(t, "tagged", nil)
	if _, err := c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: &url, Tags: tags(50, "k")}); err != nil {
		t.Fatalf("TagQueue with 50 tags: %v", err)
	}
	_, err = c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: &url, Tags: tags(1, "extra")})
	wantAPIError(t, err, "InvalidParameterValue", http.StatusBadRequest)
	wantMessage(t, "TagQueue past 50 tags", err, "Too many tags added for queue tagged.")
	_, err = c.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: &url, Tags: tags(51, "other")})
	wantMessage(t, "TagQueue with 51 tags", err, "Too many tags added for queue tagged.")
}

// TestEmptyJSONBodyIsEmptyInput: an AWS JSON request with no payload at
// all is read as the empty input {}, as AWS's protocol tests for
// awsJson1_0 have services do (docs/sqs-behaviour.md §1.2): ListQueues
// lists, SendMessage misses its QueueUrl as it would with {}. The SDK
// sends it, its body taken away on the way.
func TestEmptyJSONBodyIsEmptyInput(t *testing.T) { onEveryStore(t, emptyJSONBodyIsEmptyInput) }

func emptyJSONBodyIsEmptyInput(t *testing.T, srv *testutil.Server) {
	url := srv.MustCreateQueue(t, "listed", nil)
	sawEmpty := 0
	noBody := sqs.New(sqs.Options{
		BaseEndpoint: aws.String(srv.URL), Region: "us-east-1", RetryMaxAttempts: 1,
		Credentials: testutil.NewClient(srv.URL).Options().Credentials,
		HTTPClient: doFunc(func(r *http.Request) (*http.Response, error) {
			r.Body, r.ContentLength = http.NoBody, 0
			r.Header.Del("Content-Length")
			sawEmpty++
			return http.DefaultClient.Do(r)
		}),
	})
	out, err := noBody.ListQueues(ctx, &sqs.ListQueuesInput{})
	if err != nil || len(out.QueueUrls) != 1 || out.QueueUrls[0] != url {
		t.Errorf("ListQueues with no body: %+v, %v; want [%s]", out, err, url)
	}
	_, err = noBody.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &url, MessageBody: aws.String("x")})
	wantAPIError(t, err, "MissingParameter", http.StatusBadRequest)
	wantMessage(t, "SendMessage with no body", err, "The request must contain the parameter QueueUrl.")
	if sawEmpty != 2 {
		t.Errorf("%d requests sent without a body, want 2", sawEmpty)
	}
}

// doFunc is an SDK HTTP client made of a function.
type doFunc func(*http.Request) (*http.Response, error)

func (f doFunc) Do(r *http.Request) (*http.Response, error) { return f(r) }

package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/baton-sqs/baton/internal/testutil"
	"github.com/baton-sqs/baton/protocol/sigv4"
)

// TestSNSSignedRequests: with credentials required, a request signed for
// the service sns is verified and acts for its key's account; one signed
// for sqs that names an SNS action is SQS's, which has no such action.
func TestSNSSignedRequests(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{
		{AccessKeyID: "AKIDALICE", SecretAccessKey: "alice-secret", Account: "111111111111"},
	}})
	c, ctx := srv.SNSClient(), context.Background()
	out, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("signed")})
	if err != nil {
		t.Fatalf("CreateTopic signed for sns: %v", err)
	}
	if want := "arn:aws:sns:us-east-1:111111111111:signed"; *out.TopicArn != want {
		t.Errorf("TopicArn = %q, want %q (the key's account)", *out.TopicArn, want)
	}
	_, err = srv.SNSClient().ListTopics(ctx, &awssns.ListTopicsInput{})
	if err != nil {
		t.Fatal(err)
	}
	bad := srv.SNSClientFor("AKIDALICE", "wrong")
	_, err = bad.ListTopics(ctx, &awssns.ListTopicsInput{})
	wantAPIError(t, err, "SignatureDoesNotMatch", 403)
	var ae smithy.APIError
	if !errors.As(err, &ae) || !strings.HasPrefix(ae.ErrorMessage(), "The request signature we calculated does not match") {
		t.Errorf("refusal %q, want a signature mismatch (not a date out of the window)", ae.ErrorMessage())
	}

	// An SQS request is still SQS's.
	if _, err := srv.Client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("still-sqs")}); err != nil {
		t.Fatalf("CreateQueue signed for sqs: %v", err)
	}
}

// TestSNSQueryRouting: unsigned Query requests are SNS's by their Version
// or by an action only SNS has; SQS's own actions stay SQS's, and an SNS
// request naming an action SNS does not serve gets InvalidAction in SNS's
// namespace. The UnsubscribeURL of an envelope, an unsigned GET without
// Version, unsubscribes.
func TestSNSQueryRouting(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	get := func(q url.Values) (int, string) {
		resp, err := http.Get(srv.URL + "/?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	status, body := get(url.Values{"Action": {"CreateTopic"}, "Name": {"routed"}})
	if status != 200 || !strings.Contains(body, `<CreateTopicResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><CreateTopicResult><TopicArn>`+topicARN("routed")+`</TopicArn>`) {
		t.Errorf("CreateTopic by action: %d %s", status, body)
	}
	status, body = get(url.Values{"Action": {"ListQueues"}, "Version": {"2012-11-05"}})
	if status != 200 || !strings.Contains(body, "<ListQueuesResponse") {
		t.Errorf("ListQueues: %d %s", status, body)
	}
	status, body = get(url.Values{"Action": {"ListQueues"}, "Version": {"2010-03-31"}})
	if status != 400 || !strings.Contains(body, `<ErrorResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><Error><Type>Sender</Type><Code>InvalidAction</Code>`) {
		t.Errorf("ListQueues as SNS: %d %s", status, body)
	}
	status, body = get(url.Values{"Action": {"CreatePlatformApplication"}, "Version": {"2010-03-31"}})
	if status != 400 || !strings.Contains(body, "<Code>InvalidParameter</Code><Message>Invalid parameter: Name Reason: no value for required parameter</Message>") {
		t.Errorf("CreatePlatformApplication without its parameters: %d %s", status, body)
	}

	topic := topicARN("routed")
	sub := mustSubscribe(t, srv.SNSClient(), topic, snsQueueARN("q"), nil)
	status, body = get(url.Values{"Action": {"Unsubscribe"}, "SubscriptionArn": {sub}})
	if status != 200 || !strings.Contains(body, "<UnsubscribeResponse") || strings.Contains(body, "<UnsubscribeResult") {
		t.Errorf("UnsubscribeURL: %d %s", status, body)
	}
	list, err := srv.SNSClient().ListSubscriptions(context.Background(), &awssns.ListSubscriptionsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Subscriptions) != 0 {
		t.Errorf("%d subscriptions after the UnsubscribeURL, want 0", len(list.Subscriptions))
	}
}

// TestSNSUnsubscribeURLWithCredentials: with credentials required, an
// envelope's UnsubscribeURL still unsubscribes unsigned, as AWS's does;
// other unsigned SNS requests are refused.
func TestSNSUnsubscribeURLWithCredentials(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t, testutil.Options{Credentials: []sigv4.Credential{
		{AccessKeyID: "AKIDALICE", SecretAccessKey: "alice-secret", Account: "111111111111"},
	}})
	c, ctx := srv.SNSClient(), context.Background()
	topic, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("t")})
	if err != nil {
		t.Fatal(err)
	}
	sub := mustSubscribe(t, c, *topic.TopicArn, "arn:aws:sqs:us-east-1:111111111111:q", nil)
	resp, err := http.Get(srv.URL + "/?Action=ListTopics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("unsigned ListTopics: %d, want 403", resp.StatusCode)
	}
	resp, err = http.Get(srv.URL + "/?Action=Unsubscribe&SubscriptionArn=" + sub)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "<UnsubscribeResponse") {
		t.Fatalf("UnsubscribeURL: %d %s", resp.StatusCode, body)
	}
	list, err := c.ListSubscriptions(ctx, &awssns.ListSubscriptionsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Subscriptions) != 0 {
		t.Errorf("%d subscriptions after the UnsubscribeURL, want 0", len(list.Subscriptions))
	}
}

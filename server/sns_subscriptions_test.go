package server_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/baton-sqs/baton/internal/testutil"
)

func snsQueueARN(name string) string { return "arn:aws:sqs:us-east-1:" + testutil.Account + ":" + name }

func mustSubscribe(tb testing.TB, c *awssns.Client, topic, queue string, attrs map[string]string) string {
	tb.Helper()
	out, err := c.Subscribe(context.Background(), &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
		Endpoint: aws.String(queue), Attributes: attrs})
	if err != nil {
		tb.Fatalf("Subscribe %s to %s: %v", queue, topic, err)
	}
	return *out.SubscriptionArn
}

// TestSNSSubscribeQueue pins a queue's subscription: confirmed at once
// (its ARN, not "pending confirmation"), idempotent on (topic, protocol,
// endpoint), listed, and its attributes exactly those AWS returns for an
// sqs subscription.
func TestSNSSubscribeQueue(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "events")
	arn := mustSubscribe(t, c, topic, snsQueueARN("q1"), nil)
	if !strings.HasPrefix(arn, topic+":") || len(arn) != len(topic)+1+36 {
		t.Fatalf("SubscriptionArn = %q, want %s:<uuid>", arn, topic)
	}
	for _, attrs := range []map[string]string{nil, {"RawMessageDelivery": "false"}} {
		if again := mustSubscribe(t, c, topic, snsQueueARN("q1"), attrs); again != arn {
			t.Errorf("Subscribe again with %v = %q, want %q", attrs, again, arn)
		}
	}
	_, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String("sqs"),
		Endpoint: aws.String(snsQueueARN("q1")), Attributes: map[string]string{"RawMessageDelivery": "TRUE"}})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Attributes Reason: Subscription already exists with different attributes")
	raw := mustSubscribe(t, c, topic, snsQueueARN("q2"), map[string]string{"RawMessageDelivery": "True"})
	if again := mustSubscribe(t, c, topic, snsQueueARN("q2"), map[string]string{"RawMessageDelivery": "true"}); again != raw {
		t.Errorf("RawMessageDelivery compared with its case: %q, want %q", again, raw)
	}

	got, err := c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(raw)})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"ConfirmationWasAuthenticated": "true", "Endpoint": snsQueueARN("q2"), "Owner": testutil.Account, "PendingConfirmation": "false",
		"Protocol": "sqs", "RawMessageDelivery": "true", "SubscriptionArn": raw,
		"SubscriptionPrincipal": "arn:aws:iam::" + testutil.Account + ":root", "TopicArn": topic,
	}
	if !maps.Equal(got.Attributes, want) {
		t.Errorf("attributes = %v, want %v", got.Attributes, want)
	}

	list, err := c.ListSubscriptionsByTopic(ctx, &awssns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil {
		t.Fatal(err)
	}
	var arns []string
	for _, s := range list.Subscriptions {
		arns = append(arns, *s.SubscriptionArn)
		if *s.Protocol != "sqs" || *s.Owner != testutil.Account || *s.TopicArn != topic {
			t.Errorf("row %+v", s)
		}
	}
	if slices.Sort(arns); !slices.Equal(arns, sorted(arn, raw)) {
		t.Errorf("ListSubscriptionsByTopic = %v, want %v", arns, sorted(arn, raw))
	}
	_, err = c.ListSubscriptionsByTopic(ctx, &awssns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topicARN("missing"))})
	wantSNSError(t, err, "NotFound", 404, "Topic does not exist")
	_, err = c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topicARN("missing")), Protocol: aws.String("sqs"),
		Endpoint: aws.String(snsQueueARN("q1"))})
	wantSNSError(t, err, "NotFound", 404, "Topic does not exist")
}

func sorted(s ...string) []string { slices.Sort(s); return s }

// TestSNSSubscribeRefusals pins AWS's answers to bad subscriptions
// (those of protocols Baton delivers nothing to: sns_otherproto_test.go).
func TestSNSSubscribeRefusals(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "refusals")
	for _, tc := range []struct {
		protocol, endpoint string
		attrs              map[string]string
		msg                string
	}{
		{"sqs", "https://sqs.us-east-1.amazonaws.com/" + testutil.Account + "/q", nil, "Invalid parameter: SQS endpoint ARN"},
		{"sqs", "q", nil, "Invalid parameter: SQS endpoint ARN"},
		{"carrier-pigeon", "x", nil, "Invalid parameter: Amazon SNS does not support this protocol string: carrier-pigeon"},
		{"sqs", snsQueueARN("q.fifo"), nil,
			"Invalid parameter: Invalid parameter: Endpoint Reason: FIFO SQS Queues can not be subscribed to standard SNS topics"},
		{"sqs", snsQueueARN("q"), map[string]string{"RawMessageDelivery": "yes"},
			"Invalid parameter: Attributes Reason: RawMessageDelivery: Invalid value [yes]. Must be true or false."},
		{"sqs", snsQueueARN("q"), map[string]string{"Bogus": "1"}, "Invalid parameter: Attributes Reason: AttributeName"},
		{"https", "http://example.com/hook", nil, "Invalid parameter: Endpoint must match the specified protocol"},
		{"http", "example.com/hook", nil, "Invalid parameter: Endpoint must match the specified protocol"},
		{"sqs", snsQueueARN("q"), map[string]string{"FilterPolicy": `{"k":"v"}`},
			`Invalid parameter: Attributes Reason: FilterPolicy: "k" must be an object or an array`},
	} {
		_, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String(tc.protocol),
			Endpoint: aws.String(tc.endpoint), Attributes: tc.attrs})
		wantSNSError(t, err, "InvalidParameter", 400, tc.msg)
	}
}

// TestSNSSubscriptionAttributesAndUnsubscribe pins SetSubscriptionAttributes
// (RawMessageDelivery in any case, stored in lower case) and Unsubscribe's
// idempotence and refusals of malformed ARNs.
func TestSNSSubscriptionAttributesAndUnsubscribe(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "subattrs")
	arn := mustSubscribe(t, c, topic, snsQueueARN("q"), nil)
	set := func(name, value string) error {
		_, err := c.SetSubscriptionAttributes(ctx, &awssns.SetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn),
			AttributeName: aws.String(name), AttributeValue: aws.String(value)})
		return err
	}
	if err := set("RawMessageDelivery", "TRUE"); err != nil {
		t.Fatal(err)
	}
	got, err := c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if v := got.Attributes["RawMessageDelivery"]; v != "true" {
		t.Errorf("RawMessageDelivery = %q, want true", v)
	}
	wantSNSError(t, set("RawMessageDelivery", ""), "InvalidParameter", 400,
		"Invalid parameter: RawMessageDelivery: Invalid value []. Must be true or false.")
	wantSNSError(t, set("Protocol", "http"), "InvalidParameter", 400, "Invalid parameter: AttributeName")

	for range 2 {
		if _, err := c.Unsubscribe(ctx, &awssns.UnsubscribeInput{SubscriptionArn: aws.String(arn)}); err != nil {
			t.Fatalf("Unsubscribe: %v", err)
		}
	}
	_, err = c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(arn)})
	wantSNSError(t, err, "NotFound", 404, "Subscription does not exist")
	wantSNSError(t, set("RawMessageDelivery", "true"), "NotFound", 404, "Subscription does not exist")
	for arn, msg := range map[string]string{
		"arn:aws:sns:us-east-1": "Invalid parameter: SubscriptionArn Reason: An ARN must have at least 6 elements, not 4",
		topic:                   "Invalid parameter: SubscriptionId",
	} {
		_, err := c.Unsubscribe(ctx, &awssns.UnsubscribeInput{SubscriptionArn: aws.String(arn)})
		wantSNSError(t, err, "InvalidParameter", 400, msg)
	}
}

// TestSNSListSubscriptionsPages: 100 a page; 101 give 100 and a token,
// then 1 and none.
func TestSNSListSubscriptionsPages(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "many")
	seen := map[string]bool{}
	for i := range 101 {
		seen[mustSubscribe(t, c, topic, snsQueueARN("q"+strings.Repeat("x", i)), nil)] = false
	}
	var token *string
	for page, want := range []int{100, 1} {
		out, err := c.ListSubscriptions(ctx, &awssns.ListSubscriptionsInput{NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Subscriptions) != want || (out.NextToken != nil) != (page == 0) {
			t.Fatalf("page %d: %d rows, token %v", page, len(out.Subscriptions), out.NextToken)
		}
		for _, s := range out.Subscriptions {
			if done, ok := seen[*s.SubscriptionArn]; !ok || done {
				t.Errorf("row %s unknown or listed twice", *s.SubscriptionArn)
			}
			seen[*s.SubscriptionArn] = true
		}
		token = out.NextToken
	}
}

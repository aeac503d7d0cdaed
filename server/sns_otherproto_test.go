package server_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/baton-sqs/baton/internal/testutil"
)

const (
	lambdaEndpoint   = "arn:aws:lambda:us-east-1:" + testutil.Account + ":function:handler"
	firehoseEndpoint = "arn:aws:firehose:us-east-1:" + testutil.Account + ":deliverystream/stream"
	firehoseRole     = "arn:aws:iam::" + testutil.Account + ":role/sns-firehose"
)

// TestSNSOtherProtocols pins the subscriptions Baton keeps and delivers
// nothing to, answered as AWS answers them: sms, lambda and firehose of
// the topic's account confirmed at once (their ARN), email and
// email-json and a lambda of another account pending ("pending
// confirmation", listed as PendingConfirmation), each with its Protocol,
// Endpoint and PendingConfirmation attributes.
func TestSNSOtherProtocols(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "others")
	for _, tc := range []struct {
		protocol, endpoint string
		attrs              map[string]string
		pending            bool
	}{
		{"sms", "+15555550100", nil, false},
		{"sms", "1-555-555-0101", nil, false},
		{"lambda", lambdaEndpoint, nil, false},
		{"lambda", lambdaEndpoint + ":live", nil, false},
		{"firehose", firehoseEndpoint, map[string]string{"SubscriptionRoleArn": firehoseRole}, false},
		{"email", "someone@example.com", nil, true},
		{"email-json", "someone@example.com", nil, true},
		{"lambda", "arn:aws:lambda:us-east-1:111122223333:function:theirs", nil, true},
	} {
		out, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String(tc.protocol),
			Endpoint: aws.String(tc.endpoint), Attributes: tc.attrs})
		if err != nil {
			t.Fatalf("Subscribe %s %s: %v", tc.protocol, tc.endpoint, err)
		}
		if tc.pending {
			if *out.SubscriptionArn != "pending confirmation" {
				t.Errorf("Subscribe %s %s = %q, want pending confirmation", tc.protocol, tc.endpoint, *out.SubscriptionArn)
			}
			out, err = c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String(tc.protocol),
				Endpoint: aws.String(tc.endpoint), ReturnSubscriptionArn: true})
			if err != nil {
				t.Fatalf("Subscribe %s again: %v", tc.protocol, err)
			}
		}
		arn := *out.SubscriptionArn
		if len(arn) != len(topic)+1+36 || arn[:len(topic)+1] != topic+":" {
			t.Fatalf("Subscribe %s %s = %q, want %s:<uuid>", tc.protocol, tc.endpoint, arn, topic)
		}
		got := subAttrs(t, c, arn)
		want := map[string]string{"Protocol": tc.protocol, "Endpoint": tc.endpoint, "PendingConfirmation": "false", "SubscriptionArn": arn}
		if tc.pending {
			want["PendingConfirmation"] = "true"
		}
		for k, v := range tc.attrs {
			want[k] = v
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s %s: attribute %s = %q, want %q", tc.protocol, tc.endpoint, k, got[k], v)
			}
		}
	}

	list, err := c.ListSubscriptionsByTopic(ctx, &awssns.ListSubscriptionsByTopicInput{TopicArn: aws.String(topic)})
	if err != nil {
		t.Fatal(err)
	}
	var pending, confirmed []string
	for _, s := range list.Subscriptions {
		if *s.SubscriptionArn == "PendingConfirmation" {
			pending = append(pending, *s.Protocol+" "+*s.Endpoint)
		} else {
			confirmed = append(confirmed, *s.Protocol)
		}
	}
	slices.Sort(pending)
	slices.Sort(confirmed)
	wantPending := []string{"email someone@example.com", "email-json someone@example.com",
		"lambda arn:aws:lambda:us-east-1:111122223333:function:theirs"}
	if !slices.Equal(pending, wantPending) || !slices.Equal(confirmed, []string{"firehose", "lambda", "lambda", "sms", "sms"}) {
		t.Errorf("listed pending %v, confirmed %v", pending, confirmed)
	}
}

// TestSNSOtherProtocolRefusals pins the refusals of bad endpoints of the
// protocols Baton keeps without delivering: sms's text as AWS answers it
// (no "Invalid parameter: " prefix), every application endpoint as AWS
// answers a missing one (Baton has no platform endpoints), and Baton's
// texts for the others (docs/sns.md says which are unconfirmed); a FIFO
// topic still takes only sqs.
func TestSNSOtherProtocolRefusals(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "otherrefusals")
	app := "arn:aws:sns:us-east-1:" + testutil.Account + ":endpoint/GCM/app/0c4b1d5e-7f47-3d5d-9b13-8e7b0b8f1e2a"
	for _, tc := range []struct {
		protocol, endpoint string
		attrs              map[string]string
		msg                string
	}{
		{"sms", "NAA+15551234567", nil, "Invalid SMS endpoint: NAA+15551234567"},
		{"sms", "+15--551234567", nil, "Invalid SMS endpoint: +15--551234567"},
		{"sms", "+15551234567.", nil, "Invalid SMS endpoint: +15551234567."},
		{"sms", "/+15551234567", nil, "Invalid SMS endpoint: /+15551234567"},
		{"application", app, nil, "Invalid parameter: Endpoint Reason: Endpoint does not exist for endpoint arn" + app},
		{"lambda", "handler", nil, "Invalid parameter: Lambda endpoint ARN"},
		{"firehose", "arn:aws:s3:::bucket", map[string]string{"SubscriptionRoleArn": firehoseRole}, "Invalid parameter: Firehose endpoint ARN"},
		{"firehose", firehoseEndpoint, nil, "Invalid parameter: Attributes Reason: SubscriptionRoleArn is required for firehose subscriptions"},
		{"email", "nobody", nil, "Invalid parameter: Email address"},
		{"email-json", "@example.com", nil, "Invalid parameter: Email address"},
	} {
		_, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String(tc.protocol),
			Endpoint: aws.String(tc.endpoint), Attributes: tc.attrs})
		wantSNSError(t, err, "InvalidParameter", 400, tc.msg)
	}
}

// TestSNSOtherProtocolsGetNothing: a publish to a topic with sms and
// lambda subscriptions and a queue's succeeds and reaches the queue
// alone.
func TestSNSOtherProtocolsGetNothing(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	qURL := srv.MustCreateQueue(t, "only", nil)
	topic := mustCreateTopic(t, c, "mixed")
	for p, e := range map[string]string{"sms": "+15555550100", "lambda": lambdaEndpoint} {
		if _, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(topic), Protocol: aws.String(p), Endpoint: aws.String(e)}); err != nil {
			t.Fatalf("Subscribe %s: %v", p, err)
		}
	}
	mustSubscribe(t, c, topic, snsQueueARN("only"), map[string]string{"RawMessageDelivery": "true"})
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("hello")}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if got := drainBodies(t, srv.Client, qURL); !slices.Equal(got, []string{"hello"}) {
		t.Errorf("queue holds %q, want [hello]", got)
	}
}

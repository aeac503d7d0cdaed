package compat_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"gocloud.dev/pubsub"
	"gocloud.dev/pubsub/awssnssqs"

	"github.com/baton-sqs/baton/batontest"
)

// TestGoCDKPubSub sends through Go CDK's pubsub (gocloud.dev/pubsub/
// awssnssqs) to an SQS queue directly, and through an SNS topic subscribed
// to another, then receives each message with a Go CDK subscription, with
// its metadata (message attributes), and acks it (a DeleteMessageBatch):
// the queue is then empty.
func TestGoCDKPubSub(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	direct := srv.Queue(t, "gocdk-direct")
	fanned := srv.Queue(t, "gocdk-fanned")
	snsClient := srv.SNSClient()
	topic, err := snsClient.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("gocdk")})
	if err != nil {
		t.Fatal(err)
	}
	attrs, err := srv.Client().GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(fanned), AttributeNames: []types.QueueAttributeName{"QueueArn"}})
	if err != nil {
		t.Fatal(err)
	}
	// Go CDK's SNS topic needs a raw delivery to the queue to read the
	// metadata back as message attributes (its documentation says so).
	if _, err := snsClient.Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(attrs.Attributes["QueueArn"]),
		Attributes: map[string]string{"RawMessageDelivery": "true"},
	}); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		name  string
		topic *pubsub.Topic
		queue string
	}{
		{"sqs topic", awssnssqs.OpenSQSTopic(ctx, srv.Client(), direct, nil), direct},
		{"sns topic", awssnssqs.OpenSNSTopic(ctx, snsClient, aws.ToString(topic.TopicArn), nil), fanned},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer c.topic.Shutdown(ctx)
			sent := &pubsub.Message{Body: []byte("hello from " + c.name), Metadata: map[string]string{"kind": "greeting"}}
			if err := c.topic.Send(ctx, sent); err != nil {
				t.Fatalf("Send: %v", err)
			}
			sub := awssnssqs.OpenSubscription(ctx, srv.Client(), c.queue, &awssnssqs.SubscriptionOptions{WaitTime: time.Second})
			defer sub.Shutdown(ctx)
			got, err := sub.Receive(ctx)
			if err != nil {
				t.Fatalf("Receive: %v", err)
			}
			if string(got.Body) != string(sent.Body) || got.Metadata["kind"] != "greeting" {
				t.Fatalf("received %q with metadata %v, want %q with kind=greeting", got.Body, got.Metadata, sent.Body)
			}
			got.Ack()
			if err := sub.Shutdown(ctx); err != nil { // flushes the ack
				t.Fatalf("Shutdown: %v", err)
			}
			left, err := srv.Client().GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
				QueueUrl: aws.String(c.queue), AttributeNames: []types.QueueAttributeName{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"},
			})
			if err != nil {
				t.Fatal(err)
			}
			if v, n := left.Attributes["ApproximateNumberOfMessages"], left.Attributes["ApproximateNumberOfMessagesNotVisible"]; v != "0" || n != "0" {
				t.Fatalf("after the ack the queue holds %s visible and %s in flight, want none", v, n)
			}
		})
	}
}

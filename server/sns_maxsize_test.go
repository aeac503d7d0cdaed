package server_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
)

// TestSNSTopicMaximumMessageSize pins the topic attribute MaximumMessageSize
// as AWS's API reference and developer guide ("Publishing large messages
// with Amazon SNS") give it: 1,024 to 1,048,576 bytes, shown only once set
// (262,144 meanwhile); Publish and PublishBatch hold the message and its
// attributes to it, refusing more with InvalidParameter.
func TestSNSTopicMaximumMessageSize(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()

	plain := mustCreateTopic(t, c, "plain")
	attrs, err := c.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String(plain)})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := attrs.Attributes["MaximumMessageSize"]; ok {
		t.Errorf("a topic never given MaximumMessageSize shows it: %q", v)
	}

	out, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("large"),
		Attributes: map[string]string{"MaximumMessageSize": "1048576"}})
	if err != nil {
		t.Fatalf("CreateTopic with MaximumMessageSize 1048576: %v", err)
	}
	large := *out.TopicArn
	attrs, err = c.GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String(large)})
	if err != nil {
		t.Fatal(err)
	}
	if got := attrs.Attributes["MaximumMessageSize"]; got != "1048576" {
		t.Errorf("MaximumMessageSize = %q, want 1048576", got)
	}

	url := srv.MustCreateQueue(t, "big", nil)
	mustSubscribe(t, c, large, snsQueueARN("big"), map[string]string{"RawMessageDelivery": "true"})
	str := map[string]snstypes.MessageAttributeValue{"a": {DataType: aws.String("String"), StringValue: aws.String("b")}}
	publish := func(topic string, size int) error { // size counts the attribute's 8 bytes
		_, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic),
			Message: aws.String(strings.Repeat("x", size-8)), MessageAttributes: str})
		return err
	}
	if err := publish(large, 1048576); err != nil {
		t.Fatalf("Publish of 1,048,576 bytes to a topic allowing them: %v", err)
	}
	got, err := srv.Client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Messages) != 1 || len(*got.Messages[0].Body) != 1048576-8 {
		t.Errorf("the queue got %d messages, want the one of %d bytes", len(got.Messages), 1048576-8)
	}
	wantSNSError(t, publish(large, 1048577), "InvalidParameter", 400, "Invalid parameter: Message too long")
	wantSNSError(t, publish(plain, 262145), "InvalidParameter", 400, "Invalid parameter: Message too long")

	entries := func(sizes ...int) []snstypes.PublishBatchRequestEntry {
		var es []snstypes.PublishBatchRequestEntry
		for i, n := range sizes {
			es = append(es, batchEntry(fmt.Sprintf("e%d", i), strings.Repeat("x", n)))
		}
		return es
	}
	if _, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(large),
		PublishBatchRequestEntries: entries(600000, 448576)}); err != nil {
		t.Errorf("PublishBatch of 1,048,576 bytes to a topic allowing them: %v", err)
	}
	_, err = c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(large), PublishBatchRequestEntries: entries(600000, 448577)})
	wantSNSError(t, err, "BatchRequestTooLong", 400, "The length of all the messages put together is more than the limit.")
	_, err = c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(plain), PublishBatchRequestEntries: entries(262145)})
	wantSNSError(t, err, "BatchRequestTooLong", 400, "The length of all the messages put together is more than the limit.")

	// Lowered, the limit holds below 256 KiB too.
	if _, err := c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(large),
		AttributeName: aws.String("MaximumMessageSize"), AttributeValue: aws.String("1024")}); err != nil {
		t.Fatalf("SetTopicAttributes MaximumMessageSize 1024: %v", err)
	}
	if err := publish(large, 1024); err != nil {
		t.Errorf("Publish of 1,024 bytes to a topic allowing them: %v", err)
	}
	wantSNSError(t, publish(large, 1025), "InvalidParameter", 400, "Invalid parameter: Message too long")

	const bad = "Invalid parameter: MaximumMessageSize Reason: must be a whole number of bytes from 1024 to 1048576"
	for _, v := range []string{"1023", "1048577", "256KiB", ""} {
		_, err := c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(plain),
			AttributeName: aws.String("MaximumMessageSize"), AttributeValue: aws.String(v)})
		wantSNSError(t, err, "InvalidParameter", 400, bad)
		_, err = c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("refused"),
			Attributes: map[string]string{"MaximumMessageSize": v}})
		wantSNSError(t, err, "InvalidParameter", 400, bad)
	}
}

// TestSNSLargeTopicSubscriptions pins what AWS's developer guide says of a
// topic whose MaximumMessageSize is over 256 KiB: it takes Firehose, SQS
// and Lambda subscriptions only, 100 at most, and refuses more with
// InvalidParameter (AWS's texts are not known).
func TestSNSLargeTopicSubscriptions(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	out, err := c.CreateTopic(ctx, &awssns.CreateTopicInput{Name: aws.String("large"),
		Attributes: map[string]string{"MaximumMessageSize": "262145"}})
	if err != nil {
		t.Fatal(err)
	}
	large := *out.TopicArn
	_, err = c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(large), Protocol: aws.String("https"),
		Endpoint: aws.String("https://example.com/sns")})
	wantSNSError(t, err, "InvalidParameter", 400,
		"Invalid parameter: Protocol Reason: a topic whose MaximumMessageSize is over 262144 takes only firehose, lambda and sqs subscriptions")
	_, err = c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(large), Protocol: aws.String("lambda"),
		Endpoint: aws.String("arn:aws:lambda:us-east-1:" + testutil.Account + ":function:f")})
	if err != nil {
		t.Fatalf("a lambda subscription: %v", err)
	}
	for i := range 99 {
		mustSubscribe(t, c, large, snsQueueARN(fmt.Sprintf("q%d", i)), nil)
	}
	_, err = c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(large), Protocol: aws.String("sqs"),
		Endpoint: aws.String(snsQueueARN("q100"))})
	wantSNSError(t, err, "InvalidParameter", 400,
		"Invalid parameter: Topic Reason: a topic whose MaximumMessageSize is over 262144 takes at most 100 subscriptions")
	// The same subscription again is no new one.
	mustSubscribe(t, c, large, snsQueueARN("q0"), nil)

	// A topic with a subscription of another protocol keeps 256 KiB.
	plain := mustCreateTopic(t, c, "plain")
	if _, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(plain), Protocol: aws.String("email"),
		Endpoint: aws.String("ops@example.com")}); err != nil {
		t.Fatal(err)
	}
	_, err = c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(plain),
		AttributeName: aws.String("MaximumMessageSize"), AttributeValue: aws.String("1048576")})
	wantSNSError(t, err, "InvalidParameter", 400,
		"Invalid parameter: MaximumMessageSize Reason: the topic has a subscription of protocol email; a topic whose MaximumMessageSize is over 262144 takes only firehose, lambda and sqs subscriptions")
	if _, err := c.SetTopicAttributes(ctx, &awssns.SetTopicAttributesInput{TopicArn: aws.String(plain),
		AttributeName: aws.String("MaximumMessageSize"), AttributeValue: aws.String("262144")}); err != nil {
		t.Errorf("MaximumMessageSize 262144 on a topic with an email subscription: %v", err)
	}
}

// TestSNSAttributeValueCountsInTotal pins that a message attribute's value
// has no limit of its own: AWS's API reference (MessageAttributeValue) counts
// every part of an attribute, name, type and value, toward the message size
// alone, so a 100,000-byte value is taken, and one that takes the publish
// past its topic's limit refuses it as the message would.
func TestSNSAttributeValueCountsInTotal(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	topic := mustCreateTopic(t, c, "attrs")
	attr := func(n int) map[string]snstypes.MessageAttributeValue {
		return map[string]snstypes.MessageAttributeValue{"a": {DataType: aws.String("String"), StringValue: aws.String(strings.Repeat("v", n))}}
	}
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
		MessageAttributes: attr(100000)}); err != nil {
		t.Errorf("Publish with a 100,000-byte attribute value: %v", err)
	}
	// 1 byte of message, 1 + 6 of name and type: 262,136 of value is the most.
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"),
		MessageAttributes: attr(262136)}); err != nil {
		t.Errorf("Publish of 262,144 bytes with the attribute: %v", err)
	}
	_, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("m"), MessageAttributes: attr(262137)})
	wantSNSError(t, err, "InvalidParameter", 400, "Invalid parameter: Message too long")
}

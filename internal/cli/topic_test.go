package cli_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/internal/testutil"
)

// TestCLITopic: `baton topic` creates a topic, subscribes queues by name
// (enveloped and raw), lists both, and `baton publish` delivers a copy to
// each queue with its subject and attributes.
func TestCLITopic(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	env := s.MustCreateQueue(t, "env", nil)
	raw := s.MustCreateQueue(t, "raw", nil)
	topic := "arn:aws:sns:us-east-1:" + testutil.Account + ":orders"
	if got := mustSucceed(t, s.URL, "topic", "create", "orders", "-a", "DisplayName=Orders", "-t", "team=billing"); got != topic+"\n" {
		t.Fatalf("topic create: got %q, want the ARN %q", got, topic)
	}
	mustSucceed(t, s.URL, "topic", "create", "other")
	if got, want := mustSucceed(t, s.URL, "topic", "list"), topic+"\n"+strings.Replace(topic, "orders", "other", 1)+"\n"; got != want {
		t.Errorf("topic list: got %q, want %q", got, want)
	}
	envSub := mustSucceed(t, s.URL, "topic", "subscribe", "orders", "env")
	rawSub := mustSucceed(t, s.URL, "topic", "subscribe", topic, "raw", "--raw")
	for _, sub := range []string{envSub, rawSub} {
		if !strings.HasPrefix(sub, topic+":") {
			t.Errorf("topic subscribe: got %q, want a subscription ARN of %s", sub, topic)
		}
	}
	list := mustSucceed(t, s.URL, "topic", "subscriptions", "orders")
	queueARN := "arn:aws:sqs:us-east-1:" + testutil.Account + ":"
	for _, line := range []string{strings.TrimSpace(envSub) + "  sqs  " + queueARN + "env", strings.TrimSpace(rawSub) + "  sqs  " + queueARN + "raw"} {
		if !strings.Contains(list, line) {
			t.Errorf("topic subscriptions orders: got\n%s\nwant the line %q", list, line)
		}
	}
	if got := mustSucceed(t, s.URL, "topic", "subscriptions"); got != list {
		t.Errorf("topic subscriptions (all): got\n%s\nwant the same as orders':\n%s", got, list)
	}

	id := strings.TrimSpace(mustSucceed(t, s.URL, "publish", "orders", "paid", "--subject", "Order 7", "-a", "kind=String:refund"))
	m := receiveBody(t, s, raw)
	if m.body != "paid" || m.attrs["kind"] != "refund" {
		t.Errorf("raw copy: %+v, want body paid with attribute kind=refund", m)
	}
	var envelope map[string]any
	if err := json.Unmarshal([]byte(receiveBody(t, s, env).body), &envelope); err != nil {
		t.Fatalf("enveloped copy: %v", err)
	}
	if envelope["MessageId"] != id || envelope["Message"] != "paid" || envelope["Subject"] != "Order 7" || envelope["TopicArn"] != topic {
		t.Errorf("envelope = %v, want message %s, paid, subject Order 7, of %s", envelope, id, topic)
	}

	mustFail(t, s.URL, "topic nope: NotFound", "publish", "nope", "x")
	mustFail(t, s.URL, "queue missing: AWS.SimpleQueueService.NonExistentQueue", "topic", "subscribe", "orders", "missing")
	mustSucceed(t, s.URL, "topic", "delete", "other")
	if got := mustSucceed(t, s.URL, "topic", "list"); got != topic+"\n" {
		t.Errorf("topic list after delete: got %q, want only %s", got, topic)
	}
}

type copyReceived struct {
	body  string
	attrs map[string]string
}

// receiveBody receives the one message a queue holds.
func receiveBody(t *testing.T, s *testutil.Server, url string) copyReceived {
	t.Helper()
	out, err := s.Client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, MessageAttributeNames: []string{"All"}})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive %s: %v, %v; want one message", url, out, err)
	}
	m := copyReceived{body: aws.ToString(out.Messages[0].Body), attrs: map[string]string{}}
	for k, v := range out.Messages[0].MessageAttributes {
		m.attrs[k] = aws.ToString(v.StringValue)
	}
	return m
}

// TestCLITopicDeliveries: `baton topic deliveries` prints what Baton
// recorded for an sms subscription instead of sending it, selected by its
// flags, and --clear forgets it.
func TestCLITopicDeliveries(t *testing.T) {
	t.Parallel()
	s := testutil.StartServer(t)
	mustSucceed(t, s.URL, "topic", "create", "alarms", "-a", "DisplayName=Ops")
	topic := "arn:aws:sns:us-east-1:" + testutil.Account + ":alarms"
	if _, err := s.SNSClient().Subscribe(context.Background(), &awssns.SubscribeInput{TopicArn: aws.String(topic),
		Protocol: aws.String("sms"), Endpoint: aws.String("+15555550100")}); err != nil {
		t.Fatal(err)
	}
	id := strings.TrimSpace(mustSucceed(t, s.URL, "publish", "alarms", "disk full"))
	want := "2026-01-02T03:04:05.000Z  Notification  sms +15555550100  topic alarms  message " + id + "\nOPS> disk full\n\n"
	if got := mustSucceed(t, s.URL, "topic", "deliveries", "--protocol", "sms", "--topic", "alarms"); got != want {
		t.Errorf("topic deliveries: got %q, want %q", got, want)
	}
	if got := mustSucceed(t, s.URL, "topic", "deliveries", "--protocol", "email"); got != "" {
		t.Errorf("topic deliveries --protocol email: got %q, want nothing", got)
	}
	// A publish straight to a number, which --direct selects alone.
	if _, err := s.SNSClient().Publish(context.Background(), &awssns.PublishInput{PhoneNumber: aws.String("+15555550199"), Message: aws.String("code 1234")}); err != nil {
		t.Fatal(err)
	}
	if got := mustSucceed(t, s.URL, "topic", "deliveries", "--direct"); !strings.Contains(got, "sms +15555550199  published to the number") || strings.Contains(got, "alarms") {
		t.Errorf("topic deliveries --direct: got %q, want the publish to +15555550199 alone", got)
	}
	if got := mustSucceed(t, s.URL, "topic", "deliveries", "--direct", "--clear"); got != "cleared 1\n" {
		t.Errorf("topic deliveries --direct --clear: got %q", got)
	}
	if got := mustSucceed(t, s.URL, "topic", "deliveries", "--clear"); got != "cleared 1\n" {
		t.Errorf("topic deliveries --clear: got %q", got)
	}
	if got := mustSucceed(t, s.URL, "topic", "deliveries"); got != "" {
		t.Errorf("topic deliveries after --clear: got %q, want nothing", got)
	}
}

package batontest_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/sns"
)

// TestTopicSubscribe: Topic and Subscribe declare a topic and its queues,
// raw and enveloped, and a publish reaches both; specs are checked.
func TestTopicSubscribe(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t)
	ctx := context.Background()
	raw, env := srv.Queue(t, "raw"), srv.Queue(t, "env")
	topic := srv.Topic(t, "orders?DisplayName=Orders")
	if want := "arn:aws:sns:us-east-1:000000000000:orders"; topic != want {
		t.Fatalf("Topic = %q, want %q", topic, want)
	}
	if again := srv.Topic(t, "orders?DisplayName=Orders"); again != topic {
		t.Errorf("Topic again = %q, want %q", again, topic)
	}
	sub := srv.Subscribe(t, topic, "raw?RawMessageDelivery=true")
	if !strings.HasPrefix(sub, topic+":") {
		t.Errorf("Subscribe = %q, want a subscription of %s", sub, topic)
	}
	srv.Subscribe(t, topic, "env")
	attrs, err := srv.SNSClient().GetTopicAttributes(ctx, &awssns.GetTopicAttributesInput{TopicArn: aws.String(topic)})
	if err != nil || attrs.Attributes["DisplayName"] != "Orders" || attrs.Attributes["SubscriptionsConfirmed"] != "2" {
		t.Errorf("topic attributes %v, %v: want DisplayName Orders and 2 subscriptions", attrs, err)
	}
	if _, err := srv.SNSClient().Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("paid")}); err != nil {
		t.Fatal(err)
	}
	wantReceived(t, receive(t, srv.Client(), raw), "paid", "1")
	m := receive(t, srv.Client(), env)
	var envelope struct{ Message, TopicArn string }
	if m == nil || json.Unmarshal([]byte(aws.ToString(m.Body)), &envelope) != nil || envelope.Message != "paid" || envelope.TopicArn != topic {
		t.Errorf("enveloped copy %v: want the envelope of paid from %s", m, topic)
	}

	for _, spec := range []string{"", "t?dlq=x:1", "t?a=1&a=2"} {
		if _, err := srv.CreateTopic(ctx, spec); err == nil {
			t.Errorf("CreateTopic(%q) succeeded, want the spec refused", spec)
		}
	}
	if _, err := srv.CreateTopic(ctx, "not a name"); err == nil {
		t.Error("CreateTopic of a bad name succeeded, want the server's refusal")
	} else {
		wantCode(t, err, "InvalidParameter")
	}
	if _, err := srv.SubscribeQueue(ctx, topic, "env?RawMessageDelivery=maybe"); err == nil {
		t.Error("SubscribeQueue with a bad attribute succeeded, want the server's refusal")
	}
}

// TestSNSDeliveries: what AWS would have sent an sms subscription and a
// phone number is read with SNSDeliveries, selected by its filter, and
// forgotten with ClearSNSDeliveries.
func TestSNSDeliveries(t *testing.T) {
	t.Parallel()
	srv := batontest.New(t)
	ctx, c := context.Background(), srv.SNSClient()
	alerts := srv.Topic(t, "alerts?DisplayName=Shop")
	if _, err := c.Subscribe(ctx, &awssns.SubscribeInput{TopicArn: aws.String(alerts), Protocol: aws.String("sms"),
		Endpoint: aws.String("+15555550100")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(alerts), Message: aws.String("shipped")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Publish(ctx, &awssns.PublishInput{PhoneNumber: aws.String("+15555550199"), Message: aws.String("code 42")}); err != nil {
		t.Fatal(err)
	}
	got := srv.SNSDeliveries(sns.DeliveryFilter{Protocol: "sms", Endpoint: "+15555550100"})
	if len(got) != 1 || got[0].Payload != "SHOP> shipped" || got[0].TopicARN != alerts {
		t.Errorf("SNSDeliveries of +15555550100 = %+v, want SHOP> shipped from %s", got, alerts)
	}
	if all := srv.SNSDeliveries(sns.DeliveryFilter{}); len(all) != 2 || all[1].Payload != "code 42" {
		t.Errorf("SNSDeliveries = %+v, want both, the direct publish last", all)
	}
	if n := srv.ClearSNSDeliveries(sns.DeliveryFilter{Endpoint: "+15555550199"}); n != 1 || len(srv.SNSDeliveries(sns.DeliveryFilter{})) != 1 {
		t.Errorf("ClearSNSDeliveries = %d, want 1, the other kept", n)
	}
}

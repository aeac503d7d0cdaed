package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/baton-sqs/baton/batontest"
	"github.com/baton-sqs/baton/store/pebblestore"
)

// TestSNSSurvivesRestart: on the embedded store a topic, its
// subscriptions and their attributes outlive the server, and a publish
// after the restart reaches the queues subscribed before it; so does a copy
// acknowledged before the restart; envelopes signed before and after it
// verify with the one certificate the restarted server serves.
func TestSNSSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir, ctx := t.TempDir(), context.Background()
	start := func() *batontest.Server { return startEmbedded(t, dir) }
	srv := start()
	c := srv.SNSClient()
	env, err := srv.Client().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("env")})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := srv.Client().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("raw")})
	if err != nil {
		t.Fatal(err)
	}
	topic := mustCreateTopic(t, c, "durable")
	envSub := mustSubscribe(t, c, topic, snsQueueARN("env"), nil)
	rawSub := mustSubscribe(t, c, topic, snsQueueARN("raw"), map[string]string{"RawMessageDelivery": "true"})
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("before")}); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	srv = start()
	defer srv.Close()
	c = srv.SNSClient()
	if again := mustSubscribe(t, c, topic, snsQueueARN("raw"), map[string]string{"RawMessageDelivery": "true"}); again != rawSub {
		t.Errorf("raw subscription after restart = %q, want %q", again, rawSub)
	}
	attrs, err := c.GetSubscriptionAttributes(ctx, &awssns.GetSubscriptionAttributesInput{SubscriptionArn: aws.String(envSub)})
	if err != nil {
		t.Fatalf("envelope subscription after restart: %v", err)
	}
	if attrs.Attributes["RawMessageDelivery"] != "false" {
		t.Errorf("RawMessageDelivery = %q", attrs.Attributes["RawMessageDelivery"])
	}
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("after")}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		url  string
		want []string
	}{{*env.QueueUrl, []string{`"Message" : "before"`, `"Message" : "after"`}}, {*raw.QueueUrl, []string{"before", "after"}}} {
		out, err := srv.Client().ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(q.url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		var bodies []string
		for _, m := range out.Messages {
			bodies = append(bodies, *m.Body)
			if q.url == *env.QueueUrl {
				// Signed before and after the restart with the one key
				// the store keeps, whose certificate the server serves.
				verifySignatureAt(t, m, srv.URL())
			}
		}
		all := strings.Join(bodies, "\n")
		for _, w := range q.want {
			if len(out.Messages) != 2 || !strings.Contains(all, w) {
				t.Errorf("%s holds %q, want 2 messages with %q", q.url, bodies, w)
			}
		}
	}
}

// TestSNSHTTPDeliverySurvivesRestart: on the embedded store, a publish
// acknowledged while its HTTP endpoint fails is delivered to the endpoint
// after the server restarts, when its retry is due.
func TestSNSHTTPDeliverySurvivesRestart(t *testing.T) {
	t.Parallel()
	dir, ctx := t.TempDir(), context.Background()
	start := func() *batontest.Server { return startEmbedded(t, dir) }
	srv := start()
	c := srv.SNSClient()
	topic := mustCreateTopic(t, c, "durable-http")
	ep := newEndpoint(t)
	_, conf := subscribeHTTP(t, c, ep, topic, nil)
	confirmByURL(t, conf)
	ep.status.Store(500)
	pub, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("kept")})
	if err != nil {
		t.Fatal(err)
	}
	ep.waitHits(t, 2) // the first attempt failed
	srv.WaitForTimers(t, 8)
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}

	ep.status.Store(200)
	srv = start()
	defer srv.Close()
	srv.WaitForTimers(t, 8)
	srv.Clock().Advance(20 * time.Second)
	h := ep.waitHits(t, 3)
	if f := fields(t, h.body); f["Message"] != "kept" || f["MessageId"] != *pub.MessageId {
		t.Errorf("after the restart the endpoint got %s", h.body)
	}
	verifyBody(t, h.body, srv.URL()+"/"+certNameOf(t, h.body))
}

// startEmbedded starts a server on a fake clock over the embedded store in
// dir: called again on the same dir after Close, it is that server
// restarted.
func startEmbedded(t *testing.T, dir string) *batontest.Server {
	t.Helper()
	st, err := pebblestore.Open(context.Background(), dir, pebblestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := batontest.Start(batontest.WithStore(st), batontest.WithFakeClock(batontest.Epoch))
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	return srv
}

package server_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"

	"github.com/baton-sqs/baton/internal/testutil"
)

// TestMetricsSNSTopics: /metrics counts each topic's publishes and its
// copies by outcome: a batch entry is a publish, a subscribed queue that
// does not exist a failed copy, a filter policy that does not match a
// filtered one.
func TestMetricsSNSTopics(t *testing.T) {
	t.Parallel()
	srv := testutil.StartServer(t)
	c, ctx := srv.SNSClient(), context.Background()
	srv.MustCreateQueue(t, "m1", nil)
	srv.MustCreateQueue(t, "m2", nil)
	topic := mustCreateTopic(t, c, "metered")
	mustSubscribe(t, c, topic, snsQueueARN("m1"), nil)
	mustSubscribe(t, c, topic, snsQueueARN("m2"), map[string]string{"RawMessageDelivery": "true"})
	mustSubscribe(t, c, topic, snsQueueARN("never-made"), nil)
	srv.MustCreateQueue(t, "refunds", nil)
	mustSubscribe(t, c, topic, snsQueueARN("refunds"), map[string]string{"FilterPolicy": `{"kind":["refund"]}`})
	if _, err := c.Publish(ctx, &awssns.PublishInput{TopicArn: aws.String(topic), Message: aws.String("one")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PublishBatch(ctx, &awssns.PublishBatchInput{TopicArn: aws.String(topic), PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		{Id: aws.String("a"), Message: aws.String("two")}, {Id: aws.String("b"), Message: aws.String("three")}}}); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, srv.URL)
	labels := map[string]string{"account": testutil.Account, "topic": "metered", "region": "us-east-1"}
	for name, want := range map[string]float64{
		"baton_sns_publishes_total": 3, "baton_sns_deliveries_total": 6, "baton_sns_failed_total": 3, "baton_sns_filtered_total": 3,
	} {
		if got := value(t, fams, name, labels).GetCounter().GetValue(); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
